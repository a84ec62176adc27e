"""Property tests: random chat histories with tool calls through CupelChatMemory.get()."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import check_window, words
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.storage.chat_store import SimpleChatStore

from benchmarks.window_metrics import (
    expectations,
    last_complete_exchange,
    system_messages,
    task_message,
)
from cupel import PinnedBudgetError
from cupel_llamaindex import CupelChatMemory, messages_to_items

_TEXT = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "ok"]), max_size=12).map(
    " ".join
)


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    """A conversation: optional system prompt, then user / assistant / tool-call groups
    (ToolCallBlocks or OpenAI-style additional_kwargs, parallel calls, results possibly
    out of order or missing), plus what real stores hold: stray tool messages, results
    arriving after the next message (late), results given twice (duplicate)."""
    out: list[ChatMessage] = []
    if draw(st.booleans()):
        out.append(ChatMessage(role="system", content=draw(_TEXT)))
    if draw(st.integers(0, 5)) == 0:
        out.append(ChatMessage(role="tool", content=draw(_TEXT)))  # leading orphan
    call_number = 0
    late: list[str] = []
    for _ in range(draw(st.integers(0, 25))):
        event = draw(
            st.sampled_from(
                ["user", "user", "assistant", "assistant", "tools", "tools", "stray", "late"]
            )
        )
        if late and event in ("user", "assistant"):
            out.append(_tool_result(late.pop(), draw(_TEXT)))
        if event == "user":
            out.append(ChatMessage(role="user", content=draw(_TEXT)))
        elif event == "assistant":
            out.append(ChatMessage(role="assistant", content=draw(_TEXT)))
        elif event == "stray":
            out.append(
                ChatMessage(
                    role="tool", content=draw(_TEXT), additional_kwargs={"tool_call_id": "none"}
                )
            )
        else:
            ids = [f"c{call_number + k}" for k in range(draw(st.integers(1, 3)))]
            call_number += len(ids)
            text = draw(_TEXT)
            if draw(st.booleans()):
                blocks: list[TextBlock | ToolCallBlock] = [TextBlock(text=text)] if text else []
                blocks += [ToolCallBlock(tool_call_id=i, tool_name="f") for i in ids]
                out.append(ChatMessage(role="assistant", blocks=blocks))
            else:
                calls = [{"id": i, "type": "function", "function": {"name": "f"}} for i in ids]
                out.append(
                    ChatMessage(
                        role="assistant", content=text, additional_kwargs={"tool_calls": calls}
                    )
                )
            answered = draw(st.permutations(ids))[: draw(st.integers(0, len(ids)))]
            if event == "late" and answered:
                late.append(answered.pop())
            for call_id in answered:
                out.append(_tool_result(call_id, draw(_TEXT)))
            if answered and draw(st.integers(0, 4)) == 0:
                out.append(_tool_result(answered[-1], "again"))  # a duplicate result
    return out


def _tool_result(call_id: str, text: str) -> ChatMessage:
    return ChatMessage(role="tool", content=text, additional_kwargs={"tool_call_id": call_id})


REPLY = 3
"""Tokens every request reserves for the reply (``cupel.counting.REPLY_TOKENS``)."""


def _pinned_tokens(history: list[ChatMessage]) -> int:
    users = [m for m in history if m.role == MessageRole.USER]
    system = [m for m in history if m.role == MessageRole.SYSTEM]
    return sum(words(m) for m in system) + (words(users[-1]) if users else 0)


@settings(max_examples=examples(300), deadline=None)
@given(
    history=histories(),
    limit=st.integers(REPLY + 1, 200),
    initial=st.integers(0, 20),
    start_on_user=st.booleans(),
)
def test_every_window_is_valid_within_budget_and_made_of_the_stored_objects(
    history: list[ChatMessage], limit: int, initial: int, start_on_user: bool
) -> None:
    initial = min(initial, limit)
    store = SimpleChatStore()
    memory = CupelChatMemory.from_defaults(
        chat_history=history,
        chat_store=store,
        token_limit=limit,
        message_token_counter=words,
        start_on_user=start_on_user,
    )
    stored = store.store["chat_history"]
    snapshot = [m.model_dump() for m in history]

    try:
        window = memory.get(initial_token_count=initial)
    except PinnedBudgetError as exc:
        # System messages and the latest user message (with any stray tool message
        # travelling with it) cannot fit.
        assert exc.available_tokens == max(0, limit - initial - REPLY) < exc.pinned_tokens
        assert exc.pinned_tokens >= _pinned_tokens(history)
        return

    # The window and the reply's 3 tokens fit what initial_token_count leaves of the limit.
    budget = max(0, limit - initial - REPLY)
    check_window(window, history, budget=budget, count=words, start_on_user=start_on_user)
    users = [m for m in history if m.role == MessageRole.USER]
    if users:
        assert any(m is users[-1] for m in window), "the latest user message was dropped"
    # The store is untouched: same list, same objects, same contents.
    assert store.store["chat_history"] is stored
    assert all(a is b for a, b in zip(stored, history, strict=True)) and len(stored) == len(history)
    assert [m.model_dump() for m in history] == snapshot
    # The report accounts for every stored message's unit and matches the window.
    report = memory.last_report
    assert report is not None
    assert report.included_tokens == sum(words(m) for m in window)


@settings(max_examples=examples(100), deadline=None)
@given(history=histories(), limit=st.integers(30, 200))
def test_get_is_deterministic_and_repeatable(history: list[ChatMessage], limit: int) -> None:
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=limit, message_token_counter=words
    )
    try:
        first = memory.get()
    except PinnedBudgetError:
        return
    second = memory.get()
    assert len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


@settings(max_examples=examples(100), deadline=None)
@given(history=histories())
def test_a_budget_that_fits_everything_returns_every_valid_message(
    history: list[ChatMessage],
) -> None:
    memory = CupelChatMemory.from_defaults(
        chat_history=history,
        token_limit=10_000,
        message_token_counter=words,
        start_on_user=False,
    )
    window = memory.get()
    report = memory.last_report
    assert report is not None
    conversation = messages_to_items(history, message_token_counter=words).history.conversation
    invalid = [i for k in conversation.invalid_units for i in conversation.messages_of(k)]
    # Everything except the units a provider would reject comes back, in order.
    assert len(window) + len(invalid) == len(history)
    assert [e.reason.name for e in report.excluded] == ["InvalidToolCall"] * len(
        conversation.invalid_units
    )


@settings(max_examples=examples(100), deadline=None)
@given(
    history=histories(),
    later=histories(),
    edits=st.lists(st.tuples(st.integers(0, 40), _TEXT), max_size=4),
    limit=st.integers(30, 150),
)
def test_reusing_the_previous_call_never_changes_the_result(
    history: list[ChatMessage],
    later: list[ChatMessage],
    edits: list[tuple[int, str]],
    limit: int,
) -> None:
    """A memory that has seen an earlier version of the history (and reuses its counts
    and items) selects exactly what a fresh memory selects: after appends, after in-place
    edits and after a message is removed from the middle."""
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=limit, message_token_counter=words
    )

    def both() -> None:
        current = memory.get_all()
        fresh = CupelChatMemory.from_defaults(
            chat_history=list(current), token_limit=limit, message_token_counter=words
        )
        try:
            expected = fresh.get()
        except PinnedBudgetError:
            try:
                memory.get()
            except PinnedBudgetError:
                return
            raise AssertionError("the reusing memory did not raise") from None
        got = memory.get()
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected, strict=True))
        assert memory.last_report is not None and fresh.last_report is not None
        assert [e.item for e in memory.last_report.included] == [
            e.item for e in fresh.last_report.included
        ]

    both()
    memory.put_messages(later)
    both()
    stored = memory.get_all()
    for position, text in edits:
        if stored:
            stored[position % len(stored)].blocks = [TextBlock(text=text)]
    both()
    if stored:
        del stored[len(stored) // 2]
    both()


@settings(max_examples=examples(300), deadline=None)
@given(history=histories(), limit=st.integers(REPLY + 1, 200), start_on_user=st.booleans())
def test_the_default_window_has_no_holes_keeps_the_task_and_a_reply_when_they_fit(
    history: list[ChatMessage], limit: int, start_on_user: bool
) -> None:
    """On random clean and messy histories: no holes, the task kept, valid for the
    provider, a reply whenever the system prompt, the task and the last complete exchange
    fit, never empty when the system prompt, the task and the newest unit fit (the
    definitions the window-quality benchmark uses: benchmarks/window_metrics.py)."""
    memory = CupelChatMemory.from_defaults(
        chat_history=history,
        token_limit=limit,
        message_token_counter=words,
        start_on_user=start_on_user,
    )
    conversation = messages_to_items(history, message_token_counter=words).history.conversation

    def fits(indices: list[int]) -> bool:  # with the reply's 3 tokens
        return sum(words(history[i]) for i in indices) + REPLY <= limit

    try:
        window = memory.get()
    except PinnedBudgetError:
        assert not fits(system_messages(conversation) + task_message(conversation))
        return
    kept = [next(i for i, m in enumerate(history) if m is w) for w in window]
    check = conversation.check_window(kept)
    assert check.problems == () and check.holes == () and check.task_kept, check
    due = expectations(conversation, fits)
    if due.reply:
        assert check.has_reply, (kept, last_complete_exchange(conversation))
    if due.content:
        assert not check.empty
