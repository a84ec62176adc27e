"""What every adapter shares: the budget, the pipeline (policy or explicit), the report
event, and the message selection itself (:class:`MessageSelection`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    BaseCallbackManager,
    CallbackManager,
    Callbacks,
)
from langchain_core.messages import BaseMessage

from cupel import (
    ConfigurationError,
    ContextBudget,
    Pipeline,
    SelectionReport,
)
from cupel.conversation import PinnedOptions, reads_unit_metadata
from cupel.policy import Policy, PolicyError
from cupel_langchain._messages import (
    MessageItems,
    MessagesInput,
    StartOn,
    as_messages,
    check_keep_last,
    check_kinds,
    check_start_on,
    map_messages,
    start_on_roles,
)
from cupel_langchain._tokens import CounterInput, MessageTokenCounter, resolve_message_counter

__all__ = [
    "MIDDLEWARE_OPTIONS",
    "REPORT_EVENT",
    "SELECTOR_OPTIONS",
    "MessageSelection",
    "PolicyLike",
    "adispatch_report",
    "dispatch_report",
    "make_budget",
    "report_event_data",
    "resolve_pipeline",
]

PolicyLike = Policy | str
"""A :class:`~cupel.policy.Policy` or a preset name (``"chat"``, ``"rag"``, ...)."""

REPORT_EVENT = "cupel_selection"
"""The name of the LangChain custom event carrying a selection's report."""

SELECTOR_OPTIONS = PinnedOptions(
    system="keep_system=False", latest_user="keep_last_human=False", last="keep_last=0"
)
"""The pinning options of ``select_messages`` and ``CupelMessageSelector``."""
MIDDLEWARE_OPTIONS = PinnedOptions(
    system=None, latest_user="keep_last_human=False", last="keep_last=0"
)
"""The pinning options of ``CupelContextMiddleware`` (its system prompt is always kept)."""


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


class MessageSelection:
    """A validated message-selection configuration; :meth:`select` runs it.

    Shared by :func:`~cupel_langchain.select_messages`, the Runnable and the agent
    middleware. Everything is checked here, once. ``options`` names the pinning options
    the owning component offers (for the error raised when pinned messages alone exceed
    the budget).
    """

    __slots__ = (
        "budget",
        "count",
        "keep_last",
        "keep_last_human",
        "keep_system",
        "kinds",
        "options",
        "pipeline",
        "reads_metadata",
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
        keep_last_human: bool = True,
        keep_last: int = 0,
        start_on: StartOn = None,
        deduplicate: bool = False,
        kinds: Mapping[str, str] | None = None,
        timestamp_key: str | None = None,
        options: PinnedOptions = SELECTOR_OPTIONS,
    ) -> None:
        self.budget = make_budget(max_tokens, target_tokens, output_reserve)
        self.pipeline = resolve_pipeline(policy, pipeline, deduplicate)
        self.reads_metadata = reads_unit_metadata(self.pipeline)
        self.count = resolve_message_counter(token_counter, token_counter_input)
        for name, flag in (("keep_system", keep_system), ("keep_last_human", keep_last_human)):
            if not isinstance(flag, bool):
                raise ConfigurationError(
                    f"{name} must be a bool, got {flag!r}", field=name, value=flag
                )
        self.keep_system = keep_system
        self.keep_last_human = keep_last_human
        self.keep_last = check_keep_last(keep_last)
        self.start_on = start_on_roles(check_start_on(start_on))
        self.kinds = check_kinds(kinds)
        if timestamp_key is not None and not (isinstance(timestamp_key, str) and timestamp_key):
            raise ConfigurationError(
                f"timestamp_key must be a non-empty string or None, got {timestamp_key!r}",
                field="timestamp_key",
                value=timestamp_key,
            )
        self.timestamp_key = timestamp_key
        self.options = options

    def map(self, messages: MessagesInput, *, with_metadata: bool = True) -> MessageItems:
        """Map ``messages`` to items with this configuration."""
        return map_messages(
            as_messages(messages),
            self.count,
            keep_system=self.keep_system,
            keep_last_human=self.keep_last_human,
            keep_last=self.keep_last,
            kinds=self.kinds,
            timestamp_key=self.timestamp_key,
            with_metadata=with_metadata,
        )

    def select(
        self, messages: MessagesInput, *, with_report: bool
    ) -> tuple[list[BaseMessage], SelectionReport | None]:
        """The selected messages (same objects, conversation order) and, when asked, the
        report (invalid units as ``InvalidToolCall``, ``start_on`` drops as ``Filtered``)."""
        # Without a report the items never leave the selection: a pipeline that reads no
        # metadata needs none of the per-message kind (a property test checks both agree).
        mapping = self.map(messages, with_metadata=with_report or self.reads_metadata)
        window = mapping.history.select(
            self.pipeline,
            self.budget,
            with_report=with_report,
            start_on=self.start_on,
            options=self.options,
        )
        listed = mapping.messages
        return [listed[i] for i in window.messages], window.report
