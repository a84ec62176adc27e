"""An agent with ``CupelContextMiddleware`` (run: python this_file.py; needs the
``langchain`` package: ``pip install "cupel-context[langchain-agents]"``).

The agent arrives with a long history, calls a tool and answers. On every model call the
middleware selects the model's input within 160 tokens — its messages, the reply's 3
tokens and the definition of the tool bound to the call, which the middleware reserves:
the system prompt and the newest unit (the question, then the fresh tool result) are
always kept, each tool call travels with its results, the input starts on a human message
(``start_on="human"``), and the agent state keeps the full history (ephemeral mode). The
tokens printed are the messages' by cupel's count.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from cupel import SelectionReport
from cupel_langchain import (
    REPORT_EVENT,
    CupelContextMiddleware,
    approximate_message_tokens,
    report_from_event,
    tool_call_problems,
)


class ScriptedToolModel(GenericFakeChatModel):
    """LangChain's fake chat model, scripted to call a tool once and then answer."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self


@tool
def stock_level(sku: str) -> str:
    """How many units of a product are in stock."""
    return f"{sku}: 14 units in Leipzig, 3 units in Vienna, restock on Friday."


class ModelInputs(BaseCallbackHandler):
    """Records what the chat model was sent on each call, and cupel's reports."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []
        self.reports: list[SelectionReport] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == REPORT_EVENT:  # the middleware's report of each model call
            self.reports.append(report_from_event(data))

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


def earlier_conversation() -> list[BaseMessage]:
    history: list[BaseMessage] = []
    for i in range(4):
        history.append(HumanMessage(f"Question {i} about an older order. " * 4))
        history.append(
            AIMessage(
                "",
                tool_calls=[{"name": "stock_level", "args": {"sku": f"OLD-{i}"}, "id": f"old{i}"}],
            )
        )
        history.append(ToolMessage(f"OLD-{i}: discontinued. " * 5, tool_call_id=f"old{i}"))
        history.append(AIMessage(f"Item OLD-{i} is discontinued."))
    history.append(HumanMessage("Is SKU-7 in stock?"))
    return history


def main() -> None:
    model = ScriptedToolModel(
        messages=iter(
            [
                AIMessage(
                    "", tool_calls=[{"name": "stock_level", "args": {"sku": "SKU-7"}, "id": "c7"}]
                ),
                AIMessage("Yes: 14 units in Leipzig and 3 in Vienna."),
            ]
        )
    )
    middleware = CupelContextMiddleware(max_tokens=160, start_on="human")
    agent = create_agent(
        model,
        [stock_level],
        system_prompt="You are a warehouse assistant.",
        middleware=[middleware],
    )
    inputs = ModelInputs()
    state = agent.invoke({"messages": earlier_conversation()}, config={"callbacks": [inputs]})

    print(f"answer: {state['messages'][-1].content}")
    print(f"agent state: {len(state['messages'])} messages (full history kept)")
    for number, sent in enumerate(inputs.calls, 1):
        tokens = sum(approximate_message_tokens(m) for m in sent)
        valid = "valid" if not tool_call_problems(sent) else "INVALID"
        print(f"model call {number}: {len(sent)} messages, {tokens} tokens, tool calls {valid}")
        for message in sent:
            print(f"    {message.type:<6} {str(message.content)[:50]!r}")
    report = inputs.reports[-1]
    print(f"last selection: {len(report.included)} units kept, {len(report.excluded)} left out")


if __name__ == "__main__":
    main()
