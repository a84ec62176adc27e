"""What the LangChain components share: the budget, the pipeline (policy or explicit), their
settings caches, and the message selection itself (:class:`MessageSelection`); the report's
event and latest-report bookkeeping are in :mod:`cupel_langchain._reports`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from cupel import (
    ConfigurationError,
    ContextBudget,
    Pipeline,
    SelectionReport,
)
from cupel.conversation import (
    HistoryWindow,
    PinnedOptions,
    cache_stable_pipeline,
    check_cache_stable,
)
from cupel.counting import REPLY_TOKENS, Calibration, check_headroom, request_budget
from cupel.policy import Policy, PolicyError
from cupel_langchain._messages import MessageItems, MessagesInput, as_messages, map_messages
from cupel_langchain._options import (
    DEFAULTS,
    MaxTokens,
    PolicyLike,
    check_keep_last,
    check_kinds,
    check_max_tokens,
    check_start_on,
    start_on_roles,
)
from cupel_langchain._oversized import PARTS
from cupel_langchain._tokens import resolve_message_counter

__all__ = [
    "MIDDLEWARE_OPTIONS",
    "SELECTOR_OPTIONS",
    "MessageSelection",
    "SelectionCache",
    "SettingsCache",
    "model_input_tokens",
    "reserved_label",
    "resolve_max_tokens",
    "resolve_pipeline",
    "settings_key",
]


SELECTOR_OPTIONS = PinnedOptions(
    system="keep_system=False", latest_user="keep_last_human=False", last="keep_last=0"
)
"""The pinning options of ``select_messages`` and ``CupelMessageSelector``."""
MIDDLEWARE_OPTIONS = PinnedOptions(
    system=None, latest_user="keep_last_human=False", last="keep_last=0"
)
"""The pinning options of ``CupelContextMiddleware`` (its system prompt is always kept)."""


def model_input_tokens(model: object) -> int | None:
    """``model.profile["max_input_tokens"]`` when the model's profile knows it."""
    profile = getattr(model, "profile", None)
    if not isinstance(profile, Mapping):
        return None
    tokens = profile.get("max_input_tokens")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens <= 0:
        return None
    return tokens


def resolve_max_tokens(max_tokens: MaxTokens, model: object, where: str) -> int:
    """The budget in tokens: ``max_tokens`` itself, or its fraction of ``model``'s input
    window. ``where`` says which model is read (for the error)."""
    if isinstance(max_tokens, int):
        return max_tokens
    fraction = max_tokens[1]
    window = model_input_tokens(model)
    if window is None:
        raise ConfigurationError(
            f"max_tokens=('fraction', {fraction}) needs a chat model whose profile knows "
            f"its input window (profile={{'max_input_tokens': ...}}); {where} is "
            f"{type(model).__name__}, whose profile does not",
            field="max_tokens",
            value=max_tokens,
        )
    return max(1, math.floor(window * fraction))


_SCALARS = (int, float, str, bool, type(None))
_T = TypeVar("_T")


class SettingsCache(Generic[_T]):
    """What a component built from its current settings, rebuilt when one changes.

    Components read their settings on every call (so ``model_copy(update=...)``,
    attribute assignment and ``configurable_fields`` take effect); comparing the settings
    with the ones the cached value was built from is cheap. Scalars compare by value,
    everything else (a policy, a pipeline, a counter) by identity. Copies and pickles
    start empty.
    """

    __slots__ = ("_settings", "_value")

    def __init__(self) -> None:
        self._settings: tuple[object, ...] | None = None
        self._value: _T | None = None

    def __reduce__(self) -> tuple[type[SettingsCache[Any]], tuple[()]]:
        return (type(self), ())

    def get(self, settings: tuple[object, ...], build: Callable[[], _T]) -> _T:
        """The value for ``settings``: the cached one if they are unchanged."""
        known = self._settings
        value = self._value
        if value is not None and known is not None and _same(known, settings):
            return value
        value = build()
        self._settings, self._value = settings, value
        return value


class SelectionCache:
    """The latest few :class:`MessageSelection` s the plain functions built, by their
    settings (compared as :class:`SettingsCache` does: scalars, dicts and lists by value,
    objects by identity), so a call with the settings of a recent one skips the checks
    and the pipeline build. Thread-safe: the list is replaced, never edited."""

    __slots__ = ("_entries", "_scalars", "maxsize")

    def __init__(self, maxsize: int = 16) -> None:
        self.maxsize = maxsize
        self._entries: list[tuple[tuple[object, ...], MessageSelection]] = []
        self._scalars: dict[frozenset[tuple[str, type, object]], MessageSelection] = {}

    def get(self, settings: Mapping[str, object]) -> MessageSelection:
        """The selection for ``settings`` (option name -> value)."""
        if all(type(value) in _SCALARS for value in settings.values()):
            # scalars only (the common case): one dict lookup
            # (types too: 1, 1.0 and True are equal keys but not equal settings)
            quick = frozenset((name, type(value), value) for name, value in settings.items())
            found = self._scalars.get(quick)
            if found is None:
                found = MessageSelection(settings)
                if len(self._scalars) >= self.maxsize:
                    self._scalars = {}
                self._scalars = {**self._scalars, quick: found}
            return found
        key = tuple((name, settings_value(value)) for name, value in sorted(settings.items()))
        entries = self._entries
        for index, (known, selection) in enumerate(entries):
            if _same(known, key):
                if index:
                    self._entries = [entries[index], *entries[:index], *entries[index + 1 :]]
                return selection
        selection = MessageSelection(settings)
        self._entries = [(key, selection), *entries[: self.maxsize - 1]]
        return selection


def _same(known: tuple[object, ...], settings: tuple[object, ...]) -> bool:
    if len(known) != len(settings):
        return False
    for a, b in zip(known, settings, strict=True):
        if a is b:
            continue
        if type(a) is not type(b):
            return False
        if type(a) in _SCALARS:
            if a != b:
                return False
        elif type(a) is tuple:
            if not _same(a, b):  # type: ignore[arg-type]
                return False
        else:
            return False
    return True


def settings_key(values: Mapping[str, object], names: Sequence[str]) -> tuple[object, ...]:
    """The values of ``names`` as :class:`SettingsCache` compares them."""
    return tuple(settings_value(values[name]) for name in names)


def settings_value(value: object) -> object:
    """A setting as :class:`SettingsCache` compares it: dicts and lists become tuples
    (compared by value, so an edited ``kinds`` dict is noticed)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), settings_value(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(settings_value(v) for v in value)
    return value


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


def observed(
    messages: Sequence[BaseMessage],
    counts: Sequence[int],
    fixed: int,
    reporting: Sequence[int],
) -> list[Calibration]:
    """The calibration at every ``AIMessage`` (after the first message) whose
    ``usage_metadata`` reports the provider's input tokens: those against cupel's count of
    the messages before it (``counts``: each message's tokens, as a running total), the
    reply and ``fixed`` (tool definitions), in history order. Each is a function of the
    history up to that message alone. ``reporting``: the indices of the ``AIMessage`` s
    carrying usage (``MessageItems.reporting``, noted while the history is read).

    >>> from langchain_core.messages import HumanMessage
    >>> usage = {"input_tokens": 30, "output_tokens": 5, "total_tokens": 35}
    >>> history = [HumanMessage("Hi"), AIMessage("Hello!", usage_metadata=usage)]
    >>> observed(history, [17, 10], 0, [1])
    [Calibration(reported=30, counted=20, messages=1)]
    """
    if not reporting:
        return []
    totals = [0, *accumulate(counts)]
    out: list[Calibration] = []
    for index in reporting:
        message = messages[index]
        if not index or not isinstance(message, AIMessage):
            continue
        usage = message.usage_metadata
        reported = usage.get("input_tokens") if usage else None
        if isinstance(reported, int) and not isinstance(reported, bool) and reported > 0:
            out.append(Calibration(reported, totals[index] + REPLY_TOKENS + fixed, index))
    return out


def calibrated(
    budget: ContextBudget, calibrations: Sequence[Calibration]
) -> tuple[ContextBudget, list[tuple[int, ContextBudget]]]:
    """The budget of the current call and the budgets of the earlier requests, for
    :meth:`~cupel.conversation.HistoryItems.select`'s ``earlier``: each calibration applies
    from its ``AIMessage`` on (until the next one), the newest to this call — so the cut a
    cache-stable window had at an earlier request is replayed with the budget that request
    had, and never moves. Only the messages where the budget changes are listed.

    >>> from cupel.counting import Calibration
    >>> base = ContextBudget(max_tokens=1000, target_tokens=1000)
    >>> now, earlier = calibrated(base, [Calibration(1250, 1000, 4), Calibration(900, 1000, 8)])
    >>> now == base, [(index, b.output_reserve) for index, b in earlier]
    (True, [(4, 0), (8, 200)])
    """
    current = budget
    earlier: list[tuple[int, ContextBudget]] = []
    for calibration in calibrations:
        following = calibration.budget(budget)
        if following != current:
            earlier.append((calibration.messages, current))
            current = following
    return current, earlier


def reserved_label(max_tokens: int, output_reserve: int, headroom: float) -> str:
    """How the room for the history follows from the settings, for the error raised
    when the pinned messages alone exceed it: ``max_tokens`` less ``output_reserve``,
    the reply's :data:`~cupel.counting.REPLY_TOKENS` and the headroom's share.

    >>> reserved_label(1000, 100, 0.1)
    'max_tokens 1000 - output_reserve 100 - 3 for the reply - 100 of headroom'
    """
    parts = [f"max_tokens {max_tokens}"]
    if output_reserve:
        parts.append(f"output_reserve {output_reserve}")
    parts.append(f"{REPLY_TOKENS} for the reply")
    if headroom:
        parts.append(f"{math.ceil(headroom * max_tokens)} of headroom")
    return " - ".join(parts)


class MessageSelection:
    """A validated message-selection configuration; :meth:`select` runs it.

    Shared by :func:`~cupel_langchain.select_messages`, the Runnable and the agent
    middleware, built from ``settings`` (option name -> value, as
    :class:`~cupel_langchain._options.SelectionOptions` declares them; missing ones take
    their :data:`~cupel_langchain._options.DEFAULTS`). Everything is checked here, once.
    ``options`` names the pinning options
    the owning component offers (for the error raised when pinned messages alone exceed
    the budget). ``max_tokens`` may be ``("fraction", f)`` of ``model``'s input window
    (default: the ``token_counter`` chat model's). ``cache_stable`` (``True`` or a
    low-water mark) makes the pipeline's recency window refill to that mark on overflow
    (:func:`cupel.conversation.cache_stable_pipeline`), which replays the window's cut
    from the history: a selection keeps nothing between calls.
    """

    __slots__ = (
        "budget",
        "budget_label",
        "cache_stable",
        "count",
        "count_text",
        "headroom",
        "keep_last",
        "keep_last_human",
        "keep_system",
        "kinds",
        "options",
        "pipeline",
        "start_on",
        "timestamp_key",
        "truncate_oversized",
    )

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        options: PinnedOptions = SELECTOR_OPTIONS,
        model: object = None,
    ) -> None:
        def get(name: str) -> Any:
            return settings[name] if name in settings else DEFAULTS[name]

        token_counter = get("token_counter")
        # A fractional budget reads the input window of ``model`` (the agent's model in the
        # middleware), else of ``token_counter`` when it is a chat model.
        tokens = resolve_max_tokens(
            check_max_tokens(settings["max_tokens"]),
            token_counter if model is None else model,
            "token_counter" if model is None else "the agent's model",
        )
        self.headroom = check_headroom(get("headroom"))
        self.budget = request_budget(
            tokens, get("target_tokens"), get("output_reserve"), headroom=self.headroom
        )
        self.budget_label = reserved_label(tokens, get("output_reserve"), self.headroom)
        low_water = check_cache_stable(get("cache_stable"), "cache_stable")
        self.cache_stable = low_water is not None
        self.pipeline = cache_stable_pipeline(
            resolve_pipeline(get("policy"), get("pipeline"), get("deduplicate")), low_water
        )
        self.count = resolve_message_counter(
            token_counter, get("token_counter_input"), get("image_tokens")
        )
        self.count_text = self.count.text
        for name in ("keep_system", "keep_last_human", "truncate_oversized"):
            if not isinstance(get(name), bool):
                raise ConfigurationError(
                    f"{name} must be a bool, got {get(name)!r}", field=name, value=get(name)
                )
        self.keep_system: bool = get("keep_system")
        self.keep_last_human: bool = get("keep_last_human")
        self.truncate_oversized: bool = get("truncate_oversized")
        self.keep_last = check_keep_last(get("keep_last"))
        self.start_on = start_on_roles(check_start_on(get("start_on")))
        self.kinds = check_kinds(get("kinds"))
        timestamp_key = get("timestamp_key")
        if timestamp_key is not None and not (isinstance(timestamp_key, str) and timestamp_key):
            raise ConfigurationError(
                f"timestamp_key must be a non-empty string or None, got {timestamp_key!r}",
                field="timestamp_key",
                value=timestamp_key,
            )
        self.timestamp_key: str | None = timestamp_key
        self.options = replace(options, budget=self.budget_label)

    def map(self, messages: MessagesInput) -> MessageItems:
        """Map ``messages`` to items with this configuration."""
        return self._map(as_messages(messages))

    def _map(
        self, listed: list[BaseMessage], notes: Mapping[int, Mapping[str, Any]] | None = None
    ) -> MessageItems:
        return map_messages(
            listed,
            self.count,
            keep_system=self.keep_system,
            keep_last_human=self.keep_last_human,
            keep_last=self.keep_last,
            kinds=self.kinds,
            timestamp_key=self.timestamp_key,
            notes=notes,
        )

    def _fitted(self, mapping: MessageItems, budget: ContextBudget) -> MessageItems:
        """``mapping``, or with ``truncate_oversized`` the mapping of the messages with
        cut copies of the units too large for any window (:mod:`cupel_langchain._oversized`)."""
        fitted = mapping.history.fitted(
            mapping.messages, budget, self.count, self.count_text, PARTS
        )
        if fitted is None:
            return mapping
        listed, cuts = fitted
        return self._map(listed, {i: {"cupel:cut_tokens": n} for i, n in cuts.items()})

    def select(
        self, messages: MessagesInput, *, with_report: bool
    ) -> tuple[list[BaseMessage], SelectionReport | None]:
        """The selected messages (same objects, conversation order) and, when asked, the
        report (invalid units as ``InvalidToolCall``, ``start_on`` drops as ``Filtered``)."""
        listed, window = self.select_window(messages, with_report=with_report)
        return [listed[i] for i in window.messages], window.report

    def select_window(
        self,
        messages: MessagesInput,
        *,
        with_report: bool,
        fixed: int = 0,
    ) -> tuple[Sequence[BaseMessage], HistoryWindow]:
        """The messages as read and the :class:`~cupel.conversation.HistoryWindow`
        selected from them (a cache-stable window's cut replayed from the messages
        themselves). ``fixed``: tokens every request sends besides the history and the
        reply (the tool definitions), reserved from the budget. The provider's reported
        usage calibrates the budget (:func:`observed`, :func:`calibrated`); the report's
        ``Calibrate`` event says how for this call."""
        mapping = self._map(as_messages(messages))
        budget = self.budget
        options = self.options
        if fixed:
            budget = budget.model_copy(
                update={"output_reserve": min(budget.max_tokens, budget.output_reserve + fixed)}
            )
            options = replace(
                options, budget=f"{self.budget_label} - {fixed} for the tool definitions"
            )
        calibrations = (
            None
            if mapping.counts is None
            else observed(mapping.messages, mapping.counts, fixed, mapping.reporting)
        )
        earlier: list[tuple[int, ContextBudget]] = []
        before = budget
        if calibrations:
            budget, earlier = calibrated(budget, calibrations)
        if self.truncate_oversized:
            mapping = self._fitted(mapping, budget)
        window = mapping.history.select(
            self.pipeline,
            budget,
            with_report=with_report,
            start_on=self.start_on,
            options=options,
            earlier=earlier,
        )
        if calibrations and window.report is not None and calibrations[-1].corrects:
            event = calibrations[-1].event(before, budget)
            window.report = replace(window.report, events=(event, *window.report.events))
        return mapping.messages, window
