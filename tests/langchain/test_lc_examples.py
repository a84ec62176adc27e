"""The LangChain example scripts run as written and show what docs/langchain.md says."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def run(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


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
    out = run("langchain_chat_history.py", capsys)
    assert "[cupel_selection] CupelMessageSelector: 7 kept, 8 left out, 168/200 tokens" in out
    assert "answer: Day 7: take the boat tour." in out
    assert "'[tool calls: forecast]\\nDay 6: light rain" in out
    # whole turns: day 5's question and answer are both in, day 4's both out
    assert "'Day 5: what should we visit?" in out and "'On day 5, visit the old" in out
    assert out.count("OutsideWindow") == 8


def test_the_rag_example_dedups_caps_and_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    out = run("langchain_rag.py", capsys)
    assert out.startswith("The Nile, at about 6,650 km.")
    assert "context: 87 tokens from 8 passages" in out
    assert out.count("  kept  ") == 4
    assert "Deduplicated" in out and out.count("k=4") == 2 and "BudgetExceeded" in out


def test_the_compression_example_reranks_then_selects(capsys: pytest.CaptureFixture[str]) -> None:
    out = run("langchain_compression.py", capsys)
    lines = out.splitlines()
    assert lines[0] == "4 passages for the prompt:"
    # U-shaped: the two passages the reranker scored 1.00 sit at both edges
    assert lines[1].startswith("  1.00  'The Nile") and lines[4].startswith("  1.00  'The Miss")
    assert "50/60 tokens; left out:" in out
    assert out.count("Deduplicated") == 1 and out.count("BudgetExceeded") == 3


def test_the_agent_example_keeps_every_model_call_valid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run("langchain_agent.py", capsys)
    assert "answer: Yes: 14 units in Leipzig and 3 in Vienna." in out
    assert "agent state: 20 messages (full history kept)" in out
    calls = re.findall(r"model call \d: (\d+) messages, (\d+) tokens, tool calls (\w+)", out)
    assert len(calls) == 2
    assert all(int(tokens) <= 160 and verdict == "valid" for _, tokens, verdict in calls)


def test_the_trim_comparison_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    out = run("langchain_trim_comparison.py", capsys)
    assert out.count("INVALID") == 4 and out.count(", valid") == 5


def test_the_code_blocks_of_the_langchain_guide_run_in_order() -> None:
    blocks = BLOCK.findall((ROOT / "docs" / "langchain.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/langchain.md", "exec"), namespace)
