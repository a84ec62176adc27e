"""``CupelContextMiddleware``: the model's input, selected each turn within a budget, for
agents built with ``langchain.agents.create_agent`` (needs the ``langchain`` package:
``pip install "cupel-context[langchain-agents]"``).

- **Ephemeral** (default): ``wrap_model_call`` selects from the request's messages plus
  its system message (pinned, counted in the budget) and hands the model the selection;
  the agent state keeps the full history.
- **Persistent** (``persistent=True``): ``before_model`` also rewrites the state to the
  selection (``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` + the kept messages), so dropped
  messages are gone for good; the model call is still checked as above.

Either way each model call emits one report: the selection the model is sent. The window
is the one of :func:`~cupel_langchain.select_messages` (the system prompt, the agent's task,
then the newest whole tool rounds that fit). The middleware keeps nothing between calls:
with ``cache_stable`` the window's cut is replayed from the history itself, so workers
sharing a checkpointer, a restarted process or a middleware built per request all send the
same window.

Reports reach the caller as data, never through shared state: each selection's
:class:`~cupel.SelectionReport` goes to the agent's custom stream
(``agent.stream(..., stream_mode="custom")`` yields ``{"type": "cupel_selection", ...}``
chunks, JSON-ready) and to the run's callbacks as the ``"cupel_selection"`` custom event.
:attr:`CupelContextMiddleware.last_report` is the latest report of the current thread
or asyncio task (in the graph's own context: code running in the agent run, such as a
tool or another middleware, sees it).

Settings are live attributes (``middleware.max_tokens = 2000`` takes effect at the next
model call, and is checked at assignment). ``max_tokens=("fraction", 0.5)`` is half of the
model's input window, read from the model's profile (``profile["max_input_tokens"]``) at
each call, as ``SummarizationMiddleware`` does.

>>> from langchain.agents import create_agent
>>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
>>> from langchain_core.messages import AIMessage, HumanMessage
>>> middleware = CupelContextMiddleware(max_tokens=60)
>>> agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("Done.")] * 2)),
...                      system_prompt="Be brief.", middleware=[middleware])
>>> chunks = [c for c in agent.stream({"messages": [HumanMessage("x" * 400), HumanMessage("Go")]},
...                                   stream_mode="custom") if c["type"] == "cupel_selection"]
>>> [e["item"]["content"] for e in chunks[0]["report"]["included"]]
['Be brief.', 'Go']
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
)
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from typing_extensions import Unpack

from cupel import CupelError, SelectionReport
from cupel.conversation import check_cache_stable
from cupel.counting import MESSAGE_TOKENS
from cupel.policy import check_policy
from cupel_langchain._options import (
    DEFAULTS,
    HistoryOptions,
    MiddlewareOptions,
    check_max_tokens,
    check_options,
    option_names,
)
from cupel_langchain._reports import (
    REPORT_EVENT,
    ReportEventData,
    adispatch_report,
    dispatch_report,
    last_report_of,
    remember_report,
)
from cupel_langchain._selection import (
    MIDDLEWARE_OPTIONS,
    MessageSelection,
    build_selection,
    model_input_tokens,
)
from cupel_langchain._stable import (
    check_flag,
    check_max_conversations,
    mark_cache_breakpoint,
    warn_stateless,
)

__all__ = ["CupelContextMiddleware"]

_OPTIONS = option_names(MiddlewareOptions)
_SETTINGS = option_names(HistoryOptions)  # what the selection is built from
_HINTS = {
    name: " (the system prompt is always kept by the middleware)"
    for name in ("keep_system", "include_system")
}

ModelHandler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncModelHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


class CupelContextMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Select the agent model's input within a token budget on every model call.

    Parameters are those of :func:`~cupel_langchain.select_messages` (the system message
    is always pinned, so there is no ``keep_system``), plus ``persistent`` (rewrite the
    agent state too) and ``report`` (build and emit the :class:`~cupel.SelectionReport`,
    once per model call). ``cache_stable`` keeps the window append-only between cuts,
    replayed from the history (nothing is kept per thread: ``max_conversations`` and
    :meth:`forget` are deprecated no-ops); ``cache_breakpoint`` marks a copy of the last
    message sent (Anthropic ``cache_control``). Invalid settings raise
    :class:`~cupel.ConfigurationError` here (and at assignment), not at the first model
    call. ``copy.deepcopy`` and ``pickle`` work (with picklable counters).
    """

    if TYPE_CHECKING:  # the options are attributes (live: checked at assignment)

        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, **options: Unpack[MiddlewareOptions]) -> None:
        super().__init__()
        check_options("CupelContextMiddleware", options, _OPTIONS, _HINTS)
        given: Mapping[str, Any] = options
        self.tools = []
        for name in _OPTIONS:
            value = given[name] if name in given else DEFAULTS[name]
            object.__setattr__(self, name, _checked(name, value))
        self._check()
        if self.max_conversations is not None:
            warn_stateless("CupelContextMiddleware: max_conversations is ignored")

    def __setattr__(self, name: str, value: Any) -> None:
        """Options are checked at assignment (a bad value leaves the option unchanged)."""
        if name not in _OPTIONS:
            object.__setattr__(self, name, value)
            return
        previous = getattr(self, name)
        object.__setattr__(self, name, _checked(name, value))
        try:
            self._check()
        except CupelError:
            object.__setattr__(self, name, previous)
            raise
        if name == "max_conversations" and value is not None:
            warn_stateless("CupelContextMiddleware: max_conversations is ignored")

    def _check(self) -> None:
        """Build the selection now (a fractional budget: once the model is known)."""
        if isinstance(self.max_tokens, int) or model_input_tokens(self.token_counter):
            self._selection(None)

    def __repr__(self) -> str:
        return (
            f"CupelContextMiddleware(max_tokens={self.max_tokens!r}, "
            f"persistent={self.persistent}, policy={self.policy!r}, "
            f"pipeline={self.pipeline!r})"
        )

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest selection *in the current thread or asyncio task*
        (``None`` before it or with ``report=False``). The agent runs the middleware in
        its own context: callers read reports from the custom stream or the
        ``"cupel_selection"`` callback event."""
        return last_report_of(self)

    # -- selection ------------------------------------------------------------------------
    def _selection(self, model: object) -> MessageSelection:
        budget_model = None
        if not isinstance(self.max_tokens, int) and not model_input_tokens(self.token_counter):
            budget_model = model  # a fraction of the agent model's window
        values = {name: getattr(self, name) for name in _SETTINGS}
        return build_selection(
            {**values, "keep_system": True}, options=MIDDLEWARE_OPTIONS, model=budget_model
        )

    def _select(
        self,
        messages: Sequence[BaseMessage],
        model: object,
        tools: Sequence[Any] = (),
        *,
        with_report: bool,
    ) -> tuple[list[BaseMessage], ReportEventData | None]:
        selection = self._selection(model)
        selected, window = selection.select_window(
            messages,
            with_report=with_report,
            fixed=tool_tokens(tools, selection.count.text) if tools else 0,
        )
        if window.report is None:
            return selected, None
        remember_report(self, window.report)
        return selected, selection.report_event(type(self).__name__, window)

    def forget(self, thread_id: Hashable = None) -> None:
        """Deprecated, does nothing (a :class:`DeprecationWarning`): the middleware keeps
        no state per conversation. Removed before 1.0."""
        warn_stateless("CupelContextMiddleware.forget() does nothing")

    def _select_request(
        self, request: ModelRequest[Any]
    ) -> tuple[ModelRequest[Any], ReportEventData | None]:
        system = request.system_message
        messages = list(request.messages)
        selected, event = self._select(
            messages if system is None else [system, *messages],
            request.model,
            request.tools,
            with_report=self.report,
        )
        kept: list[AnyMessage] = [m for m in selected if m is not system]  # type: ignore[misc]
        if self.cache_breakpoint and kept:
            kept[-1] = mark_cache_breakpoint(kept[-1])  # type: ignore[call-overload]
        elif self.cache_breakpoint and system is not None:  # only the system prompt is sent
            marked = mark_cache_breakpoint(system)
            return request.override(messages=kept, system_message=marked), event  # type: ignore[arg-type]
        return request.override(messages=kept), event

    def _rewrite_state(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """The persistent rewrite: the state's messages selected (without a report: the
        model call that follows reports what is sent), or ``None`` when all are kept."""
        messages = list(state["messages"])
        selected, _ = self._select(messages, getattr(runtime, "model", None), with_report=False)
        if len(selected) == len(messages):
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *selected]}

    # -- hooks -------------------------------------------------------------------------------
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Persistent mode: rewrite the state to the selection (no-op when ephemeral)."""
        return self._rewrite_state(state, runtime) if self.persistent else None

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return self._rewrite_state(state, runtime) if self.persistent else None

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: ModelHandler
    ) -> ModelResponse[Any]:
        """Call the model with the selected messages (the state is untouched)."""
        selected, event = self._select_request(request)
        _emit(event, request.runtime)
        return handler(selected)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        selected, event = self._select_request(request)
        await _aemit(event, request.runtime)
        return await handler(selected)


def tool_tokens(tools: Sequence[Any], count_text: Callable[[str], int]) -> int:
    """What the tool definitions bound to a model call cost: each tool's JSON schema (as
    OpenAI receives it: name, description, parameters) by ``count_text``, plus
    :data:`~cupel.counting.MESSAGE_TOKENS` per tool for its framing. Providers bill the
    definitions on every call.

    >>> from langchain_core.tools import tool
    >>> @tool
    ... def weather(city: str) -> str:
    ...     \"\"\"The weather in a city.\"\"\"
    ...     return "sunny"
    >>> tool_tokens([weather], lambda text: len(text.split()))
    23
    """
    total = 0
    for definition in tools:
        try:
            schema = convert_to_openai_tool(definition)
        except Exception:
            schema = definition if isinstance(definition, dict) else {"tool": repr(definition)}
        total += count_text(json.dumps(schema, ensure_ascii=False, default=str))
        total += MESSAGE_TOKENS
    return total


def _checked(name: str, value: Any) -> Any:
    """An option's value as stored: flags must be bools, a budget an int or a fraction,
    a policy a name or a Policy (its dict form is read as a Policy)."""
    if name in ("persistent", "report", "cache_breakpoint"):
        return check_flag("CupelContextMiddleware", name, value)
    if name == "max_tokens":
        return check_max_tokens(value, "CupelContextMiddleware")
    if name == "policy":
        return check_policy(value, "CupelContextMiddleware")
    if name == "cache_stable":
        check_cache_stable(value, "CupelContextMiddleware")
    if name == "max_conversations":
        check_max_conversations("CupelContextMiddleware", value)
    return value


def _emit(event: ReportEventData | None, runtime: object) -> None:
    """Send the report to the agent's custom stream and the current run's callbacks."""
    if event is None:
        return
    _write(event, runtime)
    manager = get_callback_manager_for_config(ensure_config())
    if manager.parent_run_id is not None:
        dispatch_report(manager, event)


async def _aemit(event: ReportEventData | None, runtime: object) -> None:
    if event is None:
        return
    _write(event, runtime)
    manager = get_async_callback_manager_for_config(ensure_config())
    if manager.parent_run_id is not None:
        await adispatch_report(manager, event)


def _write(event: ReportEventData, runtime: object) -> None:
    """``{"type": "cupel_selection", ...event}`` to the custom stream (when streaming)."""
    writer = getattr(runtime, "stream_writer", None)
    if writer is not None:
        chunk = ReportEventData(type=REPORT_EVENT, **event.complete())
        chunk.selection_report = event.selection_report
        writer(chunk)
