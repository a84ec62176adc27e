"""CupelNodePostprocessor: select retrieved nodes within a token budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from pydantic import ConfigDict, Field, PrivateAttr, Strict, field_validator, model_validator

from cupel import ContextBudget, Pipeline, SelectionReport
from cupel.counting import request_budget
from cupel.policy import Policy, resolve_pipeline
from cupel_llamaindex._common import (
    CupelFields,
    CupelSelectionEvent,
    built_report,
    check_int,
    dispatcher,
    refused,
    state_without_caches,
    tokenizer_field,
)
from cupel_llamaindex._nodes import nodes_to_items

__all__ = ["CupelNodePostprocessor"]

_OWNER = "CupelNodePostprocessor"


class CupelNodePostprocessor(CupelFields, BaseNodePostprocessor):
    """A node postprocessor that keeps the most relevant nodes that fit ``max_tokens``.

    Each node costs the tokens of ``node.get_content(metadata_mode=metadata_mode)`` — what a
    synthesizer sends to the LLM (``MetadataMode.LLM`` by default), nothing added — counted
    with ``token_counter`` (text -> int) if given, else with ``tokenizer_fn`` (LlamaIndex's
    cl100k tokenizer unless given, or any form :func:`~cupel.counting.text_counter`
    accepts). ``headroom`` keeps that share of ``max_tokens`` free (for a model whose
    tokenizer counts more than yours). The retriever score becomes cupel's relevance hint
    (``relevance``: see :func:`~cupel_llamaindex.nodes_to_items`). The ``policy`` (default:
    the ``rag`` preset — relevance-led, content deduplication, greedy fill, U-shaped
    placement) or an explicit ``pipeline`` decides; the nodes come back in placed order, the
    very same :class:`NodeWithScore` objects, unmodified.

    Deduplication (``rag``; ``deduplicate=True`` or ``False`` overrides the policy or
    pipeline) compares the node text alone (``dedup_on="text"``): the same passage
    retrieved from two files is kept once; ``dedup_on="content"`` compares what the LLM
    sees, metadata included. Fields are validated at assignment too.

    Placement (``rag``): the best node is **always first** and the second best always
    last, then third second, fourth second-to-last, ... — whatever the number of nodes.
    ``LongContextReorder`` puts the best node first only for an odd count and *last* for
    an even one.

    After each call :attr:`last_report` holds the :class:`~cupel.SelectionReport`, and a
    :class:`~cupel_llamaindex.CupelSelectionEvent` is dispatched through LlamaIndex
    instrumentation.

    >>> from llama_index.core.schema import TextNode
    >>> nodes = [NodeWithScore(node=TextNode(text=t), score=s)
    ...          for t, s in (("one two three", 0.2), ("four five", 0.9), ("six", 0.5))]
    >>> post = CupelNodePostprocessor(max_tokens=5, tokenizer_fn=str.split)
    >>> [n.node.get_content() for n in post.postprocess_nodes(nodes)]
    ['four five', 'six']
    >>> post.last_report.excluded[0].reason.name
    'BudgetExceeded'
    """

    max_tokens: int = Field(description="Token budget for the selected nodes (> 0).")
    target_tokens: int | None = Field(
        default=None, description="Soft target within max_tokens (default: max_tokens)."
    )
    policy: str | Policy = Field(
        default="rag", description="A cupel preset name or Policy (ignored with pipeline)."
    )
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.LLM, description="Which view of the node is counted."
    )
    relevance: Literal["auto", "score", "rank"] = Field(
        default="auto", description="How node scores become relevance hints."
    )
    deduplicate: Annotated[bool, Strict()] | None = Field(
        default=None,
        description="Deduplicate (True) or not (False) whatever the policy or pipeline says; "
        "None: as it says.",
    )
    dedup_on: Literal["text", "content"] = Field(
        default="text",
        description="Deduplicate on the node text alone ('text') or on what the LLM sees, "
        "metadata included ('content').",
    )
    tokenizer_fn: Any = tokenizer_field()
    token_counter: Callable[[str], int] | None = Field(
        default=None,
        exclude=True,
        description="Optional text -> token count (overrides tokenizer_fn).",
    )
    pipeline: Pipeline | None = Field(
        default=None, exclude=True, description="An explicit cupel Pipeline (overrides policy)."
    )
    headroom: float = Field(
        default=0.0,
        description="A share of max_tokens kept free (0 <= headroom < 1), e.g. 0.1.",
    )

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    _pipeline: Pipeline = PrivateAttr()
    _built_from: tuple[object, object, object] = PrivateAttr()
    _last_report: SelectionReport | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        """Fields are validated at assignment: a bad value raises here (not at query time)
        and leaves the field unchanged."""
        self._assign(name, value)

    def __getstate__(self) -> dict[str, Any]:
        return state_without_caches(self, CupelNodePostprocessor, ("_pipeline", "_built_from"))

    @classmethod
    def class_name(cls) -> str:
        """Serialization id."""
        return "CupelNodePostprocessor"

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _check_max(cls, value: Any) -> int:
        return check_int(_OWNER, "max_tokens", value, minimum=1)

    @field_validator("target_tokens", mode="before")
    @classmethod
    def _check_target(cls, value: Any) -> int | None:
        return None if value is None else check_int(_OWNER, "target_tokens", value, minimum=0)

    @field_validator("dedup_on", mode="before")
    @classmethod
    def _check_dedup_on(cls, value: Any) -> Any:
        if value not in ("text", "content"):
            raise refused(_OWNER, "dedup_on", "must be 'text' or 'content'", value)
        return value

    @field_validator("relevance", mode="before")
    @classmethod
    def _check_relevance(cls, value: Any) -> Any:
        if value not in ("auto", "score", "rank"):
            raise refused(_OWNER, "relevance", "must be one of 'auto', 'score', 'rank'", value)
        return value

    @model_validator(mode="after")
    def _build(self) -> CupelNodePostprocessor:
        self._budget()
        self._current_pipeline()
        return self

    # ------------------------------------------------------------------------------
    @property
    def last_report(self) -> SelectionReport | None:
        """The :class:`~cupel.SelectionReport` of the most recent call (``None`` before)."""
        return self._last_report

    def _budget(self) -> ContextBudget:
        target = self.max_tokens if self.target_tokens is None else self.target_tokens
        if target > self.max_tokens:
            rule = f"must be <= max_tokens ({self.max_tokens})"
            raise refused(_OWNER, "target_tokens", rule, target)
        # Nodes are billed as the text the model receives: nothing is reserved but headroom.
        return request_budget(self.max_tokens, target, headroom=self.headroom, fixed=0)

    def _current_pipeline(self) -> Pipeline:
        key = (self.policy, self.pipeline, self.deduplicate)
        built = getattr(self, "_built_from", None)
        if built is None or any(a is not b for a, b in zip(built, key, strict=True)):
            self._pipeline = resolve_pipeline(
                self.policy,
                owner=_OWNER,
                pipelines=False,
                pipeline=self.pipeline,
                deduplicate=self.deduplicate,
            )
            self._built_from = key
        return self._pipeline

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        budget = self._budget()
        mapping = nodes_to_items(
            nodes,
            tokenizer_fn=self.tokenizer_fn,
            token_counter=self.token_counter,
            metadata_mode=self.metadata_mode,
            relevance=self.relevance,
            dedup_on=self.dedup_on,
        )
        result = self._current_pipeline().dry_run(mapping.items, budget)
        report = built_report(_OWNER, result.report)
        selected = mapping.to_nodes(result.items)
        self._last_report = report
        dispatcher.event(
            CupelSelectionEvent(
                component=_OWNER,
                report=report,
                max_tokens=budget.max_tokens,
                target_tokens=budget.target_tokens,
                candidates=len(nodes),
                selected=len(selected),
                selected_tokens=result.total_tokens,
                query=None if query_bundle is None else query_bundle.query_str,
            )
        )
        return selected

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        # Selection is CPU-bound and fast: no thread hop.
        return self._postprocess_nodes(nodes, query_bundle)
