"""What every adapter shares: the budget, the pipeline (policy or explicit), the report
event, and the message selection itself (:class:`MessageSelection`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManager,
    BaseCallbackManager,
    CallbackManager,
    Callbacks,
)
from langchain_core.messages import BaseMessage

from cupel import (
    BaseScorer,
    ChronologicalPlacer,
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    DecayScorer,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    PinnedBudgetError,
    Pipeline,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    SelectionReport,
    TagScorer,
    UShapedPlacer,
)
from cupel.policy import Policy, PolicyError
from cupel_langchain._items import gc_paused
from cupel_langchain._messages import (
    MessageItems,
    MessagesInput,
    StartOn,
    _map_messages,
    add_filtered,
    as_messages,
    check_keep_last,
    check_kinds,
    check_start_on,
)
from cupel_langchain._tokens import CounterInput, MessageTokenCounter, resolve_message_counter

__all__ = [
    "REPORT_EVENT",
    "MessageSelection",
    "PolicyLike",
    "adispatch_report",
    "dispatch_report",
    "make_budget",
    "metadata_unread",
    "report_event_data",
    "resolve_pipeline",
]

PolicyLike = Policy | str
"""A :class:`~cupel.policy.Policy` or a preset name (``"chat"``, ``"rag"``, ...)."""

REPORT_EVENT = "cupel_selection"
"""The name of the LangChain custom event carrying a selection's report."""


def make_budget(max_tokens: int, target_tokens: int | None, output_reserve: int) -> ContextBudget:
    """The budget: ``target_tokens`` defaults to ``max_tokens``.

    >>> make_budget(1000, None, 100)
    ContextBudget(max_tokens=1000, target_tokens=1000, output_reserve=100, reserved_slots={}, \
estimation_safety_margin_percent=0.0)
    """
    return ContextBudget(
        max_tokens=max_tokens,
        target_tokens=max_tokens if target_tokens is None else target_tokens,
        output_reserve=output_reserve,
    )


def resolve_pipeline(
    policy: PolicyLike, pipeline: Pipeline | None, deduplicate: bool | None
) -> Pipeline:
    """The pipeline to run: ``pipeline`` when given, else one built from ``policy``;
    ``deduplicate`` (when not ``None``) overrides its deduplication setting."""
    if not isinstance(deduplicate, (bool, type(None))):
        raise ConfigurationError(
            f"deduplicate must be a bool, got {deduplicate!r}",
            field="deduplicate",
            value=deduplicate,
        )
    if pipeline is not None:
        if not isinstance(pipeline, Pipeline):
            raise ConfigurationError(
                f"pipeline must be a cupel.Pipeline, got {type(pipeline).__name__} {pipeline!r}",
                field="pipeline",
                value=pipeline,
            )
        if deduplicate is None or pipeline.deduplication == deduplicate:
            return pipeline
        return Pipeline(
            pipeline.scorer,
            pipeline.slicer,
            pipeline.placer,
            deduplication=deduplicate,
            overflow_strategy=pipeline.overflow_strategy,
            on_overflow=pipeline.on_overflow,
        )
    if not isinstance(policy, (Policy, str)):
        raise ConfigurationError(
            f"policy must be a cupel.policy.Policy or a preset name, got "
            f"{type(policy).__name__} {policy!r}",
            field="policy",
            value=policy,
        )
    if isinstance(policy, str):
        return _preset_pipeline(policy, deduplicate)
    if deduplicate is not None and policy.deduplication != deduplicate:
        policy = policy.model_copy(update={"deduplication": deduplicate})
    return policy.build()


@lru_cache(maxsize=64)
def _preset_pipeline(name: str, deduplicate: bool | None) -> Pipeline:
    """The pipeline of a preset (shared: pipelines are stateless between runs). An
    unknown name is a :class:`~cupel.policy.PolicyError` naming ``policy``."""
    from cupel.presets import PRESET_NAMES, preset

    try:
        policy = preset(name)
    except PolicyError:
        raise PolicyError(
            f"policy: unknown preset {name!r}; allowed: a cupel.policy.Policy or one of "
            f"{', '.join(PRESET_NAMES)}",
            field="policy",
            value=name,
        ) from None
    if deduplicate is not None and policy.deduplication != deduplicate:
        policy = policy.model_copy(update={"deduplication": deduplicate})
    return policy.build()


def report_event_data(
    component: str, report: SelectionReport, budget: ContextBudget
) -> dict[str, Any]:
    """The payload of the :data:`REPORT_EVENT` custom event: the report itself plus a
    JSON-friendly summary."""
    return {
        "component": component,
        "report": report,
        "included": len(report.included),
        "excluded": len(report.excluded),
        "included_tokens": report.included_tokens,
        "max_tokens": budget.max_tokens,
    }


def dispatch_report(callbacks: Callbacks, data: Mapping[str, Any]) -> None:
    """Send the report event to ``callbacks`` (a manager or handlers), if any listen."""
    manager = (
        callbacks
        if isinstance(callbacks, CallbackManager)
        else CallbackManager.configure(inheritable_callbacks=callbacks)
    )
    if manager.handlers:
        manager.on_custom_event(REPORT_EVENT, dict(data), run_id=manager.parent_run_id)


async def adispatch_report(callbacks: Callbacks, data: Mapping[str, Any]) -> None:
    """Async :func:`dispatch_report`."""
    if isinstance(callbacks, AsyncCallbackManager):
        manager = callbacks
    else:
        inherited = callbacks
        if isinstance(callbacks, BaseCallbackManager) and not isinstance(
            callbacks, AsyncCallbackManager
        ):
            inherited = callbacks.handlers
        manager = AsyncCallbackManager.configure(inheritable_callbacks=inherited)
    if manager.handlers:
        await manager.on_custom_event(REPORT_EVENT, dict(data), run_id=manager.parent_run_id)


_BLIND_SCORERS = frozenset(
    {
        CompositeScorer,
        ScaledScorer,
        RecencyScorer,
        PriorityScorer,
        KindScorer,
        TagScorer,
        FrequencyScorer,
        ReflexiveScorer,
        DecayScorer,
    }
)
_BLIND_SLICERS = frozenset({GreedySlice, KnapsackSlice})
_BLIND_PLACERS = frozenset({ChronologicalPlacer, UShapedPlacer})


def metadata_unread(pipeline: Pipeline) -> bool:
    """Whether running ``pipeline`` can never read an item's ``metadata``: its scorer
    tree, slicer and placer are all cupel's own components that look at other fields
    only (exact classes: a subclass could read anything; the metadata scorers are not
    among them), and no overflow callback receives the items. Every preset qualifies.

    A message selection that builds no report then skips building each item's metadata:
    its items never leave the selection, so nothing could tell (``MessageItems`` maps
    back by identity).

    >>> from cupel import MetadataKeyScorer
    >>> metadata_unread(resolve_pipeline("chat", None, None))
    True
    >>> metadata_unread(Pipeline(MetadataKeyScorer("langchain.type", "human", 2.0)))
    False
    """
    if (
        pipeline.on_overflow is not None
        or type(pipeline.slicer) not in _BLIND_SLICERS
        or type(pipeline.placer) not in _BLIND_PLACERS
    ):
        return False
    pending: list[object] = [pipeline.scorer]
    while pending:
        scorer = pending.pop()
        if type(scorer) not in _BLIND_SCORERS:
            return False
        pending.extend(cast(BaseScorer, scorer).children())
    return True


class MessageSelection:
    """A validated message-selection configuration; :meth:`select` runs it.

    Shared by :func:`~cupel_langchain.select_messages`, the Runnable and the agent
    middleware. Everything is checked here, once.
    """

    __slots__ = (
        "budget",
        "count",
        "keep_last",
        "keep_system",
        "kinds",
        "metadata_unread",
        "pipeline",
        "start_on",
        "timestamp_key",
    )

    def __init__(
        self,
        *,
        max_tokens: int,
        target_tokens: int | None = None,
        output_reserve: int = 0,
        policy: PolicyLike = "chat",
        pipeline: Pipeline | None = None,
        token_counter: MessageTokenCounter = "approximate",
        token_counter_input: CounterInput | str = "auto",
        keep_system: bool = True,
        keep_last: int = 1,
        start_on: StartOn = None,
        deduplicate: bool = False,
        kinds: Mapping[str, str] | None = None,
        timestamp_key: str | None = None,
    ) -> None:
        self.budget = make_budget(max_tokens, target_tokens, output_reserve)
        self.pipeline = resolve_pipeline(policy, pipeline, deduplicate)
        self.metadata_unread = metadata_unread(self.pipeline)
        self.count = resolve_message_counter(token_counter, token_counter_input)
        if not isinstance(keep_system, bool):
            raise ConfigurationError(
                f"keep_system must be a bool, got {keep_system!r}",
                field="keep_system",
                value=keep_system,
            )
        self.keep_system = keep_system
        self.keep_last = check_keep_last(keep_last)
        self.start_on = check_start_on(start_on)
        self.kinds = check_kinds(kinds)
        if timestamp_key is not None and not (isinstance(timestamp_key, str) and timestamp_key):
            raise ConfigurationError(
                f"timestamp_key must be a non-empty string or None, got {timestamp_key!r}",
                field="timestamp_key",
                value=timestamp_key,
            )
        self.timestamp_key = timestamp_key

    def map(self, messages: MessagesInput, *, with_metadata: bool = True) -> MessageItems:
        """Map ``messages`` to items with this configuration."""
        return _map_messages(
            as_messages(messages),
            self.count,
            keep_system=self.keep_system,
            keep_last=self.keep_last,
            kinds=self.kinds,
            timestamp_key=self.timestamp_key,
            with_metadata=with_metadata,
        )

    def select(
        self, messages: MessagesInput, *, with_report: bool
    ) -> tuple[list[BaseMessage], SelectionReport | None]:
        """The selected messages (same objects, conversation order) and, when asked, the
        report including the adapter's own ``Filtered`` decisions."""
        with gc_paused():
            return self._select(messages, with_report)

    def _select(
        self, messages: MessagesInput, with_report: bool
    ) -> tuple[list[BaseMessage], SelectionReport | None]:
        mapping = self.map(messages, with_metadata=with_report or not self.metadata_unread)
        items = mapping.items
        budget = self.budget
        self._check_pinned(mapping, budget)
        if with_report:
            result = self.pipeline.dry_run(items, budget)
        else:
            result = self.pipeline.run(items, budget)
        positions = mapping.unit_positions(result.items)
        dropped: list[tuple[ContextItem, str]] = []
        if self.start_on:
            positions = self._apply_start_on(mapping, positions, dropped)
        selected = mapping.messages_at(positions)
        report = result.report
        if report is not None:
            report = add_filtered(report, dropped=dropped, upfront=mapping.invalid)
        return selected, report

    def _apply_start_on(
        self, mapping: MessageItems, positions: list[int], dropped: list[tuple[ContextItem, str]]
    ) -> list[int]:
        allowed = self.start_on
        name = "start_on:" + "|".join(allowed)
        kept: list[int] = []
        started = False
        for position in positions:
            kind = mapping.first_message(position).type
            if started or kind == "system":
                kept.append(position)
            elif kind in allowed:
                started = True
                kept.append(position)
            else:
                dropped.append((mapping.items[position], name))
        return kept

    def _check_pinned(self, mapping: MessageItems, budget: ContextBudget) -> None:
        system = latest = 0
        for position in mapping.pinned:
            tokens = mapping.items[position].tokens
            if self.keep_system and mapping.first_message(position).type == "system":
                system += tokens
            else:
                latest += tokens
        pinned = system + latest
        available = budget.max_tokens - budget.output_reserve
        if pinned > available:
            error = PinnedBudgetError(pinned, available)
            error.args = (
                f"The messages that are always kept need {pinned} tokens (system messages: "
                f"{system}, the latest {self.keep_last} unit(s) kept by keep_last: {latest}), "
                f"but the budget allows {available} (max_tokens - output_reserve); raise "
                f"max_tokens, shorten them, or pass keep_system=False / keep_last=0",
            )
            raise error
