"""Side by side with trim_messages' recommended setup (docs/examples script)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from cupel.counting import REPLY_TOKENS
from cupel_langchain import approximate_message_tokens, select_messages, tool_call_problems

EXAMPLE = Path(__file__).resolve().parents[2] / "docs/examples/langchain_trim_comparison.py"


def request_tokens(messages: list[BaseMessage]) -> int:
    """What a request of ``messages`` costs by cupel's count: the messages and the reply.
    (trim_messages is run with count_tokens_approximately, as LangChain's docs set it up.)"""
    return sum(approximate_message_tokens(m) for m in messages) + REPLY_TOKENS


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langchain_trim_comparison", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_on_a_plain_chat_cupel_keeps_the_older_question_with_its_answer() -> None:
    module = example()
    history = module.chat()
    selections = module.compare(history, 120)
    recommended = selections["trim_messages (recommended)"]
    cupel = selections["cupel select_messages"]
    # both keep the newest whole turn; the first turn (question, plan with a tool round,
    # answer) does not fit whole: trim drops it, cupel keeps its question and its answer
    assert recommended == [history[0], *history[5:]]
    assert cupel == [history[0], history[1], history[4], *history[5:]]
    assert tool_call_problems(cupel) == []


def test_trim_without_start_on_keeps_a_tool_result_without_its_call() -> None:
    module = example()
    selected = module.compare(module.chat(), 120)['trim_messages(strategy="last")']
    assert isinstance(selected[1], ToolMessage)
    assert tool_call_problems(selected) == [
        "message 1: tool result for 'call_1' answers no call made just before it (unknown_result)"
    ]


def test_on_an_agent_run_trim_keeps_only_the_system_prompt_and_cupel_the_task() -> None:
    module = example()
    history = module.agent_run()
    selections = module.compare(history, 160)
    assert [m.type for m in selections["trim_messages (recommended)"]] == ["system"]
    cupel = selections["cupel select_messages"]
    assert cupel[:2] == history[:2]  # the system prompt and the task
    assert cupel[2:] == history[-len(cupel) + 2 :]  # then the newest tool rounds
    assert len(cupel) > 2 and tool_call_problems(cupel) == []
    assert request_tokens(cupel) <= 160


def test_on_a_messy_history_trim_passes_a_late_result_through_and_cupel_does_not() -> None:
    module = example()
    selections = module.compare(module.messy_chat(), 120)
    assert tool_call_problems(selections["trim_messages (recommended)"]) != []
    cupel = selections["cupel select_messages"]
    assert tool_call_problems(cupel) == []
    assert not any(isinstance(m, ToolMessage) for m in cupel)


def test_at_every_budget_cupel_is_valid_and_holds_the_task_where_trim_fails() -> None:
    module = example()
    histories = {"chat": module.chat(), "agent": module.agent_run(), "messy": module.messy_chat()}
    trim_invalid = trim_without_task = 0
    for name, history in histories.items():
        task = next(m for m in reversed(history) if isinstance(m, HumanMessage))
        assert request_tokens([history[0], task]) <= 40  # 40 holds the system prompt and task
        for budget in range(40, 260, 3):
            selected = select_messages(history, max_tokens=budget)
            assert tool_call_problems(selected) == [], (name, budget)
            assert request_tokens(selected) <= budget
            assert isinstance(selected[0], SystemMessage) and task in selected
            trimmed = module.recommended_trim(history, budget)
            trim_invalid += bool(tool_call_problems(trimmed))
            trim_without_task += task not in trimmed
    assert trim_invalid > 20 and trim_without_task > 20


def test_the_example_prints_the_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    example().main()
    out = capsys.readouterr().out
    assert out.count("INVALID") == 4
    assert "trim_messages (recommended)     system\n" in out
    assert "cupel select_messages           system > human > ai > tool > ai > tool" in out
    assert not any(
        "cupel" in line and "INVALID" in nxt
        for line, nxt in zip(out.splitlines(), out.splitlines()[1:], strict=False)
    )
