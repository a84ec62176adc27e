"""``cupel min-budget``: the smallest budget at which an item is selected."""

from __future__ import annotations

import json
from pathlib import Path

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

from cupel import CompositeScorer, ContextBudget, KindScorer, Pipeline, RecencyScorer
from cupel.analytics import find_min_budget_for

TARGET = "Use systemctl restart app."


def default_pipeline() -> Pipeline:
    """The pipeline the CLI builds without configuration flags."""
    return Pipeline(CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]))


def included_at(pipeline: Pipeline, budget: int, content: str) -> bool:
    items = context_items(ITEMS)
    report = pipeline.dry_run(items, ContextBudget(max_tokens=budget, target_tokens=budget)).report
    assert report is not None
    return content in [e.item.content for e in report.included]


def test_prints_the_minimum_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(capsys, "min-budget", str(path), "--item", TARGET)
    assert status == 0 and err == ""
    lines = out.splitlines()
    minimum = int(lines[0].removeprefix("cupel min-budget: "))
    # The answer is real: the pipeline includes the item there and not one token lower.
    pipeline = default_pipeline()
    assert included_at(pipeline, minimum, TARGET)
    assert not included_at(pipeline, minimum - 1, TARGET)
    assert lines[1] == f'  item:     "{TARGET}" (40 tokens, Message)'
    assert f"included at max tokens = target tokens = {minimum}" in lines[2]
    assert lines[3].startswith(f"  searched: 40..{TOTAL_TOKENS} tokens; scored by recency ×3")


def test_agrees_with_the_library(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    items = context_items(ITEMS)
    target = next(i for i in items if i.content == "How do I restart the service?")
    expected = find_min_budget_for("debugging", items, target, TOTAL_TOKENS)
    _, out, _ = run(capsys, "min-budget", str(path), "--item", "How do I", "--policy", "debugging")
    assert out.splitlines()[0] == f"cupel min-budget: {expected}"
    assert "policy debugging" in out


def test_a_unique_prefix_selects_the_item(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, by_prefix, _ = run(capsys, "min-budget", str(path), "--item", "Use sys")
    _, by_content, _ = run(capsys, "min-budget", str(path), "--item", TARGET)
    assert by_prefix == by_content


def test_an_exact_match_wins_over_longer_contents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [
        {"content": "retry", "tokens": 5, "timestamp": "2025-01-01T10:00:00Z"},
        {"content": "retry later", "tokens": 50, "timestamp": "2025-01-01T10:01:00Z"},
    ]
    path = write_items(tmp_path, rows)
    status, out, _ = run(capsys, "min-budget", str(path), "--item", "retry")
    assert status == 0 and '"retry" (5 tokens, Message)' in out


def test_not_reachable_within_the_ceiling(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, _ = run(
        capsys, "min-budget", str(path), "--item", TARGET, "--search-ceiling", "100"
    )
    assert status == 0
    assert out.splitlines()[0] == "cupel min-budget: not reachable"
    assert (
        "not included at any budget up to the search ceiling 100; "
        "at 100: BudgetExceeded: needs 40 tokens, 15 available" in out
    )


def test_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, _ = run(capsys, "min-budget", str(path), "--item", TARGET, "--report", "json")
    document = json.loads(out)
    assert status == 0 and document["command"] == "min-budget"
    assert document["item"]["content"] == TARGET
    assert document["search_ceiling"] == TOTAL_TOKENS
    minimum = document["min_budget"]
    assert isinstance(minimum, int) and document["report_budget"] == minimum
    included = [e["item"]["content"] for e in document["report"]["included"]]
    assert TARGET in included

    _, out, _ = run(
        capsys,
        "min-budget",
        str(path),
        "--item",
        TARGET,
        "--search-ceiling",
        "100",
        "--report",
        "json",
    )
    document = json.loads(out)
    assert document["min_budget"] is None and document["report_budget"] == 100
    reasons = {e["item"]["content"]: e["reason"] for e in document["report"]["excluded"]}
    assert reasons[TARGET] == {
        "reason": "BudgetExceeded",
        "item_tokens": 40,
        "available_tokens": 15,
    }


@pytest.mark.slow
def test_in_a_real_process(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = run_process("min-budget", str(path), "--item", TARGET, "--policy", "chat")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cupel min-budget: ")


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (
            ["--item", "Runbook: restarting app safely"],
            ["is ambiguous: 2 items have the same content (items 3, 4, counting from 0)"],
        ),
        (["--item", "Runbook"], ["2 items have the same content", "cannot be told apart"]),
        (
            ["--item", "How"],
            ["is ambiguous: 2 items have content starting with it (items 1, 6,"],
        ),
        (["--item", "nothing like it"], ["no item's content is or starts with it"]),
        (["--item", ""], ["--item must not be empty"]),
        ([], ["the following arguments are required: --item"]),
        (
            ["--item", TARGET, "--search-ceiling", "10"],
            ["search_ceiling must be >= target_item.tokens (40), got 10"],
        ),
        (["--item", TARGET, "--search-ceiling", "many"], ["invalid int value: 'many'"]),
        (["--item", TARGET, "--policy", "chat", "--no-dedup"], ["--no-dedup"]),
        (["--item", TARGET, "--max-tokens", "100"], ["unrecognized arguments: --max-tokens"]),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], needles: list[str]
) -> None:
    path = write_items(tmp_path, [*ITEMS, {"content": "How about a reboot?", "tokens": 5}])
    assert_one_line_error(*run(capsys, "min-budget", str(path), *argv), *needles)


def test_quota_policies_are_refused_with_the_spec_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "quota.json"
    policy.write_text(
        json.dumps(
            {
                "scorer": "recency",
                "slicer": {"type": "quota", "quotas": [{"kind": "Message", "cap": 50}]},
            }
        ),
        encoding="utf-8",
    )
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "min-budget", str(path), "--item", TARGET, "--policy", str(policy)),
        "FindMinBudgetFor requires monotonic item inclusion.",
    )


def test_a_ceiling_below_the_pinned_items_is_not_reachable_not_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [
        {"content": "huge system prompt", "tokens": 100, "kind": "SystemPrompt", "pinned": True},
        {"content": "question", "tokens": 10},
    ]
    path = write_items(tmp_path, rows)
    args = ("min-budget", str(path), "--item", "question")
    status, out, _ = run(capsys, *args, "--search-ceiling", "50")
    assert status == 0 and out.startswith("cupel min-budget: not reachable\n")
    assert "at 50: Pinned items require 100 tokens, but only 50 are available" in out
    _, out, _ = run(capsys, *args, "--search-ceiling", "50", "--report", "json")
    assert json.loads(out)["report"] is None
    # With the default ceiling (all tokens) the pinned prompt plus the question fit.
    _, out, _ = run(capsys, *args)
    assert out.splitlines()[0] == "cupel min-budget: 110"


def test_a_negative_token_item_is_never_reachable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, [*ITEMS, {"content": "miscounted", "tokens": -5}])
    status, out, _ = run(capsys, "min-budget", str(path), "--item", "miscounted")
    assert status == 0 and "NegativeTokens: tokens = -5" in out
    assert out.splitlines()[0] == "cupel min-budget: not reachable"
