"""Side by side with trim_messages on a history with tool calls (docs/examples script)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from langchain_core.messages import AIMessage, ToolMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately

from cupel_langchain import select_messages, tool_call_problems

EXAMPLE = Path(__file__).resolve().parents[2] / "docs/examples/langchain_trim_comparison.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langchain_trim_comparison", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_trim_messages_last_keeps_a_tool_result_without_its_call() -> None:
    selected = example().compare(100)['trim_messages(strategy="last")']
    assert isinstance(selected[1], ToolMessage)
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in selected)
    assert tool_call_problems(selected) == [
        "message 1: ToolMessage answers tool_call_id 'call_1', which no preceding AIMessage "
        "left open"
    ]


def test_trim_messages_first_ends_on_a_tool_call_without_its_result() -> None:
    selected = example().compare(100)['trim_messages(strategy="first")']
    assert isinstance(selected[-1], AIMessage) and selected[-1].tool_calls
    assert tool_call_problems(selected) == [
        "end: tool call(s) ['call_1'] of message 2 are unanswered"
    ]


def test_cupel_returns_a_valid_sequence_at_the_same_budget() -> None:
    module = example()
    selected = module.compare(100)["cupel select_messages"]
    assert tool_call_problems(selected) == []
    assert count_tokens_approximately(selected) <= 100
    history = module.history()
    assert [m.type for m in selected] == ["system", "human", "ai", "human"]
    assert select_messages(history, max_tokens=100)[0] is history[0]


def test_at_every_budget_cupel_is_valid_and_trim_messages_is_not_always() -> None:
    history = example().history()
    trim_failures = 0
    for budget in range(32, 200):
        selected = select_messages(history, max_tokens=budget)
        assert tool_call_problems(selected) == [], budget
        assert count_tokens_approximately(selected) <= budget
        for strategy in ("first", "last"):
            trimmed = trim_messages(
                history,
                max_tokens=budget,
                strategy=strategy,
                token_counter=count_tokens_approximately,
            )
            trim_failures += bool(tool_call_problems(trimmed))
    assert trim_failures > 50


def test_the_example_prints_the_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    example().main()
    out = capsys.readouterr().out
    assert out.count("INVALID") == 2
    assert "cupel select_messages           system > human > ai > human" in out
