"""Defaults derived from what the user typed, summaries of long reports, and degenerate
inputs said out loud (real processes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_testkit import ITEMS, cupel, many_items, write_items, write_jsonl

pytestmark = pytest.mark.slow  # every test runs the CLI as a real process

BUDGET_LINE = re.compile(r"^  budget max ([\d,]+) / target ([\d,]+)$", re.MULTILINE)


def demo_budget(*argv: str) -> tuple[int, int]:
    proc = cupel("demo", *argv)
    assert proc.returncode == 0, proc.stderr
    match = BUDGET_LINE.search(proc.stdout)
    assert match, proc.stdout
    return int(match[1].replace(",", "")), int(match[2].replace(",", ""))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], (8000, 6000)),
        (["--max-tokens", "1000"], (1000, 750)),  # the demo's 3/4 ratio of what was typed
        (["--max-tokens", "4001"], (4001, 3000)),
        (["--target-tokens", "2000"], (8000, 2000)),
        (["--target-tokens", "12000"], (12000, 12000)),  # the max grows to fit the target
        (["--output-reserve", "3000"], (9000, 6000)),  # room for target + reserve
        (["--target-tokens", "7000", "--output-reserve", "2000"], (9000, 7000)),
        (["--max-tokens", "900", "--target-tokens", "800"], (900, 800)),
    ],
)
def test_demo_budget_defaults_follow_what_was_typed(
    argv: list[str], expected: tuple[int, int]
) -> None:
    assert demo_budget(*argv) == expected


def test_demo_small_max_tokens_blames_what_the_user_typed() -> None:
    """It used to fail on the 6,000 default target the user never typed."""
    proc = cupel("demo", "--max-tokens", "100")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "6000" not in proc.stderr and "6,000" not in proc.stderr
    assert proc.stderr == (
        "cupel: error: The messages that are always kept need 348 tokens (system messages: "
        "329, the latest user message: 19), but the budget allows 100 (--max-tokens - "
        "--output-reserve); raise --max-tokens to at least 348 or shorten them\n"
    )


def test_select_summarises_a_long_report_and_all_lists_everything(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, many_items(3000))
    proc = cupel("select", str(path), "--max-tokens", "5000")
    assert proc.returncode == 0
    window = json.loads(proc.stdout)
    lines = proc.stderr.splitlines()
    assert len(lines) < 43
    assert (
        lines[0]
        == f"cupel: {len(window)} of 3000 items selected" + lines[0].split("items selected")[1]
    )
    hidden = len(window) - 20
    assert f"        … {hidden:,} more items (--all lists every item) …" in lines
    excluded = 3000 - len(window)
    assert (
        f"        … {excluded - 12:,} more excluded (BudgetExceeded {excluded - 12:,}; "
        "--all lists every item) …"
    ) in lines
    full = cupel("select", str(path), "--max-tokens", "5000", "--all")
    assert full.stdout == proc.stdout
    # totals, how items were chosen, two headings with their column lines, one line per item
    assert len(full.stderr.splitlines()) == 6 + 3000
    assert "more items" not in full.stderr and "more excluded" not in full.stderr


def test_select_lists_a_short_report_in_full(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = cupel("select", str(path), "--max-tokens", "100")
    assert "more items" not in proc.stderr and "more excluded" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 6 + len(ITEMS) + 1  # + the undated note


def test_a_half_life_that_scores_every_item_zero_is_reported(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)  # dated January 2025, and an undated pinned prompt
    flags = ["--scorer", "decay", "--scorer", "kind", "--half-life", "60"]
    for command in ("select", "explain", "demo"):
        argv = [command] if command == "demo" else [command, str(path), "--max-tokens", "100"]
        proc = cupel(*argv, *flags)
        assert proc.returncode == 0
        (warning,) = [line for line in proc.stderr.splitlines() if "warning" in line]
        assert re.fullmatch(
            r"cupel: warning: every dated item scores 0 under the decay scorer \(the newest "
            r"is [\d,]+ days old, [\d,]+ half-lives of 1 minute\), so it does not rank them: "
            r"use a longer --half-life",
            warning,
        ), warning
    # A half-life that leaves some score: no warning.
    proc = cupel(
        "select",
        str(path),
        "--max-tokens",
        "100",
        "--scorer",
        "decay",
        "--half-life",
        str(10 * 365 * 86400),
    )
    assert proc.returncode == 0 and "warning" not in proc.stderr


def test_undated_items_outranking_decayed_ones_are_named(tmp_path: Path) -> None:
    rows = [
        {"content": "old", "tokens": 1, "timestamp": "2020-01-01T00:00:00Z"},
        {"content": "undated", "tokens": 1},
    ]
    path = write_items(tmp_path, rows)
    proc = cupel(
        "select",
        str(path),
        "--max-tokens",
        "10",
        "--scorer",
        "decay",
        "--half-life",
        "3600",
        "--report",
        "json",
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["window"]
    assert re.fullmatch(
        r"cupel: warning: every dated item scores 0 under the decay scorer \(the newest is "
        r"[\d,]+ days old, [\d,]+ half-lives of 1 hour; the undated item scores 0.5 and "
        r"outranks them all\), so it does not rank them: use a longer --half-life\n",
        proc.stderr,
    ), proc.stderr
