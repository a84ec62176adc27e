"""trim_messages vs cupel on a chat history with tool calls (run: python this_file.py).

``trim_messages`` cuts the history at a message boundary, so it can keep a tool result
without the call that produced it (``strategy="last"``) or a tool call without its
results (``strategy="first"``); chat-model providers reject both with HTTP 400. cupel
keeps each tool call and its results together, so every selection is a valid sequence.
"""

from __future__ import annotations

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from cupel_langchain import select_messages, tool_call_problems


def history() -> list[BaseMessage]:
    """A support chat: the agent explained its plan, then looked the order up with a tool."""
    return [
        SystemMessage("You are a support agent for an online shop."),
        HumanMessage("Where is my order 1042?"),
        AIMessage(
            "I will look up order 1042 in the order system, then check the carrier's "
            "tracking page and the warehouse log, so that I can give you an exact date.",
            tool_calls=[{"name": "order_status", "args": {"order": 1042}, "id": "call_1"}],
        ),
        ToolMessage(
            "order 1042: shipped 2025-05-02 via DHL, tracking DE123456789, "
            "expected delivery 2025-05-06",
            tool_call_id="call_1",
        ),
        AIMessage("Your order shipped on May 2 and should arrive on May 6."),
        HumanMessage("Great, can I still change the delivery address?"),
    ]


BUDGET = 100


def describe(messages: list[BaseMessage]) -> str:
    return " > ".join(m.type for m in messages)


def compare(max_tokens: int) -> dict[str, list[BaseMessage]]:
    """The three selections at one budget, counted with count_tokens_approximately."""
    messages = history()
    return {
        'trim_messages(strategy="last")': trim_messages(
            messages,
            max_tokens=max_tokens,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
        ),
        'trim_messages(strategy="first")': trim_messages(
            messages,
            max_tokens=max_tokens,
            strategy="first",
            token_counter=count_tokens_approximately,
        ),
        "cupel select_messages": select_messages(
            messages, max_tokens=max_tokens, token_counter=count_tokens_approximately
        ),
    }


def main() -> None:
    print(f"history: {describe(history())} ({count_tokens_approximately(history())} tokens)")
    print(f"max_tokens={BUDGET}")
    for name, selected in compare(BUDGET).items():
        problems = tool_call_problems(selected)
        verdict = "valid" if not problems else "INVALID: " + "; ".join(problems)
        print(f"  {name:<31} {describe(selected)}")
        print(f"  {'':<31} {count_tokens_approximately(selected)} tokens, {verdict}")


if __name__ == "__main__":
    main()
