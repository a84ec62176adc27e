"""CupelChatMemory's tool-free window (roles and counts alone, no mapping) against the
mapped selection: through chat turns, at the conversation layer, and its report."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from test_li_memory_recall import _WORDS, _drawn_memory, _fresh, _outcome, _turns, listening

from cupel import (
    ContextBudget,
    CupelError,
    GreedySlice,
    PinnedBudgetError,
    Pipeline,
    RecencyWindowSlice,
)
from cupel.conversation import Conversation, HistoryItems, tool_free_window
from cupel_llamaindex import CupelChatMemory
from cupel_llamaindex import _memory_selection as memory_module

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
        memory.token_limit = data.draw(st.integers(4, 60))  # more than the reply's 3
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


@settings(max_examples=examples(300), deadline=None)
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


@settings(max_examples=examples(300), deadline=None)
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
            or pipeline.slicer.low_water is not None  # cache-stable: replayed by select
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
