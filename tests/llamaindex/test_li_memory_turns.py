"""CupelChatMemory's turns against fresh computations: the roles and counts of a counting
that remembers texts against a fresh full count through every kind of change (a message
edited in place, a message changed under its id), the tool-free window's own walk
against the pipeline's run, and concurrent turns on memories that share their counting
against fresh memories."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import words
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.storage.chat_store import SimpleChatStore

from benchmarks.bill_cases import png
from cupel import ContextBudget, PinnedBudgetError, Pipeline, RecencyWindowSlice
from cupel.conversation import Conversation, HistoryItems, tool_free_window
from cupel_llamaindex import CupelChatMemory
from cupel_llamaindex._reading import (
    Counting,
    conversation_role,
    read_messages,
    read_roles,
)

_TEXTS = st.sampled_from(["", "alpha", "alpha beta", "gamma delta epsilon", "ok ok"])
_ROLES = [
    MessageRole.USER,
    MessageRole.ASSISTANT,
    MessageRole.SYSTEM,
    MessageRole.TOOL,
    MessageRole.DEVELOPER,
    MessageRole.MODEL,
]


def _split(text: str) -> list[str]:
    return text.split()


def _doubled(text: str) -> list[str]:
    return text.split() * 2


def _image(data: st.DataObject) -> ImageBlock:
    side = data.draw(st.sampled_from([16, 512, 2000]))
    return ImageBlock(image=png(side, side // 2))


def _message(data: st.DataObject) -> ChatMessage:
    kind = data.draw(st.sampled_from(["text", "text", "text", "call", "result", "image"]))
    if kind == "image":
        return ChatMessage(role="user", blocks=[TextBlock(text="look"), _image(data)])
    if kind == "call":
        return ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={"a": 1})],
        )
    if kind == "result":
        return ChatMessage(role="tool", content="42", additional_kwargs={"tool_call_id": "c1"})
    return ChatMessage(role=data.draw(st.sampled_from(_ROLES)), content=data.draw(_TEXTS))


def _change(messages: list[ChatMessage], data: st.DataObject) -> None:
    """One change to the history: appended, removed, replaced (an equal copy or another
    message), inserted, or a message edited in place (text, role, tool-call link, an
    image of another size)."""
    edit = data.draw(
        st.sampled_from(
            [
                "append",
                "append",
                "pop",
                "replace last",
                "copy",
                "insert",
                "delete",
                "freed",
                "text",
                "role",
                "image",
            ]
        )
    )
    index = data.draw(st.integers(0, len(messages) - 1)) if messages else None
    if edit == "append" or index is None:
        messages.append(_message(data))
    elif edit == "pop":
        messages.pop()
    elif edit == "replace last":
        messages[-1] = _message(data)
    elif edit == "copy":
        messages[index] = messages[index].model_copy(deep=True)
    elif edit == "insert":
        messages.insert(index, _message(data))
    elif edit == "delete":
        del messages[index]
    elif edit == "freed":  # freed, then a new message (often at the freed one's address)
        del messages[index]
        gc.collect()
        messages.insert(index, _message(data))
    elif edit == "text":
        blocks = messages[index].blocks
        if blocks and isinstance(blocks[0], TextBlock):
            blocks[0].text = data.draw(_TEXTS)  # in place: same message, list and block
        else:
            messages[index].additional_kwargs["tool_call_id"] = "c2"
    elif edit == "image":
        blocks = messages[index].blocks
        images = [i for i, block in enumerate(blocks) if isinstance(block, ImageBlock)]
        if images:
            blocks[images[0]] = _image(data)  # in place: the same message and list
        else:
            blocks.append(_image(data))
    else:
        messages[index].role = data.draw(st.sampled_from(_ROLES))


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_counts_equal_a_fresh_full_count_through_changes(data: st.DataObject) -> None:
    messages = [_message(data) for _ in range(data.draw(st.integers(0, 8)))]
    countings = {  # one each, as a memory keeps its counting while its settings stay
        "split": Counting(_split),
        "doubled": Counting(_doubled),
        "anthropic": Counting(_split, "anthropic"),
        "counter": Counting(_split, message_token_counter=words),
    }
    fresh = {
        "split": lambda: Counting(_split),
        "doubled": lambda: Counting(_doubled),
        "anthropic": lambda: Counting(_split, "anthropic"),
        "counter": lambda: Counting(_split, message_token_counter=words),
    }
    for _ in range(data.draw(st.integers(1, 10))):
        name = data.draw(st.sampled_from(sorted(countings)))
        counting = countings[name]
        read = read_messages(messages)
        counts = counting.counts(read)
        assert read_roles(read) == [conversation_role(m) for m in messages]
        assert counts == fresh[name]().counts(read_messages(messages))
        assert counts == [fresh[name]().message(m) for m in messages]  # one by one
        _change(messages, data)


@pytest.mark.parametrize("counter", ["tokenizer", "message_token_counter"])
def test_a_message_changed_under_its_id_is_counted_anew(counter: str) -> None:
    """The stored message keeps its ``id`` but gets a longer text between two ``get()``
    calls (the case of a freed message whose address a new one takes, made deterministic):
    the next ``get()`` counts the new text, as a fresh memory does (a count kept by ``id``
    would give the old one's, and a window over the budget)."""
    per_message = {"message_token_counter": words}.get(counter)
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(3),
        token_limit=60,
        tokenizer_fn=_split,
        message_token_counter=per_message,
    )
    memory.put(ChatMessage(role="user", content="short"))
    memory.get()
    last = memory.get_all()[-1]
    before = id(last)
    last.blocks = [TextBlock(text="word " * 30)]
    assert id(memory.get_all()[-1]) == before
    window = memory.get()
    fresh = CupelChatMemory(
        token_limit=60,
        tokenizer_fn=_split,
        message_token_counter=per_message,
        chat_store=memory.chat_store,
    ).get()
    assert [id(m) for m in window] == [id(m) for m in fresh]
    report = memory.last_report
    assert report is not None and report.included[-1].item.tokens == (
        31 if per_message is not None else 33
    )


def _pipeline(name: str) -> Pipeline:
    pipeline = Pipeline.from_policy("chat")
    if name == "no blocks":
        pipeline.slicer = RecencyWindowSlice(None)
    elif name == "low water":
        pipeline.slicer = RecencyWindowSlice(low_water=0.5)
    return pipeline


@settings(max_examples=examples(400), deadline=None)
@given(
    roles=st.lists(st.sampled_from(["system", "user", "assistant", "user", "assistant"])),
    data=st.data(),
)
def test_the_tool_free_walk_equals_the_pipelines_run(roles: list[str], data: st.DataObject) -> None:
    """``tool_free_window`` against ``HistoryItems.select`` with a report (the pipeline
    runs on the items): ties (equal counts), zero-token messages, budgets from 0 to
    everything, an output reserve and a safety margin, each budget used twice."""
    tokens = [data.draw(st.sampled_from([0, 1, 2, 3, 5, 8])) for _ in roles]
    total = sum(tokens)
    limit = data.draw(st.sampled_from([0, 1, 4, total // 2, total, total + 1]))
    reserve = data.draw(st.sampled_from([0, 0, 2]))
    budget = ContextBudget(
        max_tokens=limit + reserve,
        target_tokens=limit,
        output_reserve=reserve,
        estimation_safety_margin_percent=data.draw(st.sampled_from([0.0, 0.0, 25.0])),
    )
    pipeline = _pipeline(data.draw(st.sampled_from(["chat", "no blocks", "low water"])))
    options: dict[str, Any] = {
        "keep_system": data.draw(st.booleans()),
        "keep_latest_user": data.draw(st.booleans()),
    }
    start_on = data.draw(st.sampled_from([frozenset(), frozenset({"user"})]))
    fast = tool_free_window(roles, tokens, pipeline, budget, start_on=start_on, **options)
    assert tool_free_window(roles, tokens, pipeline, budget, start_on=start_on, **options) == fast
    history = HistoryItems.from_conversation(
        Conversation(roles), [f"m{i}" for i in range(len(roles))], tokens, **options
    )
    try:
        window = history.select(pipeline, budget, with_report=True, start_on=start_on)
    except PinnedBudgetError:
        assert fast is None
        return
    pinned = sum(tokens[i] for i in history.messages_at(history.pinned))
    if fast is None:  # the pinned messages exceed the target, or a cache-stable window
        slicer = pipeline.slicer
        assert isinstance(slicer, RecencyWindowSlice)
        assert slicer.low_water is not None or pinned > min(limit, budget.max_tokens - reserve)
    else:
        assert fast == window.messages


def _turns(count: int) -> list[ChatMessage]:
    out = [ChatMessage(role="system", content="be brief")]
    for t in range(count):
        out.append(ChatMessage(role="user", content=f"question {t} with some words"))
        out.append(ChatMessage(role="assistant", content=f"answer {t} with more words here"))
    return out


def test_concurrent_turns_on_memories_sharing_their_counting_equal_fresh_memories() -> None:
    """Copies of one memory share its counting (and the counts it remembers): turns on
    each from several threads, each over its own store, select as a fresh memory."""
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(6), token_limit=30, tokenizer_fn=_split
    )
    failures: list[str] = []

    def turns(number: int) -> None:
        mine = memory.model_copy()
        mine.chat_store = SimpleChatStore()
        mine.set(_turns(3 + number))
        for turn in range(60):
            mine.put(
                ChatMessage(
                    role="user", content=f"thread {number} turn {turn} " + "word " * (turn % 7)
                )
            )
            window = mine.get()
            fresh = CupelChatMemory(
                token_limit=30, tokenizer_fn=_split, chat_store=mine.chat_store
            ).get()
            if [id(m) for m in window] != [id(m) for m in fresh]:
                failures.append(f"thread {number}, turn {turn}")
            mine.chat_store.delete_last_message(mine.chat_store_key)

    threads = [threading.Thread(target=turns, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_chat_turns_leave_no_reference_cycles() -> None:
    """A ``get()`` leaves nothing to the garbage collector (``ChatMemoryBuffer`` does not
    either): a chat turn on a tool-free history, one with a tool call (the mapped
    selection), and a repeated ``get()``."""
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(6), token_limit=30, tokenizer_fn=_split
    )
    calls = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={})],
    )
    result = ChatMessage(role="tool", content="4", additional_kwargs={"tool_call_id": "c1"})

    def turns() -> None:
        for turn in range(20):
            memory.put(ChatMessage(role="user", content=f"question {turn}"))
            memory.get()
            memory.get()
            memory.chat_store.delete_last_message(memory.chat_store_key)

    turns()
    memory.put_messages([calls, result])
    turns()  # warm: the pipeline, budgets and counts are made
    gc.collect()
    gc.disable()
    try:
        turns()
        memory.chat_store.delete_last_message(memory.chat_store_key)
        memory.chat_store.delete_last_message(memory.chat_store_key)
        turns()
    finally:
        gc.enable()
    assert gc.collect() == 0
