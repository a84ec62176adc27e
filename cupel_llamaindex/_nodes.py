"""LlamaIndex nodes ⇄ cupel items (:func:`nodes_to_items`): one ``Document`` item per
:class:`~llama_index.core.schema.NodeWithScore`; mapping back returns the very same nodes."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from llama_index.core.schema import MetadataMode, NodeWithScore

from cupel import ConfigurationError, ContextItem, ContextKind, ContextSource, ItemError
from cupel.counting import text_counter
from cupel_llamaindex._reading import checked_count

__all__ = ["NODE_ID_KEY", "DedupOn", "NodeMapping", "Relevance", "nodes_to_items"]

Relevance = Literal["auto", "score", "rank"]
"""How a node's ``future_relevance_hint`` is derived (see :func:`nodes_to_items`)."""
DedupOn = Literal["text", "content"]
"""What an item's content (compared by deduplication) holds: the node's ``"text"`` alone,
or the ``"content"`` the LLM sees (text plus metadata, per ``metadata_mode``)."""

NODE_ID_KEY = "llamaindex_node_id"
"""Item metadata key holding the node id (the node's own metadata is copied alongside)."""


@dataclass(frozen=True)
class NodeMapping:
    """Items built from nodes, position for position, and the way back.

    ``items[i]`` stands for ``nodes[i]``; :meth:`to_nodes` maps selected items back to the
    same :class:`NodeWithScore` objects by identity.
    """

    nodes: tuple[NodeWithScore, ...]
    items: tuple[ContextItem, ...]

    def to_nodes(self, items: Iterable[ContextItem]) -> list[NodeWithScore]:
        """The nodes behind ``items``, in the order given.

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        position = {id(item): i for i, item in enumerate(self.items)}
        out: list[NodeWithScore] = []
        for item in items:
            index = position.get(id(item))
            if index is None:
                raise ConfigurationError(
                    f"item {item.content[:60]!r} was not built by this mapping",
                    field="items",
                    value=item,
                )
            out.append(self.nodes[index])
        return out


def nodes_to_items(
    nodes: Sequence[NodeWithScore],
    *,
    tokenizer_fn: object = None,
    token_counter: Callable[[str], int] | None = None,
    metadata_mode: MetadataMode = MetadataMode.LLM,
    relevance: Relevance = "auto",
    dedup_on: DedupOn = "text",
) -> NodeMapping:
    """Map nodes to ``Document`` items (source ``Rag``).

    * ``tokens``: counted on ``node.get_content(metadata_mode=metadata_mode)`` — what the
      LLM sees, billed as text with nothing added — with ``token_counter(text)`` if
      given, else ``tokenizer_fn`` (any form :func:`~cupel.counting.text_counter`
      accepts: LlamaIndex's list-returning tokenizers, a tiktoken encoding, ...).
    * ``content`` (what deduplication compares): with ``dedup_on="text"`` (default) the
      node's text alone, so the same passage from two files is one passage; with
      ``"content"`` the text the LLM sees (metadata included). A node with empty content
      becomes a 0-token item whose content is a placeholder naming its id.
    * ``metadata``: a copy of the node's metadata plus ``"llamaindex_node_id"``.
    * ``future_relevance_hint`` from ``relevance``:

      - ``"score"``: the node's score as it is (a missing score → the rank rule below);
      - ``"rank"``: ignore scores; the input order is the ranking, ``1 - i / n``;
      - ``"auto"`` (default): like ``"score"`` when every present score lies in [0, 1];
        otherwise (BM25, logits, distances...) the present scores are min-max scaled to
        [0, 1] over this batch, keeping their order. Missing scores (``None``) use the
        rank rule ``1 - i / n`` in every mode.

    >>> from llama_index.core.schema import TextNode
    >>> nodes = [NodeWithScore(node=TextNode(text="alpha beta", id_="a"), score=0.25),
    ...          NodeWithScore(node=TextNode(text="gamma", id_="b"), score=None)]
    >>> mapping = nodes_to_items(nodes, tokenizer_fn=str.split)
    >>> [(i.tokens, i.future_relevance_hint, i.metadata["llamaindex_node_id"])
    ...  for i in mapping.items]
    [(2, 0.25, 'a'), (1, 0.5, 'b')]
    >>> mapping.to_nodes(reversed(mapping.items))[0] is nodes[1]
    True
    """
    if dedup_on not in ("text", "content"):
        raise ConfigurationError(
            f"dedup_on must be 'text' or 'content', got {dedup_on!r}",
            field="dedup_on",
            value=dedup_on,
        )
    if relevance not in ("auto", "score", "rank"):
        raise ConfigurationError(
            f"relevance must be one of 'auto', 'score', 'rank', got {relevance!r}",
            field="relevance",
            value=relevance,
        )
    if tokenizer_fn is None and token_counter is None:
        raise ConfigurationError(
            "nodes_to_items needs tokenizer_fn or token_counter, got neither",
            field="tokenizer_fn",
            value=None,
        )
    count: Callable[[str], object] = (
        token_counter if token_counter is not None else text_counter(tokenizer_fn, "tokenizer_fn")
    )
    nodes = tuple(nodes)
    hints = _relevance_hints(nodes, relevance)
    items: list[ContextItem] = []
    for index, (node, hint) in enumerate(zip(nodes, hints, strict=True)):
        if not isinstance(node, NodeWithScore):
            raise ConfigurationError(
                f"nodes[{index}] must be a NodeWithScore, got {type(node).__name__}",
                field=f"nodes[{index}]",
                value=node,
            )
        text = node.node.get_content(metadata_mode=metadata_mode)
        node_id = node.node.node_id
        metadata = dict(node.node.metadata)
        metadata[NODE_ID_KEY] = node_id
        shown = text if dedup_on == "content" else node.node.get_content(MetadataMode.NONE)
        if not text:
            content, tokens = f"<empty node {node_id}>", 0
        else:
            content, tokens = shown, checked_count(count(text), index, "token_counter")
        if not content:
            content = f"<node {node_id} without text>"
        items.append(
            ContextItem(
                content=content,
                tokens=tokens,
                kind=ContextKind.DOCUMENT,
                source=ContextSource.RAG,
                metadata=metadata,
                future_relevance_hint=hint,
            )
        )
    return NodeMapping(nodes, tuple(items))


def _relevance_hints(nodes: Sequence[NodeWithScore], relevance: Relevance) -> list[float]:
    n = len(nodes)
    ranks = [1.0 - i / n for i in range(n)]
    if relevance == "rank":
        return ranks
    scores = [
        _score(node.score, index) if isinstance(node, NodeWithScore) else None
        for index, node in enumerate(nodes)
    ]
    present = [s for s in scores if s is not None]
    low = min(present, default=0.0)
    high = max(present, default=1.0)
    if relevance == "score" or (low >= 0.0 and high <= 1.0):
        return [rank if s is None else s for s, rank in zip(scores, ranks, strict=True)]
    span = high - low
    return [
        rank if s is None else (1.0 if span == 0.0 else (s - low) / span)
        for s, rank in zip(scores, ranks, strict=True)
    ]


def _score(score: object, index: int) -> float | None:
    """A node's score as a finite float (``None``: no score); NaN, infinities and numbers
    too large for a float are refused, as the LangChain adapter refuses them."""
    if score is None:
        return None
    try:
        value = float(score)  # type: ignore[arg-type]
    except (OverflowError, TypeError, ValueError):
        value = math.nan
    if isinstance(score, bool) or not math.isfinite(value):
        raise ItemError(
            f"nodes[{index}].score must be a finite number or None (the retriever's "
            f"relevance score), got {score!r:.40}",
            field=f"nodes[{index}].score",
            value=score,
        )
    return value
