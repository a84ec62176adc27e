"""The LangChain example scripts run as written and show what docs/langchain.md says."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from cupel.counting import MESSAGE_TOKENS, REPLY_TOKENS, estimate_tokens
from cupel_langchain import approximate_message_tokens

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def run(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    return run_with_names(name, capsys)[0]


def run_with_names(name: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    """The script's output and its module namespace (to derive the expected numbers)."""
    names = runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out, names


def kept_passages(out: str, passages: list[str], width: int) -> list[str]:
    """The passages whose first ``width`` characters a printed line quotes."""
    return [p for p in dict.fromkeys(passages) if repr(p[:width]) in out]


def test_every_langchain_example_is_covered_here() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("langchain_*.py")) == [
        "langchain_agent.py",
        "langchain_chat_history.py",
        "langchain_compression.py",
        "langchain_rag.py",
        "langchain_trim_comparison.py",
    ]


def test_the_chat_history_example_selects_within_budget_and_reports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, names = run_with_names("langchain_chat_history.py", capsys)
    history = names["chat_history"]()
    # the system prompt, day 5's turn, the rain turn with its tool round, the question
    sent = [
        SystemMessage("You are a helpful travel assistant."),
        *history[-6:],
        HumanMessage("And on day 7?"),
    ]
    used = sum(approximate_message_tokens(m) for m in sent)
    day_4 = sum(approximate_message_tokens(m) for m in history[-8:-6])
    assert used + REPLY_TOKENS <= 200 < used + REPLY_TOKENS + day_4
    assert f"CupelMessageSelector: 7 kept, 8 left out, {used}/200 tokens" in out
    assert f"next unit needs {day_4} tokens, {200 - REPLY_TOKENS - used} available" in out
    assert "answer: Day 7: take the boat tour." in out
    assert "'[tool calls: forecast]\\nDay 6: light rain" in out
    # whole turns: day 5's question and answer are both in, day 4's both out
    assert "'Day 5: what should we visit?" in out and "'On day 5, visit the old" in out
    assert out.count("OutsideWindow") == 8


def test_the_rag_example_dedups_caps_and_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    out, names = run_with_names("langchain_rag.py", capsys)
    assert out.startswith("The Nile, at about 6,650 km.")
    assert out.count("  kept  ") == 4
    kept = [line for line in out.splitlines() if line.startswith("  kept  ")]
    passages = kept_passages("\n".join(kept), names["PASSAGES"], 50)
    assert len(passages) == 4
    used = sum(estimate_tokens(p) for p in passages)  # a document: its page_content
    assert f"context: {used} tokens from 8 passages" in out
    # the one left out for the budget needs more than the room the selection leaves (the
    # selection: the kept passages and those k=4 cut afterwards)
    capped = [line for line in out.splitlines() if "k=4" in line]
    selected = used + sum(
        estimate_tokens(p) for p in kept_passages("\n".join(capped), names["PASSAGES"], 30)
    )
    (budget_line,) = [line for line in out.splitlines() if "BudgetExceeded" in line]
    (over,) = [p for p in names["PASSAGES"] if repr(p[:30]) in budget_line]
    assert selected <= 110 < selected + estimate_tokens(over)
    assert f"needs {estimate_tokens(over)} tokens, {110 - selected} available" in budget_line
    assert "Deduplicated" in out and out.count("k=4") == 2 and "BudgetExceeded" in out


def test_the_compression_example_reranks_then_selects(capsys: pytest.CaptureFixture[str]) -> None:
    out, names = run_with_names("langchain_compression.py", capsys)
    lines = out.splitlines()
    count = int(lines[0].split()[0])
    assert lines[0] == f"{count} passages for the prompt:"
    # U-shaped: the two passages the reranker scored 1.00 sit at both edges
    assert lines[1].startswith("  1.00  'The Nile")
    assert lines[count].startswith("  1.00  'The Miss")
    passages = kept_passages("\n".join(lines[1 : count + 1]), names["PASSAGES"], 60)
    assert len(passages) == count
    used = sum(estimate_tokens(p) for p in passages)
    assert f"{used}/60 tokens; left out:" in out
    # each passage left out for the budget needs more than the room left
    left_out = [p for p in dict.fromkeys(names["PASSAGES"]) if p not in passages]
    assert all(used + estimate_tokens(p) > 60 for p in left_out)
    assert out.count("Deduplicated") == 1 and out.count("BudgetExceeded") == len(left_out)


def test_the_agent_example_keeps_every_model_call_valid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, names = run_with_names("langchain_agent.py", capsys)
    assert "answer: Yes: 14 units in Leipzig and 3 in Vienna." in out
    assert "agent state: 20 messages (full history kept)" in out
    calls = re.findall(r"model call \d: (\d+) messages, (\d+) tokens, tool calls (\w+)", out)
    assert len(calls) == 2
    # the messages, the reply and the bound tool's definition fit the middleware's budget
    tool = json.dumps(convert_to_openai_tool(names["stock_level"]))
    fixed = REPLY_TOKENS + estimate_tokens(tool) + MESSAGE_TOKENS
    assert all(int(tokens) + fixed <= 160 and verdict == "valid" for _, tokens, verdict in calls)


def test_the_trim_comparison_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    out = run("langchain_trim_comparison.py", capsys)
    assert out.count("INVALID") == 4 and out.count(", valid") == 5


def test_the_code_blocks_of_the_langchain_guide_run_in_order() -> None:
    blocks = BLOCK.findall((ROOT / "docs" / "langchain.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/langchain.md", "exec"), namespace)
