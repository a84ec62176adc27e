"""``cupel explain``: every candidate's decision, grouped by the stage that made it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import (
    ITEMS,
    TOTAL_TOKENS,
    assert_one_line_error,
    context_items,
    run,
    run_process,
    write_items,
)

from cupel import (
    ContextBudget,
    ContextItem,
    GreedySlice,
    Pipeline,
    RecencyScorer,
    ScoredItem,
    SelectionReport,
)
from cupel.cli._explain import explain


def sections(text: str) -> dict[str, list[str]]:
    """The explain text split at its stage headings (``Classify:``, ..., ``Summary:``)."""
    out: dict[str, list[str]] = {}
    current = "header"
    for line in text.splitlines():
        head = line.split(":", 1)[0]
        if head in ("Classify", "Score/Deduplicate", "Slice", "Place", "Summary"):
            current = head
            out[current] = [line]
        else:
            out.setdefault(current, []).append(line)
    return out


def test_text_groups_decisions_by_stage_with_their_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(capsys, "explain", str(path), "--max-tokens", "100")
    assert status == 0 and err == ""
    parts = sections(out)
    assert list(parts) == ["header", "Classify", "Score/Deduplicate", "Slice", "Place", "Summary"]
    assert parts["header"][0] == f"cupel explain: 6 candidates ({TOTAL_TOKENS} tokens) from {path}"
    classify = "\n".join(parts["Classify"])
    assert "1 pinned (10 tokens)" in classify
    assert '"You are a helpful assistant."' in classify
    assert "included: Pinned: bypasses scoring and slicing" in classify
    dedup = "\n".join(parts["Score/Deduplicate"])
    assert "5 items scored by CompositeScorer" in dedup and "1 duplicate removed" in dedup
    assert "excluded: Deduplicated: same content as kept item" in dedup
    slice_ = parts["Slice"]
    assert slice_[0].startswith("Slice: GreedySlice with effective target 90 tokens")
    rejected = [line for line in slice_ if "BudgetExceeded" in line]
    assert len(rejected) == 2
    assert all("needs" in line and "15 available" in line for line in rejected)
    assert any("needs 40 tokens, 15 available" in line for line in rejected)
    place = "\n".join(parts["Place"])
    assert "ChronologicalPlacer ordered 3 items (85 tokens)" in place
    summary = "\n".join(parts["Summary"])
    assert f"included 3 of 6 items, 85 of {TOTAL_TOKENS} tokens" in summary
    assert "budget use: 85.0% of target 100, 85.0% of max 100" in summary
    assert "window mix: 3 kinds, 66.7% of items timestamped" in summary
    assert "excluded 3 (Deduplicated 1, BudgetExceeded 2)" in summary
    assert "shortfalls: none" in summary and "overflow: none" in summary


def test_slice_lists_the_slicer_decisions_by_descending_score(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, out, _ = run(capsys, "explain", str(path), "--max-tokens", "100")
    lines = [line for line in sections(out)["Slice"][1:] if line.strip()]
    scores = [float(line.split()[1]) for line in lines]
    assert scores == sorted(scores, reverse=True) and len(lines) == 4
    assert [line.split()[0] for line in lines].count("+") == 2


def decisions(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(stage["stage"], d) for stage in document["stages"] for d in stage["decisions"]]


def test_json_places_every_candidate_in_exactly_one_stage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [*ITEMS, {"content": "miscounted", "tokens": -3}]
    path = write_items(tmp_path, rows)
    status, out, err = run(capsys, "explain", str(path), "--max-tokens", "100", "--report", "json")
    assert status == 0 and err == ""
    document = json.loads(out)
    assert document["command"] == "explain" and document["source"] == str(path)
    found = decisions(document)
    assert Counter(d["content"] for _, d in found) == Counter(r["content"] for r in rows)
    by_reason = {(stage, d["reason"]["reason"]) for stage, d in found}
    assert by_reason == {
        ("Classify", "Pinned"),
        ("Classify", "NegativeTokens"),
        ("Score/Deduplicate", "Deduplicated"),
        ("Slice", "Scored"),
        ("Slice", "BudgetExceeded"),
    }
    negative = next(d for _, d in found if d["content"] == "miscounted")
    assert negative == {
        "content": "miscounted",
        "kind": "Message",
        "tokens": -3,
        "score": None,
        "decision": "excluded",
        "reason": {"reason": "NegativeTokens", "tokens": -3},
        "detail": "NegativeTokens: tokens = -3",
    }
    budget_exceeded = [d for _, d in found if d["reason"]["reason"] == "BudgetExceeded"]
    assert {d["reason"]["item_tokens"] for d in budget_exceeded} == {30, 40}
    assert document["summary"]["excluded_by_reason"] == {
        "NegativeTokens": 1,
        "Deduplicated": 1,
        "BudgetExceeded": 2,
    }
    assert document["summary"]["budget_utilization"] == pytest.approx(0.85)
    assert document["summary"]["effective_target_tokens"] == 90
    assert document["summary"]["kind_diversity"] == 3
    assert document["summary"]["timestamp_coverage"] == pytest.approx(2 / 3)


def test_json_report_is_the_pipeline_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, out, _ = run(capsys, "explain", str(path), "--max-tokens", "100", "--report", "json")
    report = SelectionReport.from_dict(json.loads(out)["report"])
    _, window, _ = run(capsys, "select", str(path), "--max-tokens", "100")
    assert [e.item.content for e in report.included] == [i["content"] for i in json.loads(window)]
    # Item-level trace: one event per decision besides the five stage events.
    item_events = [e for e in report.events if e.message is not None]
    assert len(item_events) == report.total_candidates == 6


def test_output_reserve_shows_in_the_effective_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, out, _ = run(capsys, "explain", str(path), "--max-tokens", "100", "--output-reserve", "10")
    assert (
        "effective target 80 tokens (min(target 100, max 100 - output reserve 10) - pinned 10)"
        in out
    )
    assert "(output reserve 10)" in sections(out)["Summary"][2]


def test_count_quota_policy_explains_caps_and_shortfalls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "needs-tools.toml"
    policy.write_text(
        'scorer = "recency"\n[slicer]\ntype = "count_quota"\n'
        '[[slicer.entries]]\nkind = "ToolOutput"\nrequire_count = 2\n'
        '[[slicer.entries]]\nkind = "Message"\ncap_count = 1\n',
        encoding="utf-8",
    )
    path = write_items(tmp_path, ITEMS)
    status, out, _ = run(
        capsys, "explain", str(path), "--max-tokens", "200", "--policy", str(policy)
    )
    assert status == 0
    slice_ = "\n".join(sections(out)["Slice"])
    assert slice_.startswith("Slice: CountQuotaSlice")
    assert slice_.count("excluded: CountCapExceeded: kind 'Message' already has 1 of 1") == 2
    assert "shortfall: kind ToolOutput has 0 of 2 required items" in out


def test_overflow_proceed_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, [ITEMS[0] | {"tokens": 60}, ITEMS[1]])
    status, out, err = run(
        capsys,
        "explain",
        str(path),
        "--max-tokens",
        "100",
        "--target-tokens",
        "50",
        "--overflow",
        "proceed",
    )
    assert status == 0
    assert "window exceeds target by 10 tokens (overflow proceed)" in sections(out)["Place"][0]
    assert "overflow: window exceeds target by 10 tokens" in out
    assert err == ""  # the account itself says it; no separate warning


class Overshoot(GreedySlice):
    """A real slicer that ignores the budget (keeps every candidate), so the pipeline's
    Truncate strategy has to drop items at Place."""

    def slice(self, scored_items: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return [entry.item for entry in scored_items]


def test_items_truncated_at_place_are_explained_at_place() -> None:
    items = context_items(ITEMS)
    pipeline = Pipeline(RecencyScorer(), Overshoot(), overflow_strategy="truncate")
    explanation = explain(pipeline, items, ContextBudget(max_tokens=100, target_tokens=100))
    place = explanation.stages[3]
    assert place.stage == "Place"
    assert "overflow truncate dropped" in place.summary
    assert place.decisions and all(not d.included for d in place.decisions)
    reasons = {d.reason for d in place.decisions}
    assert reasons <= {"BudgetExceeded", "PinnedOverride"}
    # Every decision appears exactly once across the stages.
    total = sum(len(s.decisions) for s in explanation.stages)
    assert total == len(items) == explanation.report.total_candidates
    assert explanation.result.total_tokens <= 100


def test_explain_with_a_preset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, _ = run(capsys, "explain", str(path), "--max-tokens", "100", "--policy", "rag")
    assert status == 0
    assert "; policy rag" in out.splitlines()[1]
    assert "Place: UShapedPlacer" in out


@pytest.mark.slow
def test_explain_from_stdin_in_a_real_process(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = subprocess.run(
        [sys.executable, "-m", "cupel.cli", "explain", "-", "--max-tokens", "100"],
        input=path.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cupel explain: 6 candidates") and "from <stdin>" in proc.stdout


@pytest.mark.slow
def test_explain_json_in_a_real_process(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = run_process("explain", str(path), "--max-tokens", "100", "--report", "json")
    assert proc.returncode == 0 and proc.stderr == ""
    assert [s["stage"] for s in json.loads(proc.stdout)["stages"]] == [
        "Classify",
        "Score/Deduplicate",
        "Slice",
        "Place",
    ]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ([], "the following arguments are required: --max-tokens"),
        (["--max-tokens", "100", "--report", "xml"], "invalid choice: 'xml'"),
        (["--max-tokens", "5"], "Pinned items require 10"),
        (["--max-tokens", "100", "--policy", "chat", "--placer", "u-shaped"], "--placer"),
    ],
)
def test_explain_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], needle: str
) -> None:
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(*run(capsys, "explain", str(path), *argv), needle)
