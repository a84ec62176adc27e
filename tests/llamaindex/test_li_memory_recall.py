"""CupelChatMemory against a fresh memory (nothing remembered) on random histories,
budgets, settings and edits of the stored messages: every ``get()`` selects from the
history as it reads now; only text counts are remembered, by text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import counting_split, recording, words
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from test_li_properties import histories

from cupel import (
    CupelError,
    GreedySlice,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
)
from cupel_llamaindex import CupelChatMemory

_WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "ok"]), max_size=12).map(
    " ".join
)
_ROLES = [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL, MessageRole.SYSTEM]


def _split(text: str) -> list[str]:
    return text.split()


def _doubled(text: str) -> list[str]:
    return text.split() * 2


def _outcome(memory: CupelChatMemory, initial: int) -> tuple[Any, ...]:
    """The window (message ids) and report of one ``get()``, or the error it raised."""
    try:
        window = memory.get(initial_token_count=initial)
    except CupelError as exc:
        return ("error", type(exc), str(exc))
    report = memory.last_report
    assert report is not None
    wire = report.to_dict()
    for event in wire["events"]:
        event.pop("duration_ms")  # the only part that differs between two runs
    return ("window", [id(m) for m in window], wire)


listening = contextmanager(recording)


def _fresh(memory: CupelChatMemory) -> CupelChatMemory:
    """A new memory with the same settings over the same store (nothing remembered)."""
    return CupelChatMemory(
        token_limit=memory.token_limit,
        tokenizer_fn=memory.tokenizer_fn,
        message_token_counter=memory.message_token_counter,
        image_tokens=memory.image_tokens,
        headroom=memory.headroom,
        agent_reserve=memory.agent_reserve,
        chat_store=memory.chat_store,
        chat_store_key=memory.chat_store_key,
        policy=memory.policy,
        pipeline=memory.pipeline,
        pin_system=memory.pin_system,
        pin_last_user=memory.pin_last_user,
        start_on_user=memory.start_on_user,
    )


def _edit(memory: CupelChatMemory, edit: str, data: st.DataObject) -> None:
    """Change what the next ``get()`` sees: the stored messages (in place, appended,
    removed, replaced) or a setting."""
    stored = memory.get_all()
    index = None
    if stored:  # mostly among the newest messages, which the window holds
        back = data.draw(st.one_of(st.integers(0, 3), st.integers(0, len(stored) - 1)))
        index = max(0, len(stored) - 1 - back)
    if edit == "append":
        role = data.draw(st.sampled_from(_ROLES))
        memory.put(ChatMessage(role=role, content=data.draw(_WORDS)))
    elif edit == "text" and index is not None:
        blocks = stored[index].blocks
        text = data.draw(_WORDS)
        if blocks and isinstance(blocks[0], TextBlock):
            blocks[0].text = text  # in place: the same message, list and block objects
        else:
            blocks.insert(0, TextBlock(text=text))
    elif edit == "role" and index is not None:
        stored[index].role = data.draw(st.sampled_from(_ROLES))
    elif edit == "link" and index is not None:
        message = stored[index]
        new_id = data.draw(st.sampled_from(["c0", "c1", "c2", "none"]))
        calls = message.additional_kwargs.get("tool_calls")
        if calls:
            calls[0]["id"] = new_id  # nested, in place
        elif any(isinstance(b, ToolCallBlock) for b in message.blocks):
            next(b for b in message.blocks if isinstance(b, ToolCallBlock)).tool_call_id = new_id
        else:
            message.additional_kwargs["tool_call_id"] = new_id
    elif edit == "pop" and stored:
        memory.chat_store.delete_last_message(memory.chat_store_key)
    elif edit == "replace" and index is not None:
        stored[index] = stored[index].model_copy(deep=True)  # equal, not the same object
    elif edit == "limit":
        memory.token_limit = data.draw(st.integers(4, 120))  # more than the reply's 3
    elif edit == "tokenizer":
        memory.tokenizer_fn = _doubled if memory.tokenizer_fn is _split else _split
    elif edit == "pins":
        memory.pin_system = data.draw(st.booleans())
        memory.pin_last_user = data.draw(st.booleans())
        memory.start_on_user = data.draw(st.booleans())
    elif edit == "blocks" and memory.pipeline is not None:
        slicer = memory.pipeline.slicer
        if isinstance(slicer, RecencyWindowSlice):  # in place: the same slicer object
            slicer.block_key = None if slicer.block_key else "cupel:turn"
    elif edit == "slicer" and memory.pipeline is not None:
        memory.pipeline.slicer = data.draw(
            st.sampled_from(
                [
                    RecencyWindowSlice(),
                    RecencyWindowSlice(None),
                    GreedySlice(),
                    RecencyWindowSlice(),
                ]
            )
        )
    elif edit == "policy":
        memory.policy = data.draw(st.sampled_from(["chat", "tool_use", "long_running", "rag"]))


_EDITS = [
    "none",
    "none",
    "append",
    "text",
    "role",
    "link",
    "pop",
    "replace",
    "limit",
    "tokenizer",
    "pins",
    "slicer",
    "blocks",
    "policy",
]


def _drawn_memory(
    history: list[ChatMessage], data: st.DataObject, *, limit: int, pipeline: Pipeline | None
) -> CupelChatMemory:
    """A memory over ``history`` with drawn settings: a budget up to ``limit``, words counted
    by the tokenizer or by a message counter, the pins and ``start_on_user``."""
    counter = data.draw(st.sampled_from(["tokenizer", "counter"]))
    return CupelChatMemory.from_defaults(
        chat_history=history,
        token_limit=data.draw(st.integers(4, limit)),  # more than the reply's 3
        tokenizer_fn=_split,
        message_token_counter=words if counter == "counter" else None,
        pipeline=pipeline,
        pin_system=data.draw(st.booleans()),
        pin_last_user=data.draw(st.booleans()),
        start_on_user=data.draw(st.booleans()),
    )


@settings(max_examples=examples(200), deadline=None)
@given(history=histories(), data=st.data())
def test_every_get_equals_a_fresh_memorys_through_edits_budgets_and_settings(
    history: list[ChatMessage], data: st.DataObject
) -> None:
    explicit = data.draw(st.booleans())
    pipeline = Pipeline.from_policy("chat") if explicit else None
    memory = _drawn_memory(history, data, limit=120, pipeline=pipeline)
    for _ in range(data.draw(st.integers(1, 6))):
        _edit(memory, data.draw(st.sampled_from(_EDITS)), data)
        # Budgets from 0 (initial == token_limit) to everything (initial 0).
        initial = data.draw(st.integers(0, memory.token_limit))
        expected = _outcome(_fresh(memory), initial)
        assert _outcome(memory, initial) == expected
        assert _outcome(memory, initial) == expected  # again, on the unchanged history
        if data.draw(st.booleans()):
            with listening() as recorder:  # a listener: the report is built with the window
                assert _outcome(memory, initial) == expected
            assert len(recorder.events) == (expected[0] == "window")


def _turns(count: int) -> list[ChatMessage]:
    out = []
    for t in range(count):
        out.append(ChatMessage(role="user", content=f"question {t} with some words"))
        out.append(ChatMessage(role="assistant", content=f"answer {t} with more words here"))
    return out


def test_a_repeated_get_counts_no_text_again() -> None:
    counted, tokenizer = counting_split()
    history = _turns(5)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=20, tokenizer_fn=tokenizer
    )
    first = memory.get()
    assert len(counted) == len(history)
    report = memory.last_report
    second = memory.get()
    assert second == first and second is not first  # a new list, the same objects
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert len(counted) == len(history)  # the texts' counts are remembered
    again = memory.last_report
    assert report is not None and again is not None and again is not report
    assert again.included == report.included and again.excluded == report.excluded
    memory.put(ChatMessage(role="user", content="a new question"))
    memory.get()
    assert counted[len(history) :] == ["a new question"]  # only the new text is counted


def test_a_mutated_or_appended_store_is_seen_on_the_next_get() -> None:
    store = SimpleChatStore()
    history = _turns(4)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, chat_store=store, token_limit=37, tokenizer_fn=str.split
    )  # two turns of 8 + 9 tokens (3 per message) and the reply's 3
    stored = store.get_messages("chat_history")
    assert memory.get() == stored[-4:]
    # Edited in place: the block's text, then the message's role.
    stored[-3].blocks[0].text = "word " * 30  # type: ignore[union-attr]
    assert memory.get() == stored[-2:]
    stored[-3].blocks[0].text = "short"  # type: ignore[union-attr]
    assert memory.get() == stored[-4:]
    stored[-1].role = MessageRole.USER
    window = memory.get()
    assert window[-1] is stored[-1] and memory.last_report is not None
    # Appended through the memory and directly to the store's list (the same list object).
    memory.put(ChatMessage(role="assistant", content="a new reply"))
    assert memory.get()[-1] is store.get_messages("chat_history")[-1]
    stored.append(ChatMessage(role="user", content="and a direct append"))
    assert memory.get()[-1] is stored[-1]
    # A tool result's link edited: it no longer answers the call, so the unit is invalid.
    memory.put(
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={})],
        )
    )
    memory.put(ChatMessage(role="tool", content="42", additional_kwargs={"tool_call_id": "c1"}))
    assert memory.get()[-1].role == MessageRole.TOOL
    stored[-1].additional_kwargs["tool_call_id"] = "c2"
    assert all(m.role != MessageRole.TOOL for m in memory.get())
    # The call's id edited in place: the result answers no call made.
    stored[-1].additional_kwargs["tool_call_id"] = "c1"
    assert memory.get()[-1] is stored[-1]
    call = stored[-2].blocks[0]
    assert isinstance(call, ToolCallBlock)
    call.tool_call_id = "c3"
    assert all(m.role != MessageRole.TOOL for m in memory.get())
    call.tool_call_id = "c1"
    assert memory.get()[-1] is stored[-1]
    # Replaced by equal messages: the new objects are returned.
    stored[:] = [message.model_copy(deep=True) for message in stored]
    window = memory.get()
    assert window[-1] is stored[-1] and window[-2] is stored[-2]


def test_a_pipeline_changed_in_place_is_seen_on_the_next_get() -> None:
    pipeline = Pipeline.from_policy("chat")
    history = [ChatMessage(role="user", content="one two three four five six"), *_turns(3)]
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=37, tokenizer_fn=str.split, pipeline=pipeline
    )
    for window_slicer in (RecencyWindowSlice(), GreedySlice(), RecencyWindowSlice(None)):
        pipeline.slicer = window_slicer
        assert memory.get() == _fresh(memory).get()
    pipeline.scorer = RecencyScorer()
    assert memory.get() == _fresh(memory).get()
    # The slicer's settings changed in place (the same slicer object).
    slicer = RecencyWindowSlice()
    pipeline.slicer = slicer
    memory.token_limit = 29  # the last turn (17), its previous answer (9) and the reply (3)
    memory.start_on_user = False
    whole_turns = memory.get()
    assert whole_turns == _fresh(memory).get()
    slicer.block_key = None  # turns no longer kept whole: the last answer of turn 1 fits
    assert memory.get() == _fresh(memory).get() == [history[-3], *whole_turns]


def _variants() -> Iterator[Callable[[CupelChatMemory], CupelChatMemory]]:
    yield lambda memory: memory.model_copy()
    yield lambda memory: memory.model_copy(deep=True)


@pytest.mark.parametrize("copy_of", list(_variants()))
def test_a_copy_over_another_store_selects_from_its_own_history(
    copy_of: Callable[[CupelChatMemory], CupelChatMemory],
) -> None:
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(4), token_limit=37, tokenizer_fn=str.split
    )
    mine = memory.get()
    other = copy_of(memory)
    other.chat_store = SimpleChatStore()
    other.set(_turns(2))
    theirs = other.get()
    assert [id(m) for m in theirs] == [id(m) for m in other.get_all()]
    assert not {id(m) for m in theirs} & {id(m) for m in mine}
    again = memory.get()
    assert again == mine and all(a is b for a, b in zip(again, mine, strict=True))


def _set_slicer(attribute: str, value: object) -> Callable[[CupelChatMemory, Pipeline], None]:
    def change(memory: CupelChatMemory, pipeline: Pipeline) -> None:
        setattr(pipeline.slicer, attribute, value)  # in place: the same slicer object

    return change


def _set_pipeline(attribute: str, value: object) -> Callable[[CupelChatMemory, Pipeline], None]:
    def change(memory: CupelChatMemory, pipeline: Pipeline) -> None:
        setattr(pipeline, attribute, value)

    return change


def _set_memory(attribute: str, value: object) -> Callable[[CupelChatMemory, Pipeline], None]:
    def change(memory: CupelChatMemory, pipeline: Pipeline) -> None:
        setattr(memory, attribute, value)

    return change


@pytest.mark.parametrize(
    "change",
    [
        _set_memory("token_limit", 24),
        _set_memory("start_on_user", False),
        _set_memory("pin_system", False),
        _set_memory("pin_last_user", False),
        _set_memory("tokenizer_fn", _doubled),
        _set_memory("message_token_counter", words),
        _set_memory("pipeline", Pipeline.from_policy("chat")),
        _set_slicer("block_key", None),
        _set_slicer("scored_share", 0.5),
        _set_slicer("low_water", 0.5),
        _set_pipeline("slicer", GreedySlice()),
        _set_pipeline("scorer", RecencyScorer()),
        _set_pipeline("placer", Pipeline.from_policy("chat").placer),
        _set_pipeline("deduplication", True),
    ],
)
def test_any_change_the_window_depends_on_is_seen(
    change: Callable[[CupelChatMemory, Pipeline], None],
) -> None:
    pipeline = Pipeline.from_policy("chat")
    history = [ChatMessage(role="system", content="be brief"), *_turns(4)]
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=25, tokenizer_fn=_split, pipeline=pipeline
    )
    memory.get()
    change(memory, pipeline)
    window = memory.get()
    assert [id(m) for m in window] == [id(m) for m in _fresh(memory).get()]
