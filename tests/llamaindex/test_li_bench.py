"""The W6/W7 helpers of benchmarks/bench_llamaindex.py build what docs/performance.md describes,
their validity check can fail, and every timed CupelChatMemory variant (fresh memory,
repeated get, one more turn) selects the same window."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from llama_index.core.base.llms.types import MessageRole
from llama_index.core.storage.chat_store import SimpleChatStore

from cupel_llamaindex import CupelChatMemory, tool_call_ids

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_llamaindex_under_test", ROOT / "benchmarks" / "bench_llamaindex.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_w6_conversation_has_exactly_n_messages_and_complete_tool_groups(
    bench: ModuleType,
) -> None:
    history = bench.conversation(1000)
    assert len(history) == 1000
    calls = [m for m in history if tool_call_ids(m)[1]]
    results = [m for m in history if m.role == MessageRole.TOOL]
    assert len(calls) == len(results) == 47  # every 10th assistant turn, then its result
    assert bench.window_problems(history, history) == []


def test_window_problems_reports_split_groups_and_a_leading_tool_message(
    bench: ModuleType,
) -> None:
    history = bench.conversation(40)
    caller = next(i for i, m in enumerate(history) if tool_call_ids(m)[1])
    without_call = history[:caller] + history[caller + 1 :]
    assert bench.window_problems(without_call, history) == ["1 split tool groups"]
    assert bench.window_problems(history[caller + 1 :], history) == [
        "starts with a tool message",
        "1 split tool groups",
    ]


def test_every_timed_variant_selects_the_same_valid_window(bench: ModuleType) -> None:
    history = bench.conversation(2000)
    tokenizer = bench.quarter_tokenizer
    budget = len(tokenizer(" ".join(str(m.content) for m in history))) // 4
    store = SimpleChatStore()
    store.set_messages("chat_history", list(history))

    def memory() -> CupelChatMemory:
        return CupelChatMemory(token_limit=budget, tokenizer_fn=tokenizer, chat_store=store)

    fresh = memory().get()
    held = memory()
    first, again = held.get(), held.get()
    growing = memory()
    growing.get()
    growing.put(history[0].model_copy())  # a new user turn: the window moves on
    moved = growing.get()

    for window in (first, again):
        assert len(window) == len(fresh) and all(a is b for a, b in zip(window, fresh, strict=True))
    assert bench.window_problems(fresh, history) == []
    assert sum(len(tokenizer(str(m.content))) for m in fresh) <= budget
    assert moved[-1] is growing.get_all()[-1]
    expected = memory().get()  # what a fresh memory selects on the grown store
    assert len(moved) == len(expected)
    assert all(a is b for a, b in zip(moved, expected, strict=True))


def test_a_chat_turn_puts_a_new_message_selects_and_deletes_it_for_both_memories(
    bench: ModuleType,
) -> None:
    history, ours, theirs = bench._memories(10)
    for memory in (ours, theirs):
        seen: list[object] = []
        original_get = type(memory).get

        def spy(
            self: object = memory, original: object = original_get, seen: list[object] = seen
        ) -> list[object]:
            window = original(self)  # type: ignore[operator]
            seen.append((window, list(self.get_all())))  # type: ignore[attr-defined]
            return window  # type: ignore[no-any-return]

        object.__setattr__(memory, "get", spy)
        bench.chat_turn(memory, 3)()
        assert len(seen) == 3
        texts = [grown[-1].content for _, grown in seen]
        assert len(set(texts)) == 3 and all(t.startswith("next question") for t in texts)
        assert all(len(grown) == 11 and grown[:10] == history for _, grown in seen)
        assert len(memory.get_all()) == 10  # deleted again: the size stays n
    window, grown = bench.turn_window(ours)
    assert bench.window_problems(window, grown) == [] and window[-1] is grown[-1]
    assert len(ours.get_all()) == 10


def test_w8_has_a_repeated_and_a_per_turn_row_per_size_both_valid(bench: ModuleType) -> None:
    cases = list(bench.w8_cases([10, 50, 10_000]))
    assert [(case.label, case.n) for case in cases] == [
        ("W8 chat memory", 10),
        ("W8 chat memory, per turn", 10),
        ("W8 chat memory, per turn, report read", 10),
        ("W8 chat memory", 50),
        ("W8 chat memory, per turn", 50),
        ("W8 chat memory, per turn, report read", 50),
    ]
    for case in cases:
        assert case.checks == {"cupel window valid": True}
        case.call()
        assert case.incumbent is not None
        case.incumbent()
