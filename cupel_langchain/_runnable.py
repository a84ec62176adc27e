"""Chat-history selection: :class:`CupelMessageSelector` (an LCEL Runnable) and the
plain functions :func:`select_messages` / :func:`select_messages_with_report`.

The default window (the ``chat`` policy) reads like a conversation:

1. system messages are kept (``keep_system``);
2. the latest human message is kept (``keep_last_human``): the question being answered,
   or in an agent run the task;
3. then whole units from the newest backwards, contiguously, until the next one does not
   fit — earlier turns whole (a question with its answer and tool calls), the latest
   turn's units one by one (an agent's newest tool rounds first).

So there are no holes, never a window of one role when a complete exchange fits, and the
only gap allowed is between the kept task message and the recent tool rounds kept after
it. Guarantees, with any policy whose overflow strategy is ``Throw`` (every preset's):

- the selected messages fit ``max_tokens`` (``target_tokens`` when set) minus
  ``output_reserve``, counted with the configured counter, each unit once;
- they are the same objects as the input, in conversation order;
- tool calls are valid for the provider: an ``AIMessage`` with tool calls (valid or
  invalid) and the ``ToolMessage`` s answering it are kept or dropped together, and units
  providers would reject (unanswered or partly answered calls, late, duplicate or
  unknown tool results) are left out and reported as :class:`~cupel.InvalidToolCall`;
- if the pinned messages alone exceed the budget, :class:`~cupel.PinnedBudgetError` says
  what they need and which options would unpin them;
- with ``start_on="human"`` the first non-system message is a human message (the pinned
  latest human message guarantees one).

A scored, gappy selection is one ``policy`` away (e.g. ``policy="code_review"``, or a
:class:`~cupel.policy.Policy` with a greedy slicer); ``policy="long_running"`` keeps a
window plus up to a quarter of the budget for older recurring topics and memories.
Chat turns are not deduplicated by default: two identical "ok" turns are two messages.

>>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
>>> history = [SystemMessage("Be brief."), HumanMessage("x" * 400), AIMessage("y" * 400),
...            HumanMessage("Thanks! And now?")]
>>> [m.type for m in select_messages(history, max_tokens=150)]
['system', 'human']
>>> [m.type for m in select_messages(history, max_tokens=250)]
['system', 'human', 'ai', 'human']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Annotated, Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.load.serializable import SerializedConstructor, SerializedNotImplemented
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, PrivateAttr, Strict, ValidationError, field_validator

from cupel import ConfigurationError, Pipeline, SelectionReport
from cupel.conversation import (
    DEFAULT_MAX_CONVERSATIONS,
    StableWindow,
    StableWindows,
    check_cache_stable,
)
from cupel_langchain._messages import MessagesInput, StartOn, as_messages, check_start_on
from cupel_langchain._pydantic import (
    assign_checked,
    raise_configuration_error,
    serialized,
)
from cupel_langchain._selection import (
    MaxTokens,
    MessageSelection,
    PolicyLike,
    ReportEventData,
    SettingsCache,
    adispatch_report,
    check_max_tokens,
    check_policy,
    dispatch_report,
    last_report_of,
    remember_report,
    report_event_data,
    settings_value,
    unknown_option_hint,
)
from cupel_langchain._stable import (
    check_flag,
    conversation_key,
    mark_cache_breakpoint,
    previous_positions,
    stable_fields,
)
from cupel_langchain._tokens import CounterInput, MessageTokenCounter

__all__ = ["CupelMessageSelector", "select_messages", "select_messages_with_report"]

StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
Fraction = tuple[Literal["fraction"], float]

_FUNCTION_OPTIONS = (
    "max_tokens",
    "target_tokens",
    "output_reserve",
    "policy",
    "pipeline",
    "token_counter",
    "token_counter_input",
    "keep_system",
    "keep_last_human",
    "keep_last",
    "start_on",
    "deduplicate",
    "kinds",
    "timestamp_key",
    "cache_stable",
    "previous",
    "cache_breakpoint",
)


def _refuse_unknown(function: str, unknown: Mapping[str, Any]) -> None:
    if unknown:
        name = sorted(unknown)[0]
        raise ConfigurationError(
            f"{function}: unknown option {name!r}{unknown_option_hint(name)}; allowed: "
            f"{', '.join(_FUNCTION_OPTIONS)}",
            field=name,
            value=unknown[name],
        )


def _select(
    selection: MessageSelection,
    messages: MessagesInput,
    previous: Sequence[BaseMessage] | None,
    cache_breakpoint: bool,
    *,
    with_report: bool,
    owner: str,
) -> tuple[list[BaseMessage], SelectionReport | None]:
    """The plain functions' selection: ``previous`` (the window a previous call returned)
    located in the history, then the window, then the optional breakpoint."""
    check_flag(owner, "cache_breakpoint", cache_breakpoint)
    positions: list[int] | None = None
    listed = as_messages(messages)
    if previous is not None:
        if not selection.cache_stable:
            raise ConfigurationError(
                f"{owner}: previous= is the previous window of a cache-stable selection; "
                f"pass cache_stable=True (or a low-water mark) with it",
                field="previous",
                value=type(previous).__name__,
            )
        if isinstance(previous, (str, BaseMessage)) or not all(
            isinstance(m, BaseMessage) for m in previous
        ):
            raise ConfigurationError(
                f"{owner}: previous must be the list of messages a previous call returned, "
                f"got {type(previous).__name__} {previous!r:.80}",
                field="previous",
                value=previous,
            )
        positions = previous_positions(previous, listed)
    history, window = selection.select_window(listed, with_report=with_report, previous=positions)
    selected = [history[i] for i in window.messages]
    if cache_breakpoint and selected:
        selected[-1] = mark_cache_breakpoint(selected[-1])
    return selected, window.report


def select_messages(
    messages: MessagesInput,
    *,
    max_tokens: MaxTokens,
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
    cache_stable: bool | float = False,
    previous: Sequence[BaseMessage] | None = None,
    cache_breakpoint: bool = False,
    **unknown: Any,
) -> list[BaseMessage]:
    """Select the messages that fit ``max_tokens`` (see the module docstring).

    ``policy`` is a :class:`~cupel.policy.Policy` or a preset name (default ``"chat"``:
    the recency window, chronological); ``pipeline`` overrides it. ``token_counter`` is
    ``"approximate"``, a chat model, or a callable (see :mod:`cupel_langchain._tokens`).
    ``kinds`` overrides the kind of a unit type (``system``, ``human``, ``ai``,
    ``tool_group``, ...). ``timestamp_key`` names a timestamp messages may carry in
    ``additional_kwargs`` / ``response_metadata`` (default ``None``: message order only;
    set it when the policy scores time, e.g. with a ``DecayScorer``). ``max_tokens`` may
    be ``("fraction", f)`` of the ``token_counter`` chat model's input window (its
    ``profile["max_input_tokens"]``). ``trim_messages`` parameters cupel has no option
    for (``strategy``, ``include_system``, ``allow_partial``, ...) raise a
    :class:`~cupel.ConfigurationError` naming the cupel equivalent.

    ``cache_stable`` (``True``: low-water mark 0.6, or a mark ``0 < m <= 1``) with
    ``previous`` (the window the previous call returned) keeps the window append-only
    between cuts, for providers' prompt caches: the previous window plus the new messages
    while they fit, else a cut by whole units back to ``m`` of the budget. A ``previous``
    not found in order in ``messages`` starts fresh. ``cache_breakpoint=True`` returns a
    copy of the last selected message marked with ``cache_control`` (Anthropic).
    """
    _refuse_unknown("select_messages", unknown)
    selection = MessageSelection(
        max_tokens=max_tokens,
        target_tokens=target_tokens,
        output_reserve=output_reserve,
        policy=policy,
        pipeline=pipeline,
        token_counter=token_counter,
        token_counter_input=token_counter_input,
        keep_system=keep_system,
        keep_last_human=keep_last_human,
        keep_last=keep_last,
        start_on=start_on,
        deduplicate=deduplicate,
        kinds=kinds,
        timestamp_key=timestamp_key,
        cache_stable=cache_stable,
    )
    return _select(
        selection, messages, previous, cache_breakpoint, with_report=False, owner="select_messages"
    )[0]


def select_messages_with_report(
    messages: MessagesInput,
    *,
    max_tokens: MaxTokens,
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
    cache_stable: bool | float = False,
    previous: Sequence[BaseMessage] | None = None,
    cache_breakpoint: bool = False,
    **unknown: Any,
) -> tuple[list[BaseMessage], SelectionReport]:
    """Like :func:`select_messages`, also returning the :class:`~cupel.SelectionReport`
    (one entry per unit; the adapter's own decisions appear as ``Filtered``).

    >>> from langchain_core.messages import HumanMessage
    >>> kept, report = select_messages_with_report(
    ...     [HumanMessage("x" * 400), HumanMessage("hi")], max_tokens=20)
    >>> [m.content for m in kept], report.excluded[0].reason.name
    (['hi'], 'OutsideWindow')
    """
    _refuse_unknown("select_messages_with_report", unknown)
    selection = MessageSelection(
        max_tokens=max_tokens,
        target_tokens=target_tokens,
        output_reserve=output_reserve,
        policy=policy,
        pipeline=pipeline,
        token_counter=token_counter,
        token_counter_input=token_counter_input,
        keep_system=keep_system,
        keep_last_human=keep_last_human,
        keep_last=keep_last,
        start_on=start_on,
        deduplicate=deduplicate,
        kinds=kinds,
        timestamp_key=timestamp_key,
        cache_stable=cache_stable,
    )
    selected, report = _select(
        selection,
        messages,
        previous,
        cache_breakpoint,
        with_report=True,
        owner="select_messages_with_report",
    )
    assert report is not None  # dry_run always builds one
    return selected, report


class CupelMessageSelector(RunnableSerializable[MessagesInput, list[BaseMessage]]):
    """An LCEL step selecting chat history within a token budget: ``prompt | selector |
    model``.

    Takes a prompt value or a sequence of message-likes and returns the selected
    ``BaseMessage`` objects (the same objects, conversation order, tool-call groups
    whole; see :mod:`cupel_langchain._runnable` for the guarantees). Invalid settings
    raise :class:`~cupel.ConfigurationError` at construction and at assignment.

    - **Live settings**: every run reads the current fields, so assignment,
      ``model_copy(update=...)`` and ``configurable_fields`` take effect (the selection
      built from them is cached until one changes).
    - **Reports**: with ``report=True`` (default) each run builds the
      :class:`~cupel.SelectionReport` and emits it as the custom callback event
      ``"cupel_selection"`` (``astream_events``, handlers' ``on_custom_event``); the
      event's data is JSON-ready (see :class:`~cupel_langchain.ReportEventData`).
      :attr:`last_report` is the latest report *of the current thread or asyncio task*.
    - **Copies**: ``copy.deepcopy``, ``pickle`` and ``langchain_core.load``
      (``dumpd``/``dumps``/``loads`` with ``valid_namespaces=["cupel_langchain"]``) work
      when ``policy`` is a preset name or a :class:`~cupel.policy.Policy`; with an
      explicit ``pipeline`` or a callable ``token_counter`` the serialized form says it is
      not serializable and ``loads`` refuses it.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> selector = CupelMessageSelector(max_tokens=40)
    >>> kept = selector.invoke([HumanMessage("x" * 400), AIMessage("Hello!"),
    ...                         HumanMessage("Hi")])
    >>> [m.content for m in kept], len(selector.last_report.excluded)
    (['Hi'], 2)
    """

    max_tokens: StrictInt | Fraction
    """The token budget, or ``("fraction", f)`` of the ``token_counter`` chat model's input
    window (its ``profile["max_input_tokens"]``)."""
    target_tokens: StrictInt | None = None
    """A softer target the slicer aims for (default: ``max_tokens``)."""
    output_reserve: StrictInt = 0
    """Tokens kept free for the model's answer."""
    policy: PolicyLike = "chat"
    """A :class:`~cupel.policy.Policy` or preset name (default ``"chat"``)."""
    pipeline: Pipeline | None = None
    """An explicit :class:`~cupel.Pipeline`, used instead of ``policy``."""
    token_counter: Any = "approximate"
    """``"approximate"``, a chat model or a callable (see ``cupel_langchain._tokens``)."""
    token_counter_input: CounterInput = "auto"
    """How a callable counter is called: ``"messages"``, ``"message"``, ``"text"``."""
    keep_system: StrictBool = True
    """Pin system messages (always kept)."""
    keep_last_human: StrictBool = True
    """Pin the latest human message (the question, or an agent's task)."""
    keep_last: StrictInt = 0
    """Also pin the latest units (e.g. 1: a fresh tool result, even if it overflows)."""
    start_on: Any = None
    """Message type(s) the selection must start on after system messages (e.g. ``"human"``)."""
    deduplicate: StrictBool = False
    """Drop messages repeating another's text (off: equal turns are distinct messages)."""
    kinds: dict[str, str] | None = None
    """Kind overrides per unit type (``system``, ``human``, ``ai``, ``tool_group``, ...)."""
    timestamp_key: str | None = None
    """Key of a timestamp carried in ``additional_kwargs`` / ``response_metadata`` (None:
    message order only)."""
    report: StrictBool = True
    """Build and emit the SelectionReport of each run."""
    cache_stable: StrictBool | float = False
    """Cache-stable windows: ``True`` (low-water mark 0.6) or a mark ``0 < m <= 1``. The
    window of a conversation (keyed by ``thread_id`` / ``session_id`` in
    ``config["configurable"]``) grows by appending until it overflows, then is cut back
    to ``m`` of the budget once (see :mod:`cupel_langchain._stable`)."""
    cache_breakpoint: StrictBool = False
    """Return a copy of the last selected message marked as an explicit cache breakpoint
    (``cache_control``, for Anthropic); off by default."""
    max_conversations: StrictInt = DEFAULT_MAX_CONVERSATIONS
    """How many conversations' previous windows a cache-stable selector remembers (least
    recently used out)."""

    model_config = ConfigDict(
        arbitrary_types_allowed=True, extra="forbid", validate_assignment=True
    )

    _cache: SettingsCache[MessageSelection] = PrivateAttr(default_factory=SettingsCache)
    _states: StableWindows = PrivateAttr(default_factory=StableWindows)

    def __init__(self, **kwargs: Any) -> None:
        try:
            super().__init__(**kwargs)
        except ValidationError as exc:
            raise_configuration_error(exc, type(self).__name__, type(self).model_fields)
        self._selection()  # every setting checked now, not at the first run

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _check_max_tokens(cls, value: Any) -> Any:
        return check_max_tokens(value, cls.__name__)

    @field_validator("policy", mode="before")
    @classmethod
    def _check_policy(cls, value: Any) -> Any:
        return check_policy(value)

    @field_validator("cache_stable", mode="before")
    @classmethod
    def _check_cache_stable(cls, value: Any) -> Any:
        check_cache_stable(value, f"{cls.__name__}")
        return value

    @field_validator("max_conversations", mode="after")
    @classmethod
    def _check_max_conversations(cls, value: int) -> int:
        StableWindows(value)  # the same check, the same message
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        assign_checked(self, name, value, super().__setattr__, self._selection)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Serializable with ``langchain_core.load`` when its policy is a preset name or a
        :class:`~cupel.policy.Policy` (see :meth:`to_json`)."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["cupel_langchain"]``: load with ``valid_namespaces=["cupel_langchain"]``."""
        return ["cupel_langchain"]

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """The ``langchain_core.load`` form: the policy as its dict form, ``start_on`` as
        type names. With an explicit ``pipeline`` or a callable ``token_counter`` it is
        the "not implemented" form, whose ``repr`` says why."""
        start_on = None if self.start_on is None else list(check_start_on(self.start_on))
        return serialized(self, super().to_json, {"start_on": start_on})

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of this selector's latest run *in the current thread or asyncio
        task* (``None`` before it, with ``report=False``, or when the run happened inside
        a chain or another thread/task: read the ``"cupel_selection"`` event there)."""
        return last_report_of(self)

    def _selection(self) -> MessageSelection:
        settings = (
            self.max_tokens,
            self.target_tokens,
            self.output_reserve,
            self.policy,
            self.pipeline,
            self.token_counter,
            self.token_counter_input,
            self.keep_system,
            self.keep_last_human,
            self.keep_last,
            settings_value(self.start_on),
            self.deduplicate,
            settings_value(self.kinds),
            self.timestamp_key,
            self.cache_stable,
        )
        return self._cache.get(settings, self._build)

    def _build(self) -> MessageSelection:
        return MessageSelection(
            max_tokens=self.max_tokens,
            target_tokens=self.target_tokens,
            output_reserve=self.output_reserve,
            policy=self.policy,
            pipeline=self.pipeline,
            token_counter=self.token_counter,
            token_counter_input=self.token_counter_input,
            keep_system=self.keep_system,
            keep_last_human=self.keep_last_human,
            keep_last=self.keep_last,
            start_on=self.start_on,
            deduplicate=self.deduplicate,
            kinds=self.kinds,
            timestamp_key=self.timestamp_key,
            cache_stable=self.cache_stable,
        )

    def invoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Select from ``input`` (a prompt value or message-likes)."""
        sink: list[SelectionReport] = []
        selected = self._call_with_config(partial(self._run, sink=sink), input, config, **kwargs)
        if sink:  # the run itself happens in a copy of this context
            remember_report(self, sink[0])
        return selected

    async def ainvoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Async :meth:`invoke` (the selection itself is CPU-only)."""
        sink: list[SelectionReport] = []
        selected = await self._acall_with_config(
            partial(self._arun, sink=sink), input, config, **kwargs
        )
        if sink:
            remember_report(self, sink[0])
        return selected

    def _select(
        self, input: MessagesInput, config: RunnableConfig | None
    ) -> tuple[list[BaseMessage], ReportEventData | None]:
        selection = self._selection()
        if selection.cache_stable:
            states = self._states
            states.max_conversations = self.max_conversations  # evicts at the next put
            key = conversation_key(config)
            listed = as_messages(input)
            state = states.get(key)
            previous = state.previous_for(listed) if state is not None else None
            history, window = selection.select_window(
                listed, with_report=self.report, previous=previous
            )
            states.put(key, StableWindow(tuple(history), tuple(window.messages), window.cut))
        else:
            history, window = selection.select_window(input, with_report=self.report)
        selected = [history[i] for i in window.messages]
        if self.cache_breakpoint and selected:
            selected[-1] = mark_cache_breakpoint(selected[-1])
        if window.report is None:
            return selected, None
        return selected, report_event_data(
            type(self).__name__,
            window.report,
            selection.budget,
            stable_fields(window, selection.cache_stable),
        )

    def forget(self, config: RunnableConfig | None = None) -> None:
        """Drop the previous window of the conversation of ``config`` (its ``thread_id``
        or ``session_id``; none: the unkeyed slot), so its next call starts fresh."""
        self._states.forget(conversation_key(config))

    def _run(
        self,
        input: MessagesInput,
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
        sink: list[SelectionReport],
    ) -> list[BaseMessage]:
        selected, event = self._select(input, config)
        if event is not None:
            assert event.selection_report is not None
            sink.append(event.selection_report)
            dispatch_report(run_manager.get_child(), event)
        return selected

    async def _arun(
        self,
        input: MessagesInput,
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
        sink: list[SelectionReport],
    ) -> list[BaseMessage]:
        selected, event = self._select(input, config)
        if event is not None:
            assert event.selection_report is not None
            sink.append(event.selection_report)
            await adispatch_report(run_manager.get_child(), event)
        return selected
