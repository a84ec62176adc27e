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

from collections.abc import Mapping
from typing import Annotated, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, PrivateAttr, Strict, ValidationError

from cupel import Pipeline, SelectionReport
from cupel_langchain._messages import MessagesInput, StartOn
from cupel_langchain._pydantic import raise_configuration_error
from cupel_langchain._selection import (
    MessageSelection,
    PolicyLike,
    adispatch_report,
    dispatch_report,
    report_event_data,
)
from cupel_langchain._tokens import CounterInput, MessageTokenCounter

__all__ = ["CupelMessageSelector", "select_messages", "select_messages_with_report"]

StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]


def select_messages(
    messages: MessagesInput,
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
) -> list[BaseMessage]:
    """Select the messages that fit ``max_tokens`` (see the module docstring).

    ``policy`` is a :class:`~cupel.policy.Policy` or a preset name (default ``"chat"``:
    the recency window, chronological); ``pipeline`` overrides it. ``token_counter`` is
    ``"approximate"``, a chat model, or a callable (see :mod:`cupel_langchain._tokens`).
    ``kinds`` overrides the kind of a unit type (``system``, ``human``, ``ai``,
    ``tool_group``, ...). ``timestamp_key`` names a timestamp messages may carry in
    ``additional_kwargs`` / ``response_metadata`` (default ``None``: message order only;
    set it when the policy scores time, e.g. with a ``DecayScorer``).
    """
    return MessageSelection(
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
    ).select(messages, with_report=False)[0]


def select_messages_with_report(
    messages: MessagesInput,
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
) -> tuple[list[BaseMessage], SelectionReport]:
    """Like :func:`select_messages`, also returning the :class:`~cupel.SelectionReport`
    (one entry per unit; the adapter's own decisions appear as ``Filtered``).

    >>> from langchain_core.messages import HumanMessage
    >>> kept, report = select_messages_with_report(
    ...     [HumanMessage("x" * 400), HumanMessage("hi")], max_tokens=20)
    >>> [m.content for m in kept], report.excluded[0].reason.name
    (['hi'], 'OutsideWindow')
    """
    selected, report = MessageSelection(
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
    ).select(messages, with_report=True)
    assert report is not None  # dry_run always builds one
    return selected, report


class CupelMessageSelector(RunnableSerializable[MessagesInput, list[BaseMessage]]):
    """An LCEL step selecting chat history within a token budget: ``prompt | selector |
    model``.

    Takes a prompt value or a sequence of message-likes and returns the selected
    ``BaseMessage`` objects (the same objects, conversation order, tool-call groups
    whole; see :mod:`cupel_langchain._runnable` for the guarantees). With ``report=True``
    (default) each run builds the :class:`~cupel.SelectionReport`, emits it as the custom
    callback event ``"cupel_selection"`` (visible in ``astream_events`` and callback
    handlers' ``on_custom_event``) and keeps the latest in :attr:`last_report`.
    Invalid settings raise :class:`~cupel.ConfigurationError` at construction.

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> selector = CupelMessageSelector(max_tokens=40)
    >>> kept = selector.invoke([HumanMessage("x" * 400), AIMessage("Hello!"),
    ...                         HumanMessage("Hi")])
    >>> [m.content for m in kept], len(selector.last_report.excluded)
    (['Hi'], 2)
    """

    max_tokens: StrictInt
    """The token budget for the selected messages."""
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
    """Build, emit and keep the SelectionReport of each run."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    _selection: MessageSelection = PrivateAttr()
    _last_report: SelectionReport | None = PrivateAttr(default=None)

    def __init__(self, **kwargs: Any) -> None:
        try:
            super().__init__(**kwargs)
        except ValidationError as exc:
            raise_configuration_error(exc, type(self).__name__, type(self).model_fields)
        self._selection = MessageSelection(
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
        )

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Not serializable: it holds a pipeline object."""
        return False

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest run (``None`` before the first run or with
        ``report=False``; under a concurrent ``batch``, of whichever run finished last)."""
        return self._last_report

    def invoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Select from ``input`` (a prompt value or message-likes)."""
        return self._call_with_config(self._run, input, config, **kwargs)

    async def ainvoke(
        self, input: MessagesInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Async :meth:`invoke` (the selection itself is CPU-only)."""
        return await self._acall_with_config(self._arun, input, config, **kwargs)

    def _select(self, input: MessagesInput) -> tuple[list[BaseMessage], dict[str, Any] | None]:
        selected, report = self._selection.select(input, with_report=self.report)
        if report is None:
            return selected, None
        self._last_report = report
        return selected, report_event_data(type(self).__name__, report, self._selection.budget)

    def _run(
        self, input: MessagesInput, run_manager: CallbackManagerForChainRun
    ) -> list[BaseMessage]:
        selected, event = self._select(input)
        if event is not None:
            dispatch_report(run_manager.get_child(), event)
        return selected

    async def _arun(
        self, input: MessagesInput, run_manager: AsyncCallbackManagerForChainRun
    ) -> list[BaseMessage]:
        selected, event = self._select(input)
        if event is not None:
            await adispatch_report(run_manager.get_child(), event)
        return selected
