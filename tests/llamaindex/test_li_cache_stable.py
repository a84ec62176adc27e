"""Cache-stable windows in the LlamaIndex memories (issue 16), and CupelMemory under its
defaults: flushing by cupel's window keeps the system prompt, counts tool calls and keeps
the budget used (the window-quality gap of issue 10)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pytest
from li_testkit import SelectionRecorder, check_window, provider_problems, recording
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.memory import Memory, StaticMemoryBlock
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.base_db import MessageStatus

from cupel import ConfigurationError
from cupel_llamaindex import CupelChatMemory, CupelMemory, message_text
from cupel_llamaindex._reading import message_parts

BUDGET = 180  # ~ the messages 120 held before the 3 per message were counted
REPLY = 3
"""The reply's tokens, reserved once per request: a window holds ``BUDGET - REPLY``."""


def _split(text: str) -> list[str]:
    return text.split()


def _count(message: ChatMessage) -> int:
    """What the memories count: 3 per message, and each text part (text, tool calls'
    names, arguments and ids, a result's call id) split on whitespace."""
    return 3 + sum(len(part.split()) for part in message_parts(message)[0])


def _turns(count: int, seed: int = 0) -> Iterator[list[ChatMessage]]:
    """The messages a chat adds per call: a question (after the answer to the previous
    one), sometimes a tool round; sizes vary."""
    for t in range(count):
        out = []
        if t:
            out.append(
                ChatMessage(role="assistant", content=f"a{seed}.{t} " + "x " * ((t * 7) % 15 + 2))
            )
        out.append(ChatMessage(role="user", content=f"q{seed}.{t} " + "w " * ((t * 5) % 9 + 1)))
        if t % 4 == 3:
            call = f"c{seed}.{t}"
            out.append(
                ChatMessage(
                    role="assistant",
                    blocks=[ToolCallBlock(tool_call_id=call, tool_name="f", tool_kwargs={"t": t})],
                )
            )
            out.append(
                ChatMessage(
                    role="tool",
                    content="r " * ((t * 3) % 11 + 2),
                    additional_kwargs={"tool_call_id": call},
                )
            )
        yield out


@pytest.fixture
def recorder() -> Iterator[SelectionRecorder]:
    yield from recording()


def _texts(messages: Sequence[ChatMessage]) -> list[str]:
    return [message_text(m) for m in messages]


def _replay(memory: Any, turns: int, seed: int = 0) -> tuple[int, int, list[list[str]]]:
    """Put each call's messages, get() the window: every window keeps the rule; a window
    that does not start with the previous one comes only when the previous window plus
    the new messages no longer fit. Returns (calls, cuts, windows as texts)."""
    memory.put(ChatMessage(role="system", content="Be brief and kind."))
    previous: list[str] | None = None
    previous_tokens = 0
    cuts = 0
    windows = []
    for new in _turns(turns, seed):
        for message in new:
            memory.put(message)
        window = memory.get()
        texts = _texts(window)
        tokens = sum(_count(m) for m in window)
        assert tokens + REPLY <= BUDGET
        assert provider_problems(window) == []
        assert texts[0] == "Be brief and kind."  # the system prompt, never flushed
        assert texts[-1] == message_text(new[-1]) or new[-1].role == MessageRole.TOOL
        if previous is not None and texts[: len(previous)] != previous:
            cuts += 1
            added = sum(_count(m) for m in new)
            assert previous_tokens + added + REPLY > BUDGET
        previous = texts
        previous_tokens = tokens
        windows.append(texts)
    return turns, cuts, windows


def test_cupel_chat_memory_cache_stable_only_appends_between_cuts(
    recorder: SelectionRecorder,
) -> None:
    memory = CupelChatMemory.from_defaults(
        token_limit=BUDGET, tokenizer_fn=_split, cache_stable=True
    )
    calls, cuts, windows = _replay(memory, 60)
    assert 2 <= cuts < calls // 3
    events = recorder.events
    assert len(events) == calls
    assert all(e.stable_prefix is not None and e.cut is not None for e in events)
    assert events[0].cut_moved is True  # no previous request: nothing to share
    # The report describes the previous request — the history before the newest
    # assistant message — and so the previous get() whenever the call added no tool
    # round (a tool round's assistant message would make the "previous request" the
    # history up to the question, which was never sent).
    for t in range(1, calls):
        if t % 4 == 3:
            continue
        before, now = windows[t - 1], windows[t]
        shared = next(
            (i for i, (a, b) in enumerate(zip(before, now, strict=False)) if a != b),
            min(len(before), len(now)),
        )
        assert events[t].stable_prefix == shared, t
        assert events[t].cut_moved is (shared < len(before)), t
    assert memory.last_stable == {
        "stable_prefix": events[-1].stable_prefix,
        "cut_moved": events[-1].cut_moved,
        "cut": events[-1].cut,
    }
    assert events[-1].model_dump()["stable_prefix"] == events[-1].stable_prefix


def test_cupel_chat_memory_default_is_unchanged_and_reports_no_stable_fields(
    recorder: SelectionRecorder,
) -> None:
    stable = CupelChatMemory.from_defaults(token_limit=BUDGET, tokenizer_fn=_split)
    _, cuts, _ = _replay(stable, 60)
    assert cuts > 30  # the minimal fit moves its cut on most calls at the budget
    assert stable.last_stable is None
    assert all(e.stable_prefix is None and e.cut_moved is None for e in recorder.events)


def test_cupel_chat_memory_windows_follow_the_chat_store_key_not_the_object() -> None:
    """Two keys on one store, each with its own memory, and one memory switching keys:
    the windows are those of each key's history, whichever object selects them."""
    store = SimpleChatStore()
    memories = {
        key: CupelChatMemory.from_defaults(
            token_limit=BUDGET,
            tokenizer_fn=_split,
            chat_store=store,
            chat_store_key=key,
            cache_stable=True,
        )
        for key in ("u1", "u2")
    }
    shared = CupelChatMemory.from_defaults(
        token_limit=BUDGET, tokenizer_fn=_split, chat_store=store, cache_stable=True
    )
    streams = {key: _turns(40, seed=n) for n, key in enumerate(memories)}
    previous: dict[str, list[str]] = {}
    appended = calls = 0
    for _ in range(40):
        for key, memory in memories.items():
            for message in next(streams[key]):
                memory.put(message)
            # one memory object switching keys: the same windows
            shared.chat_store_key = key
            window = _texts(shared.get())
            assert window == _texts(memory.get())
            history = memory.get_all()
            check_window(memory.get(), history, budget=BUDGET - REPLY, count=_count)
            if key in previous and window[: len(previous[key])] == previous[key]:
                appended += 1
            previous[key] = window
            calls += 1
    assert appended > calls * 0.6


def test_cupel_memory_cache_stable_only_appends_between_cuts_through_its_flushes(
    recorder: SelectionRecorder,
) -> None:
    memory = CupelMemory.from_defaults(token_limit=BUDGET, tokenizer_fn=_split, cache_stable=True)
    calls, cuts, windows = _replay(memory, 60)
    assert 2 <= cuts < calls // 3
    # the flushes change nothing: the windows of the whole history, never flushed
    whole = CupelChatMemory.from_defaults(
        token_limit=BUDGET, tokenizer_fn=_split, cache_stable=True
    )
    assert _replay(whole, 60)[2] == windows
    archived = memory.sql_store
    flushed = _run(archived.get_messages(memory.session_id, status=MessageStatus.ARCHIVED))
    assert len(flushed) > 20  # put() flushed along the way, yet the windows held
    assert all(len(w) > 3 for w in windows[10:])
    assert recorder.events[-1].stable_prefix == memory.last_stable["stable_prefix"]  # type: ignore[index]


def _run(coroutine: Any) -> Any:
    import asyncio

    return asyncio.run(coroutine)


class _Collected(BaseMemoryBlock[str]):
    """A real memory block that records what the flush hands it."""

    received: ClassVar[list[str]] = []

    async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
        return ""

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.received.extend(message_text(m) for m in messages)


def test_cupel_memory_flushes_only_what_no_window_can_hold_and_keeps_the_system_prompt() -> None:
    """The window-quality gap: under its defaults CupelMemory lost the system prompt
    (Memory's flush archived it with the first turn), used under half the budget on
    chats (it flushed in chunks down to 70% of it) and went over budget on agent runs
    (ToolCallBlocks cost nothing to Memory's counter)."""
    block = _Collected(name="collected", priority=1)
    memory = CupelMemory.from_defaults(
        token_limit=BUDGET, tokenizer_fn=_split, memory_blocks=[block]
    )
    plain = CupelMemory.from_defaults(token_limit=BUDGET, tokenizer_fn=_split)
    uses = []
    for target in (memory, plain):
        target.put(ChatMessage(role="system", content="Be brief and kind."))
        for new in _turns(50):
            for message in new:
                target.put(message)
            window = target.get()
            assert _texts(window)[0].startswith("Be brief and kind.")
            assert sum(_count(m) for m in window) + REPLY <= BUDGET
            uses.append((target is plain, sum(_count(m) for m in window) / BUDGET))
    assert min(use for is_plain, use in uses[-20:] if is_plain) > 0.6  # budget kept in use
    assert block.received  # the flushed messages reached the memory block
    assert "Be brief and kind." not in block.received  # the system prompt stays in the window
    active = plain.get_all(status=MessageStatus.ACTIVE)
    assert sum(_count(m) for m in active) <= BUDGET + max(_count(m) for m in active) * 4


def test_cupel_memory_counts_tool_calls_so_agent_windows_stay_within_budget() -> None:
    memory = CupelMemory.from_defaults(token_limit=60, tokenizer_fn=_split)
    memory.put(ChatMessage(role="system", content="Agent."))
    memory.put(ChatMessage(role="user", content="do the task please"))
    for r in range(12):
        call = f"c{r}"
        kwargs = {"query": " ".join(f"k{i}" for i in range(8))}
        memory.put(
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id=call, tool_name="search", tool_kwargs=kwargs)],
            )
        )
        memory.put(
            ChatMessage(role="tool", content="found " * 4, additional_kwargs={"tool_call_id": call})
        )
        window = memory.get()
        assert sum(_count(m) for m in window) + REPLY <= 60, r
        assert _texts(window)[:2] == ["Agent.", "do the task please"]
        assert provider_problems(window) == []
    baseline = Memory.from_defaults(token_limit=60, tokenizer_fn=_split)
    call_message = memory.get()[-2]
    assert baseline._estimate_token_count(call_message) < _count(call_message)


def test_cupel_memory_system_prompt_survives_a_new_instance_on_the_same_store() -> None:
    first = CupelMemory.from_defaults(token_limit=BUDGET, tokenizer_fn=_split)
    first.put(ChatMessage(role="system", content="Be brief and kind."))
    for new in _turns(40):
        for message in new:
            first.put(message)
    again = CupelMemory(
        token_limit=BUDGET,
        tokenizer_fn=_split,
        sql_store=first.sql_store,
        session_id=first.session_id,
    )
    assert _texts(again.get()) == _texts(first.get())
    assert _texts(again.get())[0] == "Be brief and kind."


@pytest.mark.parametrize("owner", [CupelChatMemory, CupelMemory])
def test_cache_stable_values_are_checked(owner: Any) -> None:
    with pytest.raises(ConfigurationError, match="cache_stable"):
        owner.from_defaults(token_limit=50, cache_stable=1.5)
    with pytest.raises(ConfigurationError, match="cache_stable"):
        owner.from_defaults(token_limit=50, cache_stable=True, policy="rag")
    memory = owner.from_defaults(token_limit=50, cache_stable=0.5)
    assert memory.cache_stable == 0.5


def test_cupel_memory_with_static_block_and_stable_window() -> None:
    block = StaticMemoryBlock(name="profile", static_content="likes tea", priority=0)
    memory = CupelMemory.from_defaults(
        token_limit=BUDGET, tokenizer_fn=_split, memory_blocks=[block], cache_stable=True
    )
    memory.put(ChatMessage(role="system", content="Be brief."))
    for new in _turns(30):
        for message in new:
            memory.put(message)
        window = memory.get()
        assert "likes tea" in (window[0].content or "")
        report = memory.last_report
        assert report is not None and report.included_tokens + REPLY <= BUDGET


@pytest.mark.parametrize("owner", [CupelChatMemory, CupelMemory])
def test_forget_is_a_deprecated_no_op(owner: Any) -> None:
    """Nothing is kept per conversation, so there is nothing to forget: the next window
    is the one the history gives anyway."""
    memory = owner.from_defaults(token_limit=BUDGET, tokenizer_fn=_split, cache_stable=True)
    _replay(memory, 20)
    window = _texts(memory.get())
    with pytest.warns(DeprecationWarning, match=r"forget\(\) is deprecated and does nothing"):
        memory.forget()
    assert _texts(memory.get()) == window
