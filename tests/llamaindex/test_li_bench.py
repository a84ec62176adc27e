"""The W6/W7 helpers of benchmarks/bench_llamaindex.py build what WORKLOADS.md describes,
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
