"""``CupelContextMiddleware``: the model's input, selected each turn within a budget, for
agents built with ``langchain.agents.create_agent`` (needs the ``langchain`` package:
``pip install "cupel-context[langchain-agents]"``).

- **Ephemeral** (default): ``wrap_model_call`` selects from the request's messages plus
  its system message (pinned, counted in the budget) and hands the model the selection;
  the agent state keeps the full history.
- **Persistent** (``persistent=True``): ``before_model`` also rewrites the state to the
  selection (``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` + the kept messages), so dropped
  messages are gone for good; the model call is still checked as above.

The window is the one of :func:`~cupel_langchain.select_messages`: the system prompt, the
latest human message (the agent's task), then the newest tool rounds that fit, newest
first, each call with its results — never a tool result without its call, a call
without its results, or a hole among the recent rounds. The
:class:`~cupel.SelectionReport` of the latest selection is in
:attr:`CupelContextMiddleware.last_report` and is sent to the run's callbacks as the
``"cupel_selection"`` custom event.

>>> from langchain.agents import create_agent
>>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
>>> from langchain_core.messages import AIMessage, HumanMessage
>>> middleware = CupelContextMiddleware(max_tokens=60)
>>> agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("Done.")])),
...                      system_prompt="Be brief.", middleware=[middleware])
>>> state = agent.invoke({"messages": [HumanMessage("x" * 400), HumanMessage("Go")]})
>>> len(state["messages"]), [e.item.content for e in middleware.last_report.included]
(3, ['Be brief.', 'Go'])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from cupel import ConfigurationError, Pipeline, SelectionReport
from cupel_langchain._messages import StartOn
from cupel_langchain._selection import (
    MIDDLEWARE_OPTIONS,
    REPORT_EVENT,
    MessageSelection,
    PolicyLike,
    report_event_data,
)
from cupel_langchain._tokens import CounterInput, MessageTokenCounter

__all__ = ["CupelContextMiddleware"]

_OPTIONS = (
    "max_tokens",
    "target_tokens",
    "output_reserve",
    "policy",
    "pipeline",
    "token_counter",
    "token_counter_input",
    "keep_last_human",
    "keep_last",
    "start_on",
    "deduplicate",
    "kinds",
    "timestamp_key",
    "persistent",
    "report",
)

ModelHandler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncModelHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


class CupelContextMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Select the agent model's input within a token budget on every model call.

    Parameters are those of :func:`~cupel_langchain.select_messages` (the system message
    is always pinned, so there is no ``keep_system``), plus ``persistent`` (rewrite the
    agent state too) and ``report`` (build, keep and emit the
    :class:`~cupel.SelectionReport`). Invalid settings raise
    :class:`~cupel.ConfigurationError` here, not at the first model call.
    """

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
        keep_last_human: bool = True,
        keep_last: int = 0,
        start_on: StartOn = None,
        deduplicate: bool = False,
        kinds: Mapping[str, str] | None = None,
        timestamp_key: str | None = None,
        persistent: bool = False,
        report: bool = True,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            name = sorted(unknown)[0]
            hint = (
                " (the system prompt is always kept by the middleware)"
                if name == "keep_system"
                else ""
            )
            raise ConfigurationError(
                f"CupelContextMiddleware: unknown option {name!r}{hint}; allowed: "
                f"{', '.join(_OPTIONS)}",
                field=name,
                value=unknown[name],
            )
        self._selection = MessageSelection(
            max_tokens=max_tokens,
            target_tokens=target_tokens,
            output_reserve=output_reserve,
            policy=policy,
            pipeline=pipeline,
            token_counter=token_counter,
            token_counter_input=token_counter_input,
            keep_system=True,
            keep_last_human=keep_last_human,
            keep_last=keep_last,
            start_on=start_on,
            deduplicate=deduplicate,
            kinds=kinds,
            timestamp_key=timestamp_key,
            options=MIDDLEWARE_OPTIONS,
        )
        for name, value in (("persistent", persistent), ("report", report)):
            if not isinstance(value, bool):
                raise ConfigurationError(
                    f"CupelContextMiddleware: {name} must be a bool, got {value!r}",
                    field=name,
                    value=value,
                )
        self.persistent = persistent
        self.report = report
        self.tools = []
        self._last_report: SelectionReport | None = None

    def __repr__(self) -> str:
        budget = self._selection.budget
        return (
            f"CupelContextMiddleware(max_tokens={budget.max_tokens}, "
            f"persistent={self.persistent}, pipeline={self._selection.pipeline!r})"
        )

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest selection (``None`` before it or with ``report=False``)."""
        return self._last_report

    # -- selection ------------------------------------------------------------------------
    def _select(
        self, messages: Sequence[BaseMessage]
    ) -> tuple[list[BaseMessage], dict[str, Any] | None]:
        selected, report = self._selection.select(messages, with_report=self.report)
        if report is None:
            return selected, None
        self._last_report = report
        return selected, report_event_data(type(self).__name__, report, self._selection.budget)

    def _select_request(
        self, request: ModelRequest[Any]
    ) -> tuple[ModelRequest[Any], dict[str, Any] | None]:
        system = request.system_message
        messages = list(request.messages)
        selected, event = self._select(messages if system is None else [system, *messages])
        kept: list[AnyMessage] = [m for m in selected if m is not system]  # type: ignore[misc]
        return request.override(messages=kept), event

    def _rewrite_state(self, state: AgentState[Any]) -> tuple[dict[str, Any] | None, Any]:
        messages = list(state["messages"])
        selected, event = self._select(messages)
        if len(selected) == len(messages):
            return None, event
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *selected]}, event

    # -- hooks -------------------------------------------------------------------------------
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Persistent mode: rewrite the state to the selection (no-op when ephemeral)."""
        if not self.persistent:
            return None
        update, event = self._rewrite_state(state)
        _emit(event)
        return update

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        if not self.persistent:
            return None
        update, event = self._rewrite_state(state)
        await _aemit(event)
        return update

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: ModelHandler
    ) -> ModelResponse[Any]:
        """Call the model with the selected messages (the state is untouched)."""
        selected, event = self._select_request(request)
        _emit(event)
        return handler(selected)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: AsyncModelHandler
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        selected, event = self._select_request(request)
        await _aemit(event)
        return await handler(selected)


def _emit(event: dict[str, Any] | None) -> None:
    """Send the report event to the current run's callbacks (from the context config)."""
    if event is None:
        return
    manager = get_callback_manager_for_config(ensure_config())
    if manager.handlers and manager.parent_run_id is not None:
        manager.on_custom_event(REPORT_EVENT, event, run_id=manager.parent_run_id)


async def _aemit(event: dict[str, Any] | None) -> None:
    if event is None:
        return
    manager = get_async_callback_manager_for_config(ensure_config())
    if manager.handlers and manager.parent_run_id is not None:
        await manager.on_custom_event(REPORT_EVENT, event, run_id=manager.parent_run_id)
