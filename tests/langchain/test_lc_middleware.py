"""CupelContextMiddleware in agents built with langchain.agents.create_agent."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from cupel import ConfigurationError, PinnedBudgetError, SelectionReport
from cupel.counting import MESSAGE_TOKENS, REPLY_TOKENS, estimate_tokens
from cupel_langchain import (
    CupelContextMiddleware,
    approximate_message_tokens,
    report_from_event,
    tool_call_problems,
)


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's GenericFakeChatModel, accepting tools like a real chat model does."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:
        return self


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.model_inputs: list[list[BaseMessage]] = []
        self.events: list[tuple[str, Any]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.model_inputs.extend(messages)

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: Any = None,
        metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data))


@tool
def river_length(river: str) -> str:
    """Look up a river's length."""
    return f"The {river} is long. " * 6


def scripted_model() -> ToolCallingFakeModel:
    return ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[{"name": "river_length", "args": {"river": "Nile"}, "id": "n1"}],
                ),
                AIMessage("The Nile is about 6,650 km."),
            ]
        )
    )


def earlier_turns() -> list[BaseMessage]:
    return [
        HumanMessage("Tell me about the Danube. " * 8, id="h0"),
        AIMessage(
            "",
            tool_calls=[{"name": "river_length", "args": {"river": "Danube"}, "id": "d1"}],
            id="a0",
        ),
        ToolMessage("The Danube is 2,850 km. " * 8, tool_call_id="d1", id="t0"),
        AIMessage("The Danube is 2,850 km long. " * 4, id="a1"),
        HumanMessage("How long is the Nile?", id="h1"),
    ]


SYSTEM = "You answer questions about rivers."

TOOLS = estimate_tokens(json.dumps(convert_to_openai_tool(river_length))) + MESSAGE_TOKENS
"""What the bound tool's definition costs on every model call (its JSON schema as OpenAI
receives it, and its framing): the middleware reserves it from the budget."""

BUDGET = 160
"""Room for the system prompt, the task and the fresh tool round (besides the reply and the
tool definition), not for the earlier turn (checked in the first test)."""


def tokens(messages: list[BaseMessage]) -> int:
    return sum(approximate_message_tokens(m) for m in messages)


def request_tokens(sent: list[BaseMessage]) -> int:
    """What a model call sending ``sent`` with the river tool bound costs by cupel's default
    count: the messages, the reply's tokens and the tool definition."""
    return tokens(sent) + REPLY_TOKENS + TOOLS


def run_agent(middleware: CupelContextMiddleware) -> tuple[dict[str, Any], Recorder]:
    agent = create_agent(
        scripted_model(), [river_length], system_prompt=SYSTEM, middleware=[middleware]
    )
    recorder = Recorder()
    state = agent.invoke({"messages": earlier_turns()}, config={"callbacks": [recorder]})
    return state, recorder


def test_every_model_call_gets_a_valid_history_within_the_budget() -> None:
    state, recorder = run_agent(CupelContextMiddleware(max_tokens=BUDGET))
    assert len(recorder.model_inputs) == 2
    for sent in recorder.model_inputs:
        assert request_tokens(sent) <= BUDGET
        assert tool_call_problems(sent) == []
        assert isinstance(sent[0], SystemMessage) and sent[0].content == SYSTEM
    first, second = recorder.model_inputs
    # the earlier turn (question, tool round, answer) does not fit whole: it is left out
    # whole, never as an answer without its question
    assert [m.id for m in first[1:]] == ["h1"]
    # the task and the fresh tool round
    assert [m.id for m in second[1:2]] == ["h1"] and len(second) == 4
    assert second[2].tool_calls[0]["id"] == "n1" and isinstance(second[3], ToolMessage)  # type: ignore[attr-defined]
    assert request_tokens(second) + tokens(earlier_turns()[:4]) > BUDGET  # no room for turn 1
    assert state["messages"][-1].content == "The Nile is about 6,650 km."


def test_ephemeral_selection_leaves_the_agent_state_whole() -> None:
    state, _ = run_agent(CupelContextMiddleware(max_tokens=BUDGET))
    assert [m.id for m in state["messages"][:5]] == ["h0", "a0", "t0", "a1", "h1"]
    assert len(state["messages"]) == 8  # + tool call, tool result, answer


def test_persistent_selection_rewrites_the_state() -> None:
    middleware = CupelContextMiddleware(max_tokens=BUDGET, persistent=True)
    state, recorder = run_agent(middleware)
    ids = [m.id for m in state["messages"]]
    assert "h0" not in ids and "t0" not in ids and "a0" not in ids and "a1" not in ids
    assert ids[0] == "h1" and len(ids) == 4  # question, tool call, tool result, answer
    assert tool_call_problems(state["messages"]) == []
    for sent in recorder.model_inputs:
        assert request_tokens(sent) <= BUDGET


def test_the_report_is_emitted_on_each_model_call() -> None:
    middleware = CupelContextMiddleware(max_tokens=BUDGET)
    _, recorder = run_agent(middleware)
    names = [name for name, _ in recorder.events]
    assert names == ["cupel_selection", "cupel_selection"]
    data = recorder.events[-1][1]
    assert data["component"] == "CupelContextMiddleware"
    report = report_from_event(data)
    assert isinstance(report, SelectionReport) and report is data.selection_report
    assert report.included[0].item.content == SYSTEM
    assert report.included[0].reason.value == "Pinned"
    # the agent ran the middleware in its own context: the caller's thread saw no run
    assert middleware.last_report is None


def test_the_async_agent_selects_the_same_way() -> None:
    middleware = CupelContextMiddleware(max_tokens=BUDGET)
    agent = create_agent(
        scripted_model(), [river_length], system_prompt=SYSTEM, middleware=[middleware]
    )
    recorder = Recorder()
    state = asyncio.run(
        agent.ainvoke({"messages": earlier_turns()}, config={"callbacks": [recorder]})
    )
    assert state["messages"][-1].content == "The Nile is about 6,650 km."
    first_call = recorder.model_inputs[0]
    assert [m.id for m in first_call[1:]] == ["h1"]
    assert [name for name, _ in recorder.events] == ["cupel_selection"] * 2
    persistent = CupelContextMiddleware(max_tokens=BUDGET, persistent=True)
    agent = create_agent(
        scripted_model(), [river_length], system_prompt=SYSTEM, middleware=[persistent]
    )
    state = asyncio.run(agent.ainvoke({"messages": earlier_turns()}))
    assert state["messages"][0].id == "h1" and len(state["messages"]) == 4


def test_a_system_prompt_larger_than_the_budget_is_a_clear_error() -> None:
    agent = create_agent(
        scripted_model(),
        [river_length],
        system_prompt=SYSTEM,
        middleware=[CupelContextMiddleware(max_tokens=5)],
    )
    with pytest.raises(PinnedBudgetError) as raised:
        agent.invoke({"messages": earlier_turns()})
    message = str(raised.value)
    system = approximate_message_tokens(SystemMessage(SYSTEM))
    task = approximate_message_tokens(earlier_turns()[-1])
    assert f"system messages: {system}" in message
    assert f"the latest user message: {task}" in message
    # the room is what is left after the reply and the tool definitions
    assert (
        f"allows 0 (max_tokens 5 - {REPLY_TOKENS} for the reply - {TOOLS} for the tool " in message
    )
    # only options this component has: the system prompt is always kept here
    assert message.endswith("shorten them or pass keep_last_human=False")
    assert "keep_system" not in message


def test_bad_middleware_settings_fail_at_construction() -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelContextMiddleware(max_tokens=100, persistent="yes")  # type: ignore[arg-type]
    assert raised.value.field == "persistent"
    assert str(raised.value) == "CupelContextMiddleware: persistent must be a bool, got 'yes'"
    with pytest.raises(ConfigurationError) as raised:
        CupelContextMiddleware(max_tokens=100, policy="agentic")
    assert raised.value.field == "policy"
    assert "unknown preset 'agentic'; allowed: a cupel.policy.Policy or one of chat," in str(
        raised.value
    )
    with pytest.raises(ConfigurationError) as raised:
        CupelContextMiddleware(max_tokens=100, keep_last=-1)
    assert raised.value.field == "keep_last"
    assert "keep_last must be a non-negative int" in str(raised.value)
    assert "got -1" in str(raised.value)
    assert "persistent=False" in repr(CupelContextMiddleware(max_tokens=100))


@pytest.mark.parametrize("name", ["keep_system", "keep_sytem", "strategy"])
def test_unknown_middleware_options_are_a_configuration_error_listing_the_allowed(
    name: str,
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelContextMiddleware(max_tokens=100, **{name: False})
    assert raised.value.field == name
    assert f"unknown option {name!r}" in str(raised.value)
    assert "allowed: max_tokens, target_tokens" in str(raised.value)
    if name == "keep_system":
        assert "the system prompt is always kept by the middleware" in str(raised.value)


class RoundsModel(ToolCallingFakeModel):
    """Calls two tools at once for ``rounds`` model calls, then answers (a long agent run)."""

    rounds: int = 35

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        done = sum(isinstance(m, AIMessage) and bool(m.tool_calls) for m in self._seen)
        self._seen.append(None)
        if done >= self.rounds:
            message = AIMessage("All rivers measured.")
        else:
            calls = [
                {"name": "river_length", "args": {"river": f"R{done}-{k}"}, "id": f"c{done}-{k}"}
                for k in range(2)
            ]
            message = AIMessage(f"Round {done}.", tool_calls=calls)
        self._seen[-1] = message
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _seen(self) -> list[Any]:
        return self.__dict__.setdefault("_seen_messages", [])


def test_a_long_agent_run_with_parallel_calls_keeps_its_task_and_the_newest_rounds() -> None:
    model = RoundsModel(messages=iter([]))
    middleware = CupelContextMiddleware(max_tokens=400)
    agent = create_agent(model, [river_length], system_prompt=SYSTEM, middleware=[middleware])
    recorder = Recorder()
    task = HumanMessage("Measure every river you know, two at a time.", id="task")
    state = agent.invoke(
        {"messages": [task]}, config={"callbacks": [recorder], "recursion_limit": 200}
    )
    assert state["messages"][-1].content == "All rivers measured."
    assert len(recorder.model_inputs) == 36
    history = state["messages"]
    for sent in recorder.model_inputs:
        assert request_tokens(sent) <= 400
        assert tool_call_problems(sent) == []
        assert sent[0].content == SYSTEM and sent[1].id == "task"  # the task is never lost
        # the rest is the newest stretch of the run, without holes
        rest = [m.id for m in sent[2:]]
        if rest:
            start = [m.id for m in history].index(rest[0])
            assert rest == [m.id for m in history[start : start + len(rest)]]
    assert len(recorder.model_inputs[-1]) > 2  # the last call still sees recent rounds


def test_the_callers_messages_are_not_modified() -> None:
    turns = earlier_turns()
    before = [m.model_dump() for m in turns]
    agent = create_agent(
        scripted_model(),
        [river_length],
        system_prompt=SYSTEM,
        middleware=[CupelContextMiddleware(max_tokens=BUDGET, persistent=True)],
    )
    agent.invoke({"messages": turns})
    assert [m.model_dump() for m in turns] == before and len(turns) == 5


def test_the_bound_tool_definitions_are_reserved_from_the_budget() -> None:
    pinned = [SystemMessage(SYSTEM), earlier_turns()[-1]]  # the system prompt and the task
    exact = request_tokens(pinned)
    state, recorder = run_agent(CupelContextMiddleware(max_tokens=exact))
    assert [m.id for m in recorder.model_inputs[0][1:]] == ["h1"]
    assert state["messages"][-1].content == "The Nile is about 6,650 km."
    with pytest.raises(PinnedBudgetError) as raised:
        run_agent(CupelContextMiddleware(max_tokens=exact - 1))
    assert (raised.value.pinned_tokens, raised.value.available_tokens) == (
        tokens(pinned),
        tokens(pinned) - 1,
    )
    assert f"- {TOOLS} for the tool definitions)" in str(raised.value)
