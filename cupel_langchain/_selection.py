"""What the LangChain components share: the budget, the pipeline (policy or explicit), the
selections shared by settings of equal content (:func:`shared`), and the message selection
itself (:class:`MessageSelection`); the report's event and latest-report bookkeeping are in
:mod:`cupel_langchain._reports`."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from copy import copy
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import accumulate
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from cupel import (
    ConfigurationError,
    ContextBudget,
    SelectionReport,
)
from cupel.conversation import (
    HistoryWindow,
    PinnedOptions,
    cache_stable_pipeline,
    check_cache_stable,
)
from cupel.counting import REPLY_TOKENS, Calibration, check_headroom, request_budget
from cupel.policy import resolve_pipeline
from cupel_langchain._embeddings import embedder_of
from cupel_langchain._messages import MessageItems, MessagesInput, as_messages, map_messages
from cupel_langchain._options import (
    DEFAULTS,
    ROLE_BY_TYPE,
    MaxTokens,
    check_keep_last,
    check_kinds,
    check_max_tokens,
    check_name,
    check_start_on,
    refused,
)
from cupel_langchain._oversized import PARTS
from cupel_langchain._reports import ReportEventData, report_event_data
from cupel_langchain._stable import mark_cache_breakpoint
from cupel_langchain._tokens import resolve_message_counter

__all__ = [
    "MIDDLEWARE_OPTIONS",
    "SELECTOR_OPTIONS",
    "MessageSelection",
    "build_selection",
    "content_key",
    "model_input_tokens",
    "reserved_label",
    "resolve_max_tokens",
    "shared",
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
    if profile is None or not isinstance(profile, Mapping):
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


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Settings:
    """A request for what ``build`` makes of some settings, equal to another (and hashed)
    by the settings' content alone (:func:`content_key`)."""

    key: Hashable
    build: Callable[[], object] = field(compare=False)


@lru_cache(maxsize=64)
def _built(settings: _Settings) -> object:
    return settings.build()


def shared(settings: Mapping[str, object], build: Callable[[], _T]) -> _T:
    """What ``build()`` makes of ``settings`` (option name -> value, naming everything
    ``build`` reads), made once for settings of equal content (:func:`content_key`) and
    shared: the components read their settings on every call, and the checks and the
    pipeline build are spent once. Settings without a key are built on every call."""
    return _shared(content_key(settings), build)


def _shared(key: Hashable | None, build: Callable[[], _T]) -> _T:
    """:func:`shared` of settings whose content key is ``key``."""
    if key is None:
        return build()
    return _built(_Settings(key, build))  # type: ignore[return-value]


_ATOMS = frozenset({int, float, str, bool, type(None)})


def content_key(value: object) -> Hashable | None:
    """``value`` as a hashable key equal for equal contents: mappings (in any order) and
    sequences by their items, a frozen pydantic model (a ``Policy``) by its JSON, other
    hashable values by type and value (``1``, ``1.0`` and ``True`` differ); objects that
    define no value (a function, a tokenizer, a ``Pipeline``) are their own key and stay
    referenced by it. ``None`` when some part has no key (an unhashable object).

    >>> content_key({"b": [1], "a": 2}) == content_key({"a": 2, "b": [1]})
    True
    >>> content_key({"a": 1}) == content_key({"a": True}), content_key([{}, object]) is None
    (False, False)
    """
    cls = type(value)
    if cls in _ATOMS:
        return (cls, value)
    if isinstance(value, Mapping):
        entries = []
        for name, item in value.items():  # atoms inline: the components key every call
            kind = type(item)
            part = (kind, item) if kind in _ATOMS else content_key(item)
            if part is None:
                return None
            entries.append((name, part))
        return (Mapping, frozenset(entries))
    if isinstance(value, (list, tuple)):
        parts = tuple(content_key(item) for item in value)
        return None if None in parts else (cls, parts)
    if isinstance(value, BaseModel) and value.model_config.get("frozen"):
        try:
            return (cls, value.model_dump_json())
        except Exception:  # a value JSON cannot hold: no key
            return None
    try:
        hash(value)
    except TypeError:
        return None
    return (cls, value)


def build_selection(
    settings: Mapping[str, Any], options: PinnedOptions = SELECTOR_OPTIONS, model: object = None
) -> MessageSelection:
    """The :class:`MessageSelection` of ``settings`` (shared, see :func:`shared`);
    ``model``: whose input window a fractional ``max_tokens`` reads (only its window
    enters the key). An ``embeddings`` setting (a live model) is left out of the key
    and attached to the shared selection's pipeline (:meth:`MessageSelection.embedding`)."""
    embeddings = settings.get("embeddings")
    if embeddings is not None:
        settings = {name: value for name, value in settings.items() if name != "embeddings"}
    key = content_key(settings)  # the options and the window are hashable values
    selection = _shared(
        None if key is None else (key, options, model_input_tokens(model)),
        lambda: MessageSelection(settings, options=options, model=model),
    )
    return selection if embeddings is None else selection.embedding(embeddings)


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
    """A message-selection configuration, checked once; :meth:`select` runs it.

    Shared by :func:`~cupel_langchain.select_messages`, the Runnable and the agent
    middleware, built from ``settings`` (option name -> value; missing ones take their
    :data:`~cupel_langchain._options.DEFAULTS`). ``options`` names the owning component's
    pinning options (for the error raised when pinned messages alone exceed the budget);
    a fractional ``max_tokens`` reads ``model``'s input window (default: the
    ``token_counter`` chat model's).
    """

    __slots__ = (
        "budget",
        "cache_stable",
        "count",
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
        headroom = check_headroom(get("headroom"))
        self.budget = request_budget(
            tokens, get("target_tokens"), get("output_reserve"), headroom=headroom
        )
        low_water = check_cache_stable(get("cache_stable"), "cache_stable")
        self.cache_stable = low_water is not None
        self.pipeline = cache_stable_pipeline(
            resolve_pipeline(
                get("policy"),
                pipelines=False,
                pipeline=get("pipeline"),
                deduplicate=get("deduplicate"),
            ),
            low_water,
        )
        # shared by selections of other budgets: the counts it remembers by text too
        counting = (token_counter, get("token_counter_input"), get("image_tokens"))
        self.count = shared({"<counter>": counting}, lambda: resolve_message_counter(*counting))
        for name in ("keep_system", "keep_last_human", "truncate_oversized"):
            if not isinstance(get(name), bool):
                raise refused(name, "must be a bool", get(name))
        self.keep_system: bool = get("keep_system")
        self.keep_last_human: bool = get("keep_last_human")
        self.truncate_oversized: bool = get("truncate_oversized")
        self.keep_last = check_keep_last(get("keep_last"))
        types = check_start_on(get("start_on"))  # as roles; "chat": the other roles
        self.start_on = frozenset(ROLE_BY_TYPE.get(t, "other") for t in types)
        self.kinds = check_kinds(get("kinds"))
        self.timestamp_key = check_name("timestamp_key", get("timestamp_key"))
        self.options = replace(
            options, budget=reserved_label(tokens, get("output_reserve"), headroom)
        )

    def embedding(self, embeddings: object) -> MessageSelection:
        """A copy whose pipeline's relevance scorers also score by meaning with
        ``embeddings`` (a LangChain ``Embeddings``, see
        :func:`~cupel_langchain._embeddings.embedder_of`); a policy without relevance
        raises :class:`~cupel.ConfigurationError`."""
        copied = copy(self)
        copied.pipeline = self.pipeline.with_embedder(embedder_of(embeddings))
        return copied

    def report_event(self, component: str, window: HistoryWindow) -> ReportEventData:
        """The report event of ``window`` (selected with a report); with ``cache_stable``
        on it also says ``stable_prefix`` (how many leading messages equal those of the
        previous request's window), ``cut_moved`` (that window is no longer a prefix of
        this one) and ``cut`` (the history index where the window's stretch starts)."""
        stable = window.stable_fields() if self.cache_stable else None
        return report_event_data(component, window.report, self.budget, stable)  # type: ignore[arg-type]

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

    def select(
        self, messages: MessagesInput, *, with_report: bool
    ) -> tuple[list[BaseMessage], SelectionReport | None]:
        """The selected messages (same objects, conversation order) and, when asked, the
        report (invalid units as ``InvalidToolCall``, ``start_on`` drops as ``Filtered``)."""
        selected, window = self.select_window(messages, with_report=with_report)
        return selected, window.report

    def select_window(
        self,
        messages: MessagesInput,
        *,
        with_report: bool,
        fixed: int = 0,
        cache_breakpoint: bool = False,
    ) -> tuple[list[BaseMessage], HistoryWindow]:
        """The selected messages and the :class:`~cupel.conversation.HistoryWindow` they
        come from (a cache-stable window's cut replayed from the messages themselves).
        ``fixed``: tokens every request sends besides the history and the reply (the tool
        definitions), reserved from the budget; ``cache_breakpoint``: the last message
        selected is a marked copy (:func:`~cupel_langchain._stable.mark_cache_breakpoint`).
        The provider's reported usage calibrates the budget (:func:`observed`,
        :func:`calibrated`); the report's ``Calibrate`` event says how for this call."""
        mapping = self._map(as_messages(messages))
        budget = self.budget
        options = self.options
        if fixed:
            budget = budget.model_copy(
                update={"output_reserve": min(budget.max_tokens, budget.output_reserve + fixed)}
            )
            options = replace(
                options, budget=f"{options.budget} - {fixed} for the tool definitions"
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
        if self.truncate_oversized:  # cut copies of the units too large for any window
            fitted = mapping.history.fitted(
                mapping.messages, budget, self.count, self.count.text, PARTS
            )
            if fitted is not None:
                listed, cuts = fitted
                notes = {i: {"cupel:cut_tokens": n} for i, n in cuts.items()}
                mapping = self._map(listed, notes)
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
        selected = [mapping.messages[i] for i in window.messages]
        if cache_breakpoint and selected:
            selected[-1] = mark_cache_breakpoint(selected[-1])
        return selected, window
