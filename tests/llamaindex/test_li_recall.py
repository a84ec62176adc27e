"""The ``recall`` preset through the LlamaIndex memories: an early fact comes back with its
question when the latest user message asks about it, as the same message objects, valid
and within the limit, and the report says why."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import provider_problems as tool_call_problems
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock

from cupel import PinnedBudgetError
from cupel_llamaindex import CupelChatMemory, CupelMemory

SMALL_TALK = [
    ("It rained all day again.", "Grey skies here too, I stayed in."),
    ("I tried a new pasta recipe.", "Nice, was it any good?"),
    ("Work was busy this week.", "Hope the weekend is calmer."),
    ("The train was late this morning.", "Classic Monday."),
]
FACT = "My sister Mara moved to Lisbon in March."
QUESTION = "Which city does my sister live in now?"


def conversation(rounds: int = 12) -> list[ChatMessage]:
    """A system prompt, a fact stated early (with a tool round), small talk, then a
    question about the fact."""
    history = [
        ChatMessage(role=MessageRole.SYSTEM, content="You are a friendly assistant."),
        ChatMessage(role=MessageRole.USER, content=FACT),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="save_note", tool_kwargs={})],
        ),
        ChatMessage(
            role=MessageRole.TOOL, content="saved", additional_kwargs={"tool_call_id": "c1"}
        ),
        ChatMessage(role=MessageRole.ASSISTANT, content="Lisbon is lovely, I noted it."),
    ]
    for i in range(rounds):
        question, reply = SMALL_TALK[i % len(SMALL_TALK)]
        history.append(ChatMessage(role=MessageRole.USER, content=f"{question} ({i})"))
        history.append(ChatMessage(role=MessageRole.ASSISTANT, content=f"{reply} ({i})"))
    history.append(ChatMessage(role=MessageRole.USER, content=QUESTION))
    return history


def positions(window: list[ChatMessage], history: list[ChatMessage]) -> list[int]:
    return [next(i for i, m in enumerate(history) if m is kept) for kept in window]


LIMIT = 160


def test_chat_memory_recalls_the_early_turn_whole() -> None:
    history = conversation()
    chat = CupelChatMemory.from_defaults(chat_history=list(history), token_limit=LIMIT).get()
    assert history[1] not in chat
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=LIMIT, policy="recall"
    )
    window = memory.get()
    kept = positions(window, history)  # the same objects
    assert kept[:5] == [0, 1, 2, 3, 4] and kept[-1] == len(history) - 1
    assert tool_call_problems(window) == []
    report = memory.last_report
    assert report is not None
    (unit,) = report.recalled
    assert unit.terms == ("sister",) and unit.score > 0
    assert FACT in unit.items[-1].content


def test_the_query_is_the_message_text_not_its_label() -> None:
    """LlamaIndex items read ``"[position] role: text"``: the query is the text alone, so a
    turn is not recalled for sharing the word ``user`` with it."""
    history = [
        ChatMessage(role=MessageRole.USER, content="Pasta again tonight."),
        ChatMessage(role=MessageRole.ASSISTANT, content="Sounds good."),
        *conversation(6)[5:],
    ]
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=80, policy="recall"
    )
    memory.get()
    assert memory.last_report is not None
    assert all("user" not in unit.terms for unit in memory.last_report.recalled)


def test_cupel_memory_recalls_too() -> None:
    history = conversation()
    memory = CupelMemory.from_defaults(token_limit=LIMIT, policy="recall")
    memory.put_messages(list(history))
    window = memory.get()
    contents = [m.content for m in window]
    assert FACT in contents and contents[-1] == QUESTION
    assert tool_call_problems(window) == []


def test_cache_stable_recall_puts_the_recalled_turn_before_the_question() -> None:
    history = conversation()
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=LIMIT, policy="recall", cache_stable=True
    )
    kept = positions(memory.get(), history)
    at = kept.index(1)
    assert kept[at : at + 5] == [1, 2, 3, 4, len(history) - 1]
    assert kept[0] == 0


@settings(max_examples=examples(50), deadline=None)
@given(rounds=st.integers(0, 30), limit=st.integers(40, 400), cache_stable=st.booleans())
def test_recall_windows_are_valid_and_keep_the_question(
    rounds: int, limit: int, cache_stable: bool
) -> None:
    history = conversation(rounds)
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=limit, policy="recall", cache_stable=cache_stable
    )
    try:
        window = memory.get()
    except PinnedBudgetError:
        return
    assert tool_call_problems(window) == []
    assert window[0] is history[0] and window[-1] is history[-1]
    kept = positions(window, history)
    if 1 in kept and 2 in kept:  # recalled: the fact's turn whole
        at = kept.index(1)
        assert kept[at : at + 4] == [1, 2, 3, 4]
