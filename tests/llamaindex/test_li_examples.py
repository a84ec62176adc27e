"""The LlamaIndex examples in docs/examples run offline and show what the docs claim."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def _run(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_query_engine_example_puts_the_best_node_first_where_long_context_reorder_does_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run("llamaindex_query_engine.py", capsys)
    assert "CupelNodePostprocessor order: p5 p2 p4" in out
    assert "LongContextReorder order: p4 p2 p0 p1 p3 p5" in out
    assert "window: 52 tokens of a 60-token budget" in out
    assert out.count("BudgetExceeded") == 3


def test_chat_engine_example_keeps_the_system_prompt_chat_memory_buffer_drops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run("llamaindex_chat_engine.py", capsys)
    ours, theirs = out.split("ChatMemoryBuffer sends:")
    assert "system    You are a concise travel assistant" in ours
    assert "system" not in theirs.split("system prompt kept")[0]
    assert "system prompt kept by cupel: True" in out


@pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)
def test_agent_example_sends_complete_tool_groups(capsys: pytest.CaptureFixture[str]) -> None:
    out = _run("llamaindex_agent.py", capsys)
    assert "answer: It is sunny: pack light clothes." in out
    lines = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert lines[0] == "system" and lines[1] == "user"
    # every tool-calling assistant line is followed by its tool result
    for i, role in enumerate(lines):
        if role == "tool":
            assert lines[i - 1] == "assistant"
    assert "older units left out" in out


def test_memory_example_chooses_blocks_and_window_under_one_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run("llamaindex_memory.py", capsys)
    lines = out.splitlines()
    assert len(lines) == 4
    stored = [int(line.rsplit("stored ", 1)[1]) for line in lines]
    assert stored == [2, 4, 6, 8]  # the caller's memory, current after every run
    for line in lines:
        tokens = int(line.split(" tokens;")[0].rsplit(" ", 1)[1])
        assert tokens <= 90 and "'profile'" in line and "'style'" in line
    assert any("'trivia'" not in line for line in lines)  # left out when the window needs room
