"""Chat-history selection: :class:`CupelMessageSelector` (an LCEL Runnable) and the
plain functions :func:`select_messages` / :func:`select_messages_with_report`.

The default window (the ``chat`` policy) reads like a conversation:

1. system messages are kept (``keep_system``);
2. the latest human message is kept (``keep_last_human``): the question being answered,
   or in an agent run the task;
3. then whole units from the newest backwards, contiguously, until the next one does not
   fit — earlier turns whole (a question with its answer and tool calls), the latest
   turn's units one by one (an agent's newest tool rounds first); the oldest kept turn,
   when it does not fit whole, keeps its question (or task) and its newest units — so a
   follow-up question in the middle of an agent run keeps the task and its latest rounds.

So there are no holes, never a window of one role when a complete exchange fits, and the
only gap allowed is between a kept turn's first message (the task) and the recent tool
rounds of that turn kept after it. Guarantees, with any policy whose overflow strategy is
``Throw`` (every preset's):

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
>>> [m.type for m in select_messages(history, max_tokens=100)]
['system', 'human']
>>> [m.type for m in select_messages(history, max_tokens=150)]
['system', 'human', 'ai', 'human']
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    BaseCallbackManager,
    CallbackManagerForChainRun,
)
from langchain_core.load.serializable import SerializedConstructor, SerializedNotImplemented
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import field_validator
from typing_extensions import Unpack

from cupel import CupelError, Pipeline, SelectionReport
from cupel.conversation import check_cache_stable
from cupel_langchain._messages import MessagesInput
from cupel_langchain._options import (
    SELECTION_NAMES,
    FunctionOptions,
    PolicyLike,
    check_options,
    check_start_on,
    option_names,
)
from cupel_langchain._pydantic import Fraction, LiveComponent, StrictBool, StrictInt, serialized
from cupel_langchain._reports import (
    Explainable,
    ReportEventData,
    adispatch_report,
    dispatch_report,
    last_report_of,
    listens,
    remember_report,
)
from cupel_langchain._selection import MessageSelection, build_selection
from cupel_langchain._stable import (
    check_flag,
    warn_stateless,
)
from cupel_langchain._tokens import CounterInput

__all__ = ["CupelMessageSelector", "select_messages", "select_messages_with_report"]


_FUNCTION_NAMES = option_names(FunctionOptions)


def _select(
    owner: str, messages: MessagesInput, options: Mapping[str, Any], *, with_report: bool
) -> tuple[list[BaseMessage], SelectionReport | None]:
    """The plain functions' selection: the options checked, the window, then the
    optional breakpoint (``previous`` is ignored, with a deprecation warning)."""
    check_options(owner, options, _FUNCTION_NAMES, {})
    if options.get("previous") is not None:
        warn_stateless(f"{owner}(previous=...) is ignored", stacklevel=4)
    cache_breakpoint = options.get("cache_breakpoint", False)
    check_flag(owner, "cache_breakpoint", cache_breakpoint)
    selection = build_selection(
        {name: value for name, value in options.items() if name in SELECTION_NAMES}
    )
    selected, window = selection.select_window(
        messages, with_report=with_report, cache_breakpoint=cache_breakpoint
    )
    return selected, window.report


def select_messages(
    messages: MessagesInput, **options: Unpack[FunctionOptions]
) -> list[BaseMessage]:
    """Select the messages that fit ``max_tokens`` (see the module docstring).

    Options (keywords; only ``max_tokens`` is required):

    - ``max_tokens``: the budget, or ``("fraction", f)`` of the ``token_counter`` chat
      model's input window (its ``profile["max_input_tokens"]``); ``target_tokens`` a
      softer target; ``output_reserve`` tokens kept free for the answer.
    - ``policy``: a :class:`~cupel.policy.Policy` or a preset name (default ``"chat"``:
      the recency window, chronological); ``pipeline`` (a :class:`~cupel.Pipeline`)
      overrides it; ``deduplicate`` drops repeated text (default off).
    - ``token_counter``: ``"approximate"``, a chat model, or a callable (see
      :mod:`cupel_langchain._tokens`); ``token_counter_input`` says how a callable is
      called.
    - ``keep_system``, ``keep_last_human`` (default on) and ``keep_last`` (default 0)
      pin system messages, the latest human message and the latest units; ``start_on``
      the message type(s) the window may start on after system messages.
    - ``kinds`` overrides the kind of a unit type (``system``, ``human``, ``ai``,
      ``tool_group``, ...); ``timestamp_key`` names a timestamp messages may carry in
      ``additional_kwargs`` / ``response_metadata`` (default ``None``: message order
      only; set it when the policy scores time, e.g. with a ``DecayScorer``).
    - ``cache_stable`` (``True``: low-water mark 0.5, or a mark ``0 < m <= 1``) keeps the
      window append-only between cuts, for providers' prompt caches: the previous request's
      window plus the new messages while they fit, else a cut by whole units back to ``m``
      of the budget. The cut is replayed from ``messages`` themselves, so every process
      computes the same window for the same history (``previous`` is deprecated and
      ignored). ``cache_breakpoint=True`` returns a copy of the last selected message
      marked with ``cache_control`` (Anthropic).
    - ``embeddings``: a LangChain ``Embeddings`` for a policy with relevance (e.g.
      ``policy="recall"``): older turns are scored by meaning too, a cosine with the latest
      human message weighted with the words' BM25 score (see
      :mod:`cupel.scorers.relevance`). Each text is embedded once per model object
      (``embed_documents``; ``embed_query`` for the question); a policy without relevance
      raises :class:`~cupel.ConfigurationError`.

    An unknown option is a :class:`~cupel.ConfigurationError`; ``trim_messages``
    parameters cupel has no option for (``strategy``, ``include_system``,
    ``allow_partial``, ...) name the cupel equivalent.
    """
    return _select("select_messages", messages, options, with_report=False)[0]


def select_messages_with_report(
    messages: MessagesInput, **options: Unpack[FunctionOptions]
) -> tuple[list[BaseMessage], SelectionReport]:
    """Like :func:`select_messages` (the same options), also returning the
    :class:`~cupel.SelectionReport` (one entry per unit; the adapter's own decisions
    appear as ``Filtered``).

    >>> from langchain_core.messages import HumanMessage
    >>> kept, report = select_messages_with_report(
    ...     [HumanMessage("x" * 400), HumanMessage("hi")], max_tokens=20)
    >>> [m.content for m in kept], report.excluded[0].reason.name
    (['hi'], 'OutsideWindow')
    """
    selected, report = _select("select_messages_with_report", messages, options, with_report=True)
    if report is None:  # a dry run always builds one
        raise CupelError("select_messages_with_report: the selection built no report")
    return selected, report


class CupelMessageSelector(LiveComponent, RunnableSerializable[MessagesInput, list[BaseMessage]]):
    """An LCEL step selecting chat history within a token budget: ``prompt | selector |
    model``.

    Takes a prompt value or a sequence of message-likes and returns the selected
    ``BaseMessage`` objects (the same objects, conversation order, tool-call groups
    whole; see :mod:`cupel_langchain._runnable` for the guarantees). Invalid settings
    raise :class:`~cupel.ConfigurationError` at construction and at assignment.

    - **Live settings**: every run reads the current fields, so assignment,
      ``model_copy(update=...)`` and ``configurable_fields`` take effect (the selection
      built from them is shared by settings of equal content).
    - **Reports**: with ``report=True`` (default) each run builds the
      :class:`~cupel.SelectionReport` and emits it as the custom callback event
      ``"cupel_selection"`` (``astream_events``, handlers' ``on_custom_event``); the
      event's data is JSON-ready (see :class:`~cupel_langchain.ReportEventData`).
      :attr:`last_report` is the latest report *of the current thread or asyncio task*.
    - **Copies**: ``copy.deepcopy``, ``pickle`` and ``langchain_core.load``
      (``dumpd``/``dumps``/``loads`` with ``valid_namespaces=["cupel_langchain"]``) work
      when ``policy`` is a preset name or a :class:`~cupel.policy.Policy`; with an
      explicit ``pipeline``, a callable ``token_counter`` or ``embeddings`` the serialized
      form says it is not serializable and ``loads`` refuses it.

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
    image_tokens: Any = "max"
    """How images are priced: ``"max"`` (the larger of OpenAI's and Anthropic's rules),
    ``"openai"``, ``"anthropic"``, a number, or ``(width, height, detail) -> int``."""
    headroom: float = 0.0
    """A share of ``max_tokens`` kept free for a provider whose tokenizer counts more than
    the counter (e.g. 0.1 for Claude with the approximate counter)."""
    truncate_oversized: StrictBool = False
    """Send a cut copy of a message too large for any window (the newest unit, the latest
    human message) instead of raising or leaving it out (see ``select_messages``)."""
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
    """Cache-stable windows: ``True`` (low-water mark 0.5) or a mark ``0 < m <= 1``. The
    window grows by appending until it overflows, then is cut back to ``m`` of the budget
    once; the cut is replayed from the history itself, so the selector keeps nothing
    between calls (see :mod:`cupel_langchain._stable`)."""
    cache_breakpoint: StrictBool = False
    """Return a copy of the last selected message marked as an explicit cache breakpoint
    (``cache_control``, for Anthropic); off by default."""
    embeddings: Any = None
    """A LangChain ``Embeddings`` for a policy with relevance (e.g. ``"recall"``): the
    relevance to the latest human message also by meaning (see ``select_messages``)."""
    max_conversations: StrictInt | None = None
    """Deprecated and ignored (a :class:`DeprecationWarning` when set): the selector keeps
    no state per conversation. Removed before 1.0."""

    model_config = LiveComponent.model_config  # not the LangChain base's extra="ignore"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.max_conversations is not None:
            warn_stateless(f"{type(self).__name__}: max_conversations is ignored")

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "max_conversations" and value is not None:
            warn_stateless(f"{type(self).__name__}: max_conversations is ignored")

    @field_validator("cache_stable", mode="before")
    @classmethod
    def _check_cache_stable(cls, value: Any) -> Any:
        check_cache_stable(value, cls.__name__)
        return value

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
        return build_selection({name: getattr(self, name) for name in SELECTION_NAMES})

    def invoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Select from ``input`` (a prompt value or message-likes)."""
        sink: list[Explainable] = []  # the run's report, for this context's last_report
        selected = self._call_with_config(partial(self._run, sink=sink), input, config, **kwargs)
        if sink:
            remember_report(self, sink[0])
        return selected

    async def ainvoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Async :meth:`invoke` (the selection itself is CPU-only)."""
        sink: list[Explainable] = []
        selected = await self._acall_with_config(
            partial(self._arun, sink=sink), input, config, **kwargs
        )
        if sink:
            remember_report(self, sink[0])
        return selected

    def _selected(
        self, input: MessagesInput, manager: BaseCallbackManager, sink: list[Explainable]
    ) -> tuple[list[BaseMessage], ReportEventData | None]:
        """The selection, and its report event when a handler of ``manager`` listens; with
        ``report`` on, the report (or, when nobody listens, the window that builds it on
        first read) goes in ``sink`` for the caller's context."""
        selection = self._selection()
        selected, window = selection.select_window(
            input,
            with_report=self.report and listens(manager),
            cache_breakpoint=self.cache_breakpoint,
        )
        if self.report:
            sink.append(window if window.report is None else window.report)
        if window.report is None:
            return selected, None
        return selected, selection.report_event(type(self).__name__, window)

    def forget(self, config: RunnableConfig | None = None) -> None:
        """Deprecated, does nothing (a :class:`DeprecationWarning`): the selector keeps no
        state per conversation. Removed before 1.0."""
        warn_stateless(f"{type(self).__name__}.forget() does nothing", stacklevel=3)

    def _run(
        self,
        input: MessagesInput,
        run_manager: CallbackManagerForChainRun,
        *,
        sink: list[Explainable],
    ) -> list[BaseMessage]:
        child = run_manager.get_child()
        selected, event = self._selected(input, child, sink)
        if event is not None:
            dispatch_report(child, event)
        return selected

    async def _arun(
        self,
        input: MessagesInput,
        run_manager: AsyncCallbackManagerForChainRun,
        *,
        sink: list[Explainable],
    ) -> list[BaseMessage]:
        child = run_manager.get_child()
        selected, event = self._selected(input, child, sink)
        if event is not None:
            await adispatch_report(child, event)
        return selected
