"""trim_messages vs cupel, side by side (run: python this_file.py).

``trim_messages``' recommended setup for chat models is ``strategy="last",
include_system=True, start_on="human"``: keep the newest messages that fit, then drop
leading messages until one is a human message. On a plain chat it keeps the newest whole
turns — so does cupel's default window. Where they differ:

1. **An agent run** (one task, then many tool rounds): every message after the task is an
   AI tool call or a tool result, so ``start_on="human"`` drops them all and the model gets
   the system prompt alone. cupel keeps the task and the newest tool rounds that fit.
2. **A history from a real store** (a late tool result, a duplicate result, an unanswered
   call): ``trim_messages`` passes whatever it cut through, and the provider rejects the
   request (HTTP 400). cupel leaves the broken units out and reports why.
3. Without ``start_on`` (``trim_messages``' default), ``strategy="last"`` can start the
   window with a tool result whose call was cut off, and ``strategy="first"`` can end it
   with a call whose result was cut off.

Each side counts with its own default: ``trim_messages`` with
``count_tokens_approximately`` (as LangChain's docs set it up), cupel with its own count
(``"approximate"``: text by an estimate of cl100k_base tokens, 3 tokens per message, the
reply's 3 tokens reserved), and each selection's tokens are printed by its own counter.
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

from cupel.counting import REPLY_TOKENS
from cupel_langchain import approximate_message_tokens, select_messages, tool_call_problems


def chat() -> list[BaseMessage]:
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
        AIMessage("Yes, until it reaches the local depot. What is the new address?"),
        HumanMessage("Rathausplatz 1, 20095 Hamburg."),
    ]


def agent_run() -> list[BaseMessage]:
    """One task, then tool rounds (the history an agent's model sees on its 8th call)."""
    messages: list[BaseMessage] = [
        SystemMessage("You are an on-call assistant with shell access."),
        HumanMessage("Find out why checkout latency doubled since the 14:00 deploy."),
    ]
    for i in range(7):
        call_id = f"call_{i}"
        messages.append(
            AIMessage(
                f"Checking source {i}.",
                tool_calls=[{"name": "run", "args": {"cmd": f"check {i}"}, "id": call_id}],
            )
        )
        messages.append(ToolMessage(f"source {i}: " + "ok " * 25, tool_call_id=call_id))
    return messages


def messy_chat() -> list[BaseMessage]:
    """The chat as a store may hold it: a tool result arrived after the user spoke again."""
    messages = chat()
    late = messages.pop(3)  # the order lookup's result ...
    messages.insert(5, late)  # ... stored after the next human message
    return messages


def recommended_trim(messages: list[BaseMessage], max_tokens: int) -> list[BaseMessage]:
    """``trim_messages`` as LangChain's docs recommend for chat models."""
    return trim_messages(
        messages,
        max_tokens=max_tokens,
        strategy="last",
        token_counter=count_tokens_approximately,
        include_system=True,
        start_on="human",
    )


def compare(messages: list[BaseMessage], max_tokens: int) -> dict[str, list[BaseMessage]]:
    """The selections at one budget, each with its default counter."""
    return {
        "trim_messages (recommended)": recommended_trim(messages, max_tokens),
        'trim_messages(strategy="last")': trim_messages(
            messages,
            max_tokens=max_tokens,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
        ),
        "cupel select_messages": select_messages(messages, max_tokens=max_tokens),
    }


def describe(messages: list[BaseMessage]) -> str:
    return " > ".join(m.type for m in messages) or "(nothing)"


def cupel_tokens(messages: list[BaseMessage]) -> int:
    """What a request of ``messages`` costs by cupel's count: the messages and the reply."""
    return sum(approximate_message_tokens(m) for m in messages) + REPLY_TOKENS


def tokens(name: str, messages: list[BaseMessage]) -> int:
    """A selection's tokens by the counter it was made with."""
    if name.startswith("cupel"):
        return cupel_tokens(messages)
    return count_tokens_approximately(messages)


CASES = {"chat": (chat, 120), "agent run": (agent_run, 160), "messy chat": (messy_chat, 120)}


def main() -> None:
    for case, (build, budget) in CASES.items():
        history = build()
        totals = f"{count_tokens_approximately(history)} tokens, {cupel_tokens(history)} by cupel"
        print(f"{case}: {describe(history)} ({totals}), max_tokens={budget}")
        for name, selected in compare(history, budget).items():
            problems = tool_call_problems(selected)
            verdict = "valid" if not problems else "INVALID: " + "; ".join(problems)
            print(f"  {name:<31} {describe(selected)}")
            print(f"  {'':<31} {tokens(name, selected)} tokens, {verdict}")
        print()


if __name__ == "__main__":
    main()
