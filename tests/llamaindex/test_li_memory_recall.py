"""CupelChatMemory's recall: the last mapping and plain window are returned again while
the history reads the same. Agreement with a fresh memory (which maps and selects from
scratch) on random histories, budgets, settings and edits of the stored messages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from li_testkit import counting_split, recording, words
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from test_li_properties import histories

from cupel import (
    ContextBudget,
    CupelError,
    GreedySlice,
    PinnedBudgetError,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
)
from cupel.conversation import Conversation, HistoryItems, tool_free_window
from cupel_llamaindex import CupelChatMemory
from cupel_llamaindex import _memory_selection as memory_module

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
        memory.token_limit = data.draw(st.integers(1, 120))
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
        token_limit=data.draw(st.integers(1, limit)),
        tokenizer_fn=_split,
        message_token_counter=words if counter == "counter" else None,
        pipeline=pipeline,
        pin_system=data.draw(st.booleans()),
        pin_last_user=data.draw(st.booleans()),
        start_on_user=data.draw(st.booleans()),
    )


@settings(max_examples=200, deadline=None)
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
        assert _outcome(memory, initial) == expected  # the recalled window, when one is
        if data.draw(st.booleans()):
            with listening() as recorder:  # a listener: the report is built with the window
                assert _outcome(memory, initial) == expected
            assert len(recorder.events) == (expected[0] == "window")


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Selections made: ``HistoryItems.select`` and the tool-free window of roles and
    counts (``tool_free_window``; it returns ``None`` when select must run instead)."""
    calls = {"select": 0}
    select = HistoryItems.select
    tool_free = memory_module.tool_free_window

    def counted(self: HistoryItems, *args: Any, **kwargs: Any) -> Any:
        calls["select"] += 1
        return select(self, *args, **kwargs)

    def counted_tool_free(*args: Any, **kwargs: Any) -> Any:
        window = tool_free(*args, **kwargs)
        calls["select"] += window is not None
        return window

    monkeypatch.setattr(HistoryItems, "select", counted)
    monkeypatch.setattr(memory_module, "tool_free_window", counted_tool_free)
    return calls


def _turns(count: int) -> list[ChatMessage]:
    out = []
    for t in range(count):
        out.append(ChatMessage(role="user", content=f"question {t} with some words"))
        out.append(ChatMessage(role="assistant", content=f"answer {t} with more words here"))
    return out


def test_a_repeated_get_neither_counts_nor_selects_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    counted, tokenizer = counting_split()

    history = _turns(5)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=20, tokenizer_fn=tokenizer
    )
    first = memory.get()
    assert calls["select"] == 1 and len(counted) == len(history)
    report = memory.last_report
    selected = calls["select"]  # the report's selection, when the window was tool-free
    second = memory.get()
    assert second == first and second is not first  # a new list, the same objects
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert calls["select"] == selected and len(counted) == len(history)
    assert memory.last_report is report  # built once, for the one selection made
    memory.get(initial_token_count=3)  # another budget: selected again
    assert calls["select"] == selected + 1


def test_a_mutated_or_appended_store_is_seen_on_the_next_get() -> None:
    store = SimpleChatStore()
    history = _turns(4)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, chat_store=store, token_limit=25, tokenizer_fn=str.split
    )
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
        chat_history=history, token_limit=25, tokenizer_fn=str.split, pipeline=pipeline
    )
    for window_slicer in (RecencyWindowSlice(), GreedySlice(), RecencyWindowSlice(None)):
        pipeline.slicer = window_slicer
        assert memory.get() == _fresh(memory).get()
    pipeline.scorer = RecencyScorer()
    assert memory.get() == _fresh(memory).get()
    # The slicer's settings changed in place (the same slicer object).
    slicer = RecencyWindowSlice()
    pipeline.slicer = slicer
    memory.token_limit = 17
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
        chat_history=_turns(4), token_limit=25, tokenizer_fn=str.split
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
def test_any_change_the_window_depends_on_selects_again(
    change: Callable[[CupelChatMemory, Pipeline], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _counting(monkeypatch)
    pipeline = Pipeline.from_policy("chat")
    history = [ChatMessage(role="system", content="be brief"), *_turns(4)]
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=25, tokenizer_fn=_split, pipeline=pipeline
    )
    memory.get()
    memory.get()
    assert calls["select"] == 1
    change(memory, pipeline)
    window = memory.get()
    assert calls["select"] == 2
    assert [id(m) for m in window] == [id(m) for m in _fresh(memory).get()]


# -- the tool-free window (roles and counts alone) against the mapped selection ---------------
_TOOL_FREE_ROLES = [
    MessageRole.USER,
    MessageRole.USER,
    MessageRole.ASSISTANT,
    MessageRole.ASSISTANT,
    MessageRole.SYSTEM,
    MessageRole.DEVELOPER,
    MessageRole.MODEL,
    MessageRole.CHATBOT,
]


@st.composite
def tool_free_histories(draw: st.DrawFn) -> list[ChatMessage]:
    """System, developer, user and assistant (model, chatbot) messages, no tool calls;
    texts may be empty and repeated."""
    return [
        ChatMessage(role=draw(st.sampled_from(_TOOL_FREE_ROLES)), content=draw(_WORDS))
        for _ in range(draw(st.integers(0, 14)))
    ]


def _mapped(memory: CupelChatMemory, initial: int) -> tuple[Any, ...]:
    """The outcome of a fresh memory selecting from the history's mapping (a listener
    makes it build the report with the window: the roles-and-counts path is not taken)."""
    with listening():
        return _outcome(_fresh(memory), initial)


def _pipelines() -> st.SearchStrategy[Pipeline | None]:
    return st.sampled_from(
        [
            None,
            "chat",
            "no blocks",
            "low water",
            "greedy",
            "tool_use",
        ]
    ).map(_pipeline)


def _pipeline(name: str | None) -> Pipeline | None:
    if name is None:
        return None
    pipeline = Pipeline.from_policy("tool_use" if name == "tool_use" else "chat")
    if name == "no blocks":
        pipeline.slicer = RecencyWindowSlice(None)
    elif name == "low water":
        pipeline.slicer = RecencyWindowSlice(low_water=0.5)
    elif name == "greedy":
        pipeline.slicer = GreedySlice()
    return pipeline


def _turn_edit(memory: CupelChatMemory, edit: str, data: st.DataObject) -> None:
    """A chat turn's changes: a new message put (or deleted again), an edit in place,
    a replaced message, a tool call or result appended, a setting changed."""
    stored = memory.get_all()
    index = None
    if stored:
        back = data.draw(st.one_of(st.integers(0, 2), st.integers(0, len(stored) - 1)))
        index = max(0, len(stored) - 1 - back)
    if edit == "put":
        role = data.draw(st.sampled_from(_TOOL_FREE_ROLES))
        memory.put(ChatMessage(role=role, content=data.draw(_WORDS)))
    elif edit == "delete" and stored:
        memory.chat_store.delete_last_message(memory.chat_store_key)
    elif edit == "text" and index is not None:
        blocks = stored[index].blocks
        if blocks and isinstance(blocks[0], TextBlock):
            blocks[0].text = data.draw(_WORDS)  # in place
    elif edit == "role" and index is not None:
        stored[index].role = data.draw(st.sampled_from(_TOOL_FREE_ROLES))
    elif edit == "replace" and index is not None:
        stored[index] = stored[index].model_copy(deep=True)
    elif edit == "tool call":
        memory.put(
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id="c9", tool_name="f", tool_kwargs={})],
            )
        )
        if data.draw(st.booleans()):
            memory.put(
                ChatMessage(role="tool", content="ok", additional_kwargs={"tool_call_id": "c9"})
            )
    elif edit == "tool result":  # a stray result: the history is no longer tool-free
        memory.put(ChatMessage(role="tool", content="stray"))
    elif edit == "limit":
        memory.token_limit = data.draw(st.integers(1, 60))
    elif edit == "pins":
        memory.pin_system = data.draw(st.booleans())
        memory.pin_last_user = data.draw(st.booleans())
        memory.start_on_user = data.draw(st.booleans())


_TURN_EDITS = [
    "put",
    "put",
    "delete",
    "delete",
    "text",
    "role",
    "replace",
    "tool call",
    "tool result",
    "limit",
    "pins",
    "none",
]


@settings(max_examples=300, deadline=None)
@given(history=tool_free_histories(), pipeline=_pipelines(), data=st.data())
def test_the_tool_free_window_equals_the_mapped_selection_through_turns(
    history: list[ChatMessage], pipeline: Pipeline | None, data: st.DataObject
) -> None:
    memory = _drawn_memory(history, data, limit=60, pipeline=pipeline)
    for _ in range(data.draw(st.integers(1, 8))):
        _turn_edit(memory, data.draw(st.sampled_from(_TURN_EDITS)), data)
        # Budgets from 0 (initial == token_limit) to everything (initial 0).
        initial = data.draw(st.integers(0, memory.token_limit))
        expected = _mapped(memory, initial)
        assert _outcome(memory, initial) == expected
        assert _outcome(memory, initial) == expected  # recalled
        assert _outcome(_fresh(memory), initial) == expected  # a fresh memory, no listener


@settings(max_examples=300, deadline=None)
@given(
    roles=st.one_of(
        st.lists(st.sampled_from(["system", "user", "assistant", "user", "assistant"])),
        st.lists(st.sampled_from(["system", "user", "assistant", "tool", "other"])),
    ),
    data=st.data(),
)
def test_tool_free_window_is_the_selected_window_of_the_conversation(
    roles: list[str], data: st.DataObject
) -> None:
    """The conversation layer: ``tool_free_window`` against ``HistoryItems.select``
    (ties: equal token counts; edge budgets: 0, exactly the pinned tokens, everything)."""
    tokens = [data.draw(st.sampled_from([0, 1, 2, 3, 5, 8])) for _ in roles]
    total = sum(tokens)
    limit = data.draw(st.sampled_from([0, 1, total // 2, total, total + 1, 7]))
    budget = ContextBudget(max_tokens=limit, target_tokens=limit)
    pipeline = _pipeline(data.draw(st.sampled_from(["chat", "no blocks", "low water", "greedy"])))
    assert pipeline is not None
    keep_system, keep_latest_user = data.draw(st.booleans()), data.draw(st.booleans())
    start_on = data.draw(st.sampled_from([frozenset(), frozenset({"user"})]))
    fast = tool_free_window(
        roles,
        tokens,
        pipeline,
        budget,
        keep_system=keep_system,
        keep_latest_user=keep_latest_user,
        start_on=start_on,
    )
    history = HistoryItems.from_conversation(
        Conversation(roles),
        [f"m{i}" for i in range(len(roles))],
        tokens,
        keep_system=keep_system,
        keep_latest_user=keep_latest_user,
    )
    try:
        window = history.select(pipeline, budget, with_report=False, start_on=start_on)
    except PinnedBudgetError:
        assert fast is None
        return
    if fast is None:
        assert (
            "tool" in roles
            or "other" in roles
            or type(pipeline.slicer) is not RecencyWindowSlice
            or sum(tokens[i] for i in history.messages_at(history.pinned)) > limit
        )
    else:
        assert "tool" not in roles and "other" not in roles
        assert fast == window.messages
        assert window.plain


def test_a_chat_turn_on_a_tool_free_history_is_selected_without_a_mapping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mapped = {"count": 0}
    map_read = memory_module.map_read

    def counted(*args: Any, **kwargs: Any) -> Any:
        mapped["count"] += 1
        return map_read(*args, **kwargs)

    monkeypatch.setattr(memory_module, "map_read", counted)
    history = [ChatMessage(role="system", content="be brief"), *_turns(5)]
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=30, tokenizer_fn=str.split
    )
    for number in range(3):
        memory.put(ChatMessage(role="user", content=f"question {number} again"))
        window = memory.get()
        assert window[-1] is memory.get_all()[-1] and window[0] is history[0]
        memory.chat_store.delete_last_message(memory.chat_store_key)
    assert mapped["count"] == 0
    report = memory.last_report  # the report maps the history and selects again
    assert mapped["count"] == 1 and report is not None
    assert [i.item.content for i in report.included][-1].endswith("question 2 again")


def test_a_report_that_selects_otherwise_than_the_tool_free_window_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def wrong(*args: Any, **kwargs: Any) -> list[int] | None:
        window = tool_free_window(*args, **kwargs)
        return None if window is None else window[1:]

    monkeypatch.setattr(memory_module, "tool_free_window", wrong)
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(3), token_limit=100, tokenizer_fn=str.split
    )
    assert len(memory.get()) == 5
    with pytest.raises(CupelError, match="differs from the one get"):
        memory.last_report  # noqa: B018
