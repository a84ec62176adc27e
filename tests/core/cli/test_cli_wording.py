"""One wording per exclusion reason in every text the CLI writes (real processes), the
knapsack exclusions that only bucket rounding explains, and errors in the CLI's words."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import cupel, write_items
from test_cli_html import parse

pytestmark = pytest.mark.slow  # every test runs the CLI as a real process

# A conversation in which a knapsack with 100-token buckets leaves out small messages that
# fit the tokens left: every message costs a whole bucket.
ROUNDING: list[dict[str, Any]] = [
    {"content": "How do I rotate the key?", "tokens": 30, "timestamp": "2025-01-01T10:00:00Z"},
    {"content": "Which key?", "tokens": 9, "timestamp": "2025-01-01T10:01:00Z"},
    {
        "content": "Runbook: rotating API keys, step by step",
        "tokens": 150,
        "kind": "Document",
        "source": "Rag",
        "timestamp": "2025-01-01T10:02:00Z",
    },
]
NEEDS = re.compile(r"BudgetExceeded: needs \d+ tokens, \d+ available[^\n]*")


def excluded_lines(text: str, content: str) -> list[str]:
    return [line for line in text.splitlines() if content in line and "BudgetExceeded" in line]


def test_every_command_words_a_budget_exclusion_the_same_way(tmp_path: Path) -> None:
    rows = [
        {
            "content": "You are terse.",
            "tokens": 10,
            "kind": "SystemPrompt",
            "pinned": True,
            "timestamp": "2025-01-01T09:00:00Z",
        },
        {"content": "Old long answer", "tokens": 60, "timestamp": "2025-01-01T10:00:00Z"},
        {"content": "New question", "tokens": 20, "timestamp": "2025-01-01T10:05:00Z"},
    ]
    path = write_items(tmp_path, rows)
    expected = "BudgetExceeded: needs 60 tokens, 40 available"
    select = cupel("select", str(path), "--max-tokens", "70")
    explain = cupel("explain", str(path), "--max-tokens", "70", "--html", str(tmp_path / "p.html"))
    budget = cupel("min-budget", str(path), "--item", "Old long", "--search-ceiling", "70")
    assert select.returncode == explain.returncode == budget.returncode == 0
    for text in (select.stderr, explain.stdout, budget.stdout):
        assert expected in text, text
        assert "item_tokens=" not in text and "BudgetExceeded(" not in text
    assert [m.group() for m in NEEDS.finditer(select.stderr)] == [expected]
    # The HTML page says the same.
    _, page = parse(tmp_path / "p.html")
    (row,) = [r for r in page.excluded() if r.group == "BudgetExceeded"]
    assert "needs 60 tokens, 40 available" in "".join(row.text)


def test_demo_words_exclusions_like_explain() -> None:
    demo = cupel("demo", "--slicer", "greedy")  # flags: the pipeline they describe
    assert demo.returncode == 0
    shown = NEEDS.findall(demo.stdout)
    assert shown and all(
        re.fullmatch(r"BudgetExceeded: needs \d+ tokens, \d+ available", s) for s in shown
    )
    assert "item_tokens=" not in demo.stdout


def test_knapsack_exclusion_explained_only_by_bucket_rounding_says_so(tmp_path: Path) -> None:
    path = write_items(tmp_path, ROUNDING)
    flags = ["--max-tokens", "250", "--slicer", "knapsack", "--bucket-size", "100"]
    select = cupel("select", str(path), *flags)
    assert select.returncode == 0, select.stderr
    window = [i["content"] for i in json.loads(select.stdout)]
    # 150 of 250 tokens used, yet the 9-token message is out: 150 tokens round up to 2
    # buckets of 100 and the 250-token budget down to 2.
    assert window == ["Runbook: rotating API keys, step by step"]
    (line,) = excluded_lines(select.stderr, "Which key?")
    assert line.endswith(
        "BudgetExceeded: needs 9 tokens, 100 available; only knapsack bucket rounding "
        "excludes it: with --bucket-size 100 it takes 1 bucket and 0 of 2 are left"
    )
    explain = cupel("explain", str(path), *flags)
    assert "only knapsack bucket rounding excludes it: with --bucket-size 100" in explain.stdout
    # Smaller buckets make it fit.
    finer = cupel(
        "select", str(path), "--max-tokens", "250", "--slicer", "knapsack", "--bucket-size", "10"
    )
    assert "Which key?" in [i["content"] for i in json.loads(finer.stdout)]


def test_knapsack_packing_choice_has_a_reason_of_its_own(tmp_path: Path) -> None:
    rows = [
        {"content": "What region is the outage in?", "tokens": 7},  # reflexive: score 0
        {"content": "Runbook", "tokens": 100, "kind": "Document", "future_relevance_hint": 0.9},
    ]
    path = write_items(tmp_path, rows)
    flags = ["--max-tokens", "4000", "--slicer", "knapsack", "--scorer", "reflexive"]
    select = cupel("select", str(path), *flags, "--html", str(tmp_path / "p.html"))
    assert select.returncode == 0, select.stderr
    (line,) = [ln for ln in select.stderr.splitlines() if "outage" in ln]
    assert line.endswith(
        "PackingChoice: needs 7 tokens, 3900 available, but its score adds nothing to the "
        "knapsack's total (under 0.0001 counts as 0), so the best-scoring packing leaves it out"
    )
    assert "BudgetExceeded" not in select.stderr
    _, page = parse(tmp_path / "p.html")
    (row,) = [r for r in page.excluded() if r.group == "PackingChoice"]
    assert "needs 7 tokens, 3900 available" in "".join(row.text)
    greedy = cupel("select", str(path), *flags[:2], "--slicer", "greedy", "--scorer", "reflexive")
    assert len(json.loads(greedy.stdout)) == 2


def test_bucket_rounding_from_a_policy_names_the_policy_setting(tmp_path: Path) -> None:
    path = write_items(tmp_path, ROUNDING)
    policy = tmp_path / "packed.json"
    policy.write_text(
        json.dumps(
            {
                "name": "packed",
                "scorer": "recency",
                "slicer": {"type": "knapsack", "bucket_size": 100},
            }
        ),
        encoding="utf-8",
    )
    proc = cupel("select", str(path), "--max-tokens", "250", "--policy", str(policy))
    assert proc.returncode == 0, proc.stderr
    assert "with the policy's bucket_size 100 it takes 1 bucket" in proc.stderr


def test_greedy_exclusions_never_claim_rounding(tmp_path: Path) -> None:
    path = write_items(tmp_path, ROUNDING)
    proc = cupel("select", str(path), "--max-tokens", "150", "--all")
    for line in proc.stderr.splitlines():
        match = re.search(r"needs (\d+) tokens, (\d+) available", line)
        if match:
            assert int(match.group(1)) > int(match.group(2)), line
            assert "rounding" not in line


def test_table_too_large_names_the_bucket_size_flag(tmp_path: Path) -> None:
    rows = [{"content": f"note {i}", "tokens": 50 + i % 7} for i in range(600)]
    path = write_items(tmp_path, rows)
    proc = cupel(
        "select", str(path), "--max-tokens", "100000", "--slicer", "knapsack", "--bucket-size", "1"
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "cupel: error: KnapsackSlice DP table too large: 600 candidates x (100,000 + 1) "
        "capacity = 60,000,600 cells exceeds the limit of 50,000,000 cells; increase "
        "--bucket-size (now 1) or lower --target-tokens / --max-tokens\n"
    )
    assert "bucket_size" not in proc.stderr


def test_pinned_over_budget_names_the_flag_to_raise(tmp_path: Path) -> None:
    rows = [{"content": "system", "tokens": 40, "kind": "SystemPrompt", "pinned": True}]
    path = write_items(tmp_path, rows)
    proc = cupel("select", str(path), "--max-tokens", "50", "--output-reserve", "20")
    assert proc.returncode == 2
    assert proc.stderr == (
        "cupel: error: Pinned items require 40 tokens, but only 30 are available: raise "
        "--max-tokens to at least 60 (pinned tokens + --output-reserve 20)\n"
    )


def test_budget_errors_name_the_flags(tmp_path: Path) -> None:
    path = write_items(tmp_path, ROUNDING)
    proc = cupel("select", str(path), "--max-tokens", "100", "--target-tokens", "200")
    assert proc.returncode == 2
    assert proc.stderr == (
        "cupel: error: invalid budget: --target-tokens: must be <= --max-tokens (100), got 200\n"
    )


def test_an_unknown_flag_is_named_with_the_missing_one(tmp_path: Path) -> None:
    path = write_items(tmp_path, ROUNDING)
    budget = cupel("select", str(path), "--budget", "100")
    assert budget.returncode == 2
    assert budget.stderr == (
        "cupel: error: unrecognized arguments: --budget; the following arguments are "
        "required: --max-tokens (see 'cupel select --help')\n"
    )
    typo = cupel("select", str(path), "--max-token", "100")
    assert "unrecognized arguments: --max-token (did you mean --max-tokens?)" in typo.stderr


def test_negative_token_counts_are_not_added_to_the_tokens_considered(tmp_path: Path) -> None:
    rows = [{"content": "a", "tokens": 1}, {"content": "b", "tokens": -2}]
    path = write_items(tmp_path, rows)
    select = cupel("select", str(path), "--max-tokens", "100", "--html", str(tmp_path / "p.html"))
    assert select.returncode == 0, select.stderr
    assert (
        "1 of 2 items selected, 1 of 1 tokens, 1 item with a negative token count left out "
        in select.stderr
    )
    assert "-1 tokens" not in select.stderr
    explain = cupel("explain", str(path), "--max-tokens", "100")
    assert explain.stdout.splitlines()[0].startswith(
        "cupel explain: 2 candidates (1 tokens, 1 item with a negative token count left out)"
    )
    assert "of -1" not in (tmp_path / "p.html").read_text(encoding="utf-8")
