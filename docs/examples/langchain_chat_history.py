"""Chat with history: ``prompt | CupelMessageSelector | model`` (run: python this_file.py).

A long conversation with an earlier tool round goes through a prompt template; the
selector keeps the system prompt, the question and the newest whole turns within 200
tokens — each question with its answer, the tool call with its result — and reports every
decision, also as the LangChain custom event ``"cupel_selection"`` (seen here by a
callback handler).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from cupel import SelectionReport
from cupel.counting import REPLY_TOKENS
from cupel_langchain import (
    CupelMessageSelector,
    approximate_message_tokens,
    report_from_event,
    tool_call_problems,
)


def chat_history() -> list[BaseMessage]:
    """Twelve earlier turns about travel plans, one with a weather lookup."""
    turns: list[BaseMessage] = []
    for day in range(1, 6):
        turns.append(HumanMessage(f"Day {day}: what should we visit? " + "Tell me more. " * 6))
        turns.append(AIMessage(f"On day {day}, visit the old town and the museum. " * 3))
    turns.append(HumanMessage("Will it rain on day 6?"))
    turns.append(
        AIMessage("", tool_calls=[{"name": "forecast", "args": {"day": 6}, "id": "call_forecast"}])
    )
    turns.append(
        ToolMessage("Day 6: light rain in the morning, 14 °C.", tool_call_id="call_forecast")
    )
    turns.append(AIMessage("Light rain in the morning on day 6; bring an umbrella."))
    return turns


class ReportPrinter(BaseCallbackHandler):
    """Receives the selection report through LangChain's callback system (the event's
    data is JSON-ready; report_from_event gives the SelectionReport)."""

    def __init__(self) -> None:
        self.reports: list[SelectionReport] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        print(
            f"[{name}] {data['component']}: {data['included']} kept, {data['excluded']} left "
            f"out, {data['included_tokens']}/{data['max_tokens']} tokens"
        )
        self.reports.append(report_from_event(data))


def main() -> None:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a helpful travel assistant."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    selector = CupelMessageSelector(max_tokens=200)
    model = FakeListChatModel(responses=["Day 7: take the boat tour."])
    chain = prompt | selector | model | StrOutputParser()

    printer = ReportPrinter()
    answer = chain.invoke(
        {"history": chat_history(), "question": "And on day 7?"},
        config={"callbacks": [printer]},
    )
    print(f"answer: {answer}")

    report = printer.reports[-1]
    print("\nwhat the model saw:")
    for entry in report.included:
        print(f"  {entry.reason.value:<7} {entry.item.tokens:>4} tok  {entry.item.content[:60]!r}")
    print("left out:")
    for left_out in report.excluded:
        print(f"  {left_out.item.content[:30]!r:<33} {left_out.reason.describe()}")

    selected = selector.invoke(prompt.invoke({"history": chat_history(), "question": "Day 7?"}))
    # within budget by cupel's count: the messages and the reply's tokens
    assert sum(approximate_message_tokens(m) for m in selected) + REPLY_TOKENS <= 200
    assert tool_call_problems(selected) == []


if __name__ == "__main__":
    main()
