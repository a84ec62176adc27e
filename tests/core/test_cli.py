"""The ``cupel`` command line: select, demo, conformance, and its error handling."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cupel.cli import main

ITEMS: list[dict[str, Any]] = [
    {
        "content": "You are a helpful assistant.",
        "tokens": 10,
        "kind": "SystemPrompt",
        "pinned": True,
    },
    {"content": "How do I restart the service?", "tokens": 30, "timestamp": "2025-01-01T10:00:00Z"},
    {"content": "Use systemctl restart app.", "tokens": 40, "timestamp": "2025-01-01T10:01:00Z"},
    {
        "content": "Runbook: restarting app safely",
        "tokens": 50,
        "kind": "Document",
        "source": "Rag",
        "timestamp": "2025-01-01T10:02:00Z",
        "future_relevance_hint": 0.9,
        "tags": ["runbook"],
        "metadata": {"cupel:trust": "0.9"},
    },
    {
        "content": "Runbook: restarting app safely",
        "tokens": 50,
        "kind": "Document",
        "source": "Rag",
        "timestamp": "2025-01-01T10:03:00Z",
        "futureRelevanceHint": 0.9,
        "tags": ["runbook"],
    },
    {
        "content": "It failed with exit code 3.",
        "tokens": 25,
        "timestamp": "2025-01-01T10:04:00Z",
        "priority": 5,
        "tags": ["error"],
    },
]
TOTAL_TOKENS = sum(i["tokens"] for i in ITEMS)

Run = tuple[int, str, str]


@pytest.fixture
def items_json(tmp_path: Path) -> Path:
    path = tmp_path / "items.json"
    path.write_text(json.dumps(ITEMS, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def items_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in ITEMS) + "\n\n", encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def window(out: str) -> list[str]:
    return [item["content"] for item in json.loads(out)]


def assert_one_line_error(status: int, out: str, err: str, *needles: str) -> None:
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("cupel: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


# -- select ------------------------------------------------------------------------------
def test_select_from_a_json_array(capsys: pytest.CaptureFixture[str], items_json: Path) -> None:
    status, out, err = run(capsys, "select", str(items_json), "--max-tokens", "1000")
    assert status == 0
    selected = json.loads(out)
    # Everything fits; the duplicate runbook is removed; chronological order, untimed last.
    assert [i["content"] for i in selected] == [
        "How do I restart the service?",
        "Use systemctl restart app.",
        "Runbook: restarting app safely",
        "It failed with exit code 3.",
        "You are a helpful assistant.",
    ]
    assert selected[-1] == {
        "content": "You are a helpful assistant.",
        "tokens": 10,
        "kind": "SystemPrompt",
        "source": "Chat",
        "pinned": True,
    }
    assert "included (placed order):" in err and "excluded (score descending):" in err
    assert "<- Deduplicated: same content as kept item 'Runbook: restarting app safely'" in err
    assert f"5 of 6 items selected, 155 of {TOTAL_TOKENS} tokens" in err
    # The report says why the system prompt ends the window.
    assert err.rstrip().endswith(
        "note: 1 item without a timestamp (SystemPrompt 1) placed after the dated ones: the "
        "chronological placer puts undated items last (give them a timestamp, or use "
        "--placer u-shaped)"
    )


def test_select_from_jsonl_matches_the_array(
    capsys: pytest.CaptureFixture[str], items_json: Path, items_jsonl: Path
) -> None:
    _, from_array, _ = run(capsys, "select", str(items_json), "--max-tokens", "100")
    status, from_lines, err = run(capsys, "select", str(items_jsonl), "--max-tokens", "100")
    assert status == 0 and from_lines == from_array
    assert "Use systemctl restart app.  <- BudgetExceeded: needs 40 tokens, 15 available" in err


def test_select_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, items_jsonl: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(items_jsonl.read_text(encoding="utf-8")))
    status, out, _ = run(capsys, "select", "-", "--max-tokens", "1000")
    assert status == 0 and len(json.loads(out)) == 5


def test_empty_input_selects_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "10")
    assert (status, json.loads(out)) == (0, [])
    assert "0 of 0 items selected" in err


def test_target_tokens_limits_the_window(
    capsys: pytest.CaptureFixture[str], items_json: Path
) -> None:
    _, out, err = run(
        capsys, "select", str(items_json), "--max-tokens", "1000", "--target-tokens", "40"
    )
    assert sum(i["tokens"] for i in json.loads(out)) <= 40
    assert "of target 40" in err and "of max 1,000" in err


def test_output_reserve_shrinks_the_room(
    capsys: pytest.CaptureFixture[str], items_json: Path
) -> None:
    args = ("select", str(items_json), "--max-tokens", "100")
    _, without, _ = run(capsys, *args)
    _, with_reserve, _ = run(capsys, *args, "--output-reserve", "50")
    assert sum(i["tokens"] for i in json.loads(with_reserve)) <= 50
    assert len(json.loads(with_reserve)) < len(json.loads(without))


def test_no_dedup_keeps_duplicates(capsys: pytest.CaptureFixture[str], items_json: Path) -> None:
    _, out, err = run(capsys, "select", str(items_json), "--max-tokens", "1000", "--no-dedup")
    assert window(out).count("Runbook: restarting app safely") == 2
    assert "Deduplicated" not in err


def test_u_shaped_placer_puts_the_best_at_the_edges(
    capsys: pytest.CaptureFixture[str], items_json: Path
) -> None:
    _, out, _ = run(
        capsys, "select", str(items_json), "--max-tokens", "1000", "--placer", "u-shaped"
    )
    placed = window(out)
    assert placed[0] == "You are a helpful assistant."  # pinned: score 1.0, first edge
    assert placed != window(run(capsys, "select", str(items_json), "--max-tokens", "1000")[1])


@pytest.mark.parametrize(
    "flags",
    [
        ["--scorer", "recency"],
        ["--scorer", "priority"],
        ["--scorer", "kind:2", "--scorer", "recency:1"],
        ["--scorer", "frequency"],
        ["--scorer", "reflexive"],
        ["--scorer", "metadata-trust"],
        ["--scorer", "tag", "--tag-weight", "runbook=1", "--tag-weight", "error=0.5"],
        ["--scorer", "decay", "--half-life", "3600"],
        ["--slicer", "knapsack"],
        ["--slicer", "knapsack", "--bucket-size", "10"],
        ["--slicer", "greedy", "--overflow", "truncate"],
        ["--slicer", "recency-window"],
    ],
)
def test_configuration_flags(
    capsys: pytest.CaptureFixture[str], items_json: Path, flags: list[str]
) -> None:
    status, out, err = run(capsys, "select", str(items_json), "--max-tokens", "100", *flags)
    assert status == 0, err
    selected = json.loads(out)
    assert "You are a helpful assistant." in [i["content"] for i in selected]
    assert sum(i["tokens"] for i in selected) <= 100


def test_the_recency_window_slicer_keeps_the_newest_items_without_holes(
    capsys: pytest.CaptureFixture[str], items_json: Path
) -> None:
    args = ("select", str(items_json), "--max-tokens", "120", "--no-dedup")
    _, out, err = run(capsys, *args, "--slicer", "recency-window")
    # pinned system prompt (10), then newest first: exit code (25), runbook copy (50); the
    # next (the other copy, 50) does not fit the 35 left, so nothing older comes in
    assert sorted(window(out)) == [
        "It failed with exit code 3.",
        "Runbook: restarting app safely",
        "You are a helpful assistant.",
    ]
    assert "OutsideWindow" in err
    greedy = window(run(capsys, *args)[1])
    assert "How do I restart the service?" in greedy  # the greedy fill skips to older items


def test_priority_scorer_prefers_the_prioritised_item(
    capsys: pytest.CaptureFixture[str], items_json: Path
) -> None:
    _, out, _ = run(capsys, "select", str(items_json), "--max-tokens", "40", "--scorer", "priority")
    assert window(out) == ["It failed with exit code 3.", "You are a helpful assistant."]


def test_overflow_proceed_warns(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "pinned.json"
    path.write_text(json.dumps([ITEMS[0] | {"tokens": 60}]), encoding="utf-8")
    args = ("select", str(path), "--max-tokens", "100", "--target-tokens", "50")
    status, out, err = run(capsys, *args, "--overflow", "proceed")
    assert status == 0 and len(json.loads(out)) == 1
    assert "warning: window exceeds target_tokens by 10 tokens" in err
    assert_one_line_error(*run(capsys, *args), "exceeding target budget of 50")


# -- demo -------------------------------------------------------------------------------
def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "demo")
    assert status == 0 and err == ""
    assert out.startswith("cupel demo: ")
    assert "Window (" in out and "Excluded (" in out
    # The demo is a chat transcript: it shows the conversation window a user should use.
    assert "messages in 273 units" in out and "chosen by: policy chat" in out
    assert "OutsideWindow:" in out and "BudgetExceeded" not in out
    assert "more items (--all lists every item)" in out
    assert len(out.splitlines()) < 60


def test_demo_all_and_budget_flags(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "demo", "--all", "--max-tokens", "3000", "--target-tokens", "2000")
    assert status == 0
    assert "more items" not in out and "target 2,000" in out


def test_demo_data_is_a_realistic_transcript() -> None:
    from importlib import resources

    from cupel.cli import DEMO_DATA
    from cupel.cli._io import parse_input
    from cupel.cli._transcript import Transcript

    text = (resources.files("cupel.data") / DEMO_DATA).read_text(encoding="utf-8")
    transcript = parse_input(text, DEMO_DATA)
    assert isinstance(transcript, Transcript)
    roles = [m["role"] for m in transcript.messages]
    assert 350 <= len(roles) <= 500 and roles[0] == "system" and roles.count("system") == 1
    assert {"user", "assistant", "tool"} <= set(roles)
    conversation = transcript.conversation
    assert conversation.invalid_units == []  # every call answered, in time
    assert sum(map(conversation.is_exchange, range(len(conversation)))) > 100
    contents = [m["content"] for m in transcript.messages if m["role"] == "tool"]
    assert len(set(contents)) < len(contents)  # a runbook retrieved twice, verbatim


def test_demo_data_is_up_to_date() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_demo_data.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


# -- conformance ------------------------------------------------------------------------
def test_conformance_subcommand(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    vector = tmp_path / "v.toml"
    vector.write_text(
        '[test]\nname = "x"\nstage = "placing"\nplacer = "u-shaped"\n'
        '[[items]]\ncontent = "a"\ntokens = 1\nscore = 0.5\n'
        '[expected]\nordered_contents = ["a"]\n',
        encoding="utf-8",
    )
    assert run(capsys, "conformance", str(vector)) == (0, "1 passed, 0 failed\n", "")
    status, out, _ = run(capsys, "conformance", str(vector), "--json")
    assert status == 0 and json.loads(out)["passed"] == 1
    assert run(capsys, "conformance", str(vector), "--report", "json") == (status, out, "")
    assert_one_line_error(*run(capsys, "conformance", str(tmp_path / "missing")), "missing")


# -- errors ------------------------------------------------------------------------------
def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    assert_one_line_error(
        *run(capsys, "select", missing, "--max-tokens", "10"), f"cannot read {missing}"
    )


def test_bad_json_array(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"content": "a", "tokens": 1},\n  {"content": }\n]', encoding="utf-8")
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "10"),
        f"{path}: invalid JSON at line 3, column 15",
    )


def test_bad_jsonl_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"content": "a", "tokens": 1}\n{"content": "b", tokens: 2}\n', encoding="utf-8"
    )
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "10"), f"{path}, line 2: invalid JSON"
    )


def test_invalid_item_names_its_index(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"content": "a", "tokens": 1}, {"content": "", "tokens": 1}]))
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "10"),
        f"{path}: item 1: ContextItem.content",
    )


def test_invalid_item_names_its_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"content": "a", "tokens": 1}\n\n{"content": "b", "tokens": "many"}\n')
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "10"), f"{path}, line 3: ContextItem"
    )


def test_not_a_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('["just", "strings"]')
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "10"), "item 0", "expected a JSON object"
    )


def test_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_bytes(b"\xff\xfe[]")
    assert_one_line_error(*run(capsys, "select", str(path), "--max-tokens", "10"), "not UTF-8")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ([], "the following arguments are required: --max-tokens"),
        (["--max-tokens", "ten"], "invalid int value: 'ten'"),
        (["--max-tokens", "10", "--scorer", "astrology"], "unknown scorer 'astrology'"),
        (["--max-tokens", "10", "--scorer", "kind:heavy"], "weight 'heavy' is not a number"),
        (["--max-tokens", "10", "--scorer", "kind:-1"], "weight"),
        (["--max-tokens", "10", "--scorer", "tag"], "--tag-weight"),
        (["--max-tokens", "10", "--scorer", "tag", "--tag-weight", "x"], "expected TAG=WEIGHT"),
        (["--max-tokens", "10", "--tag-weight", "x=1"], "--tag-weight applies only"),
        (["--max-tokens", "10", "--scorer", "decay"], "--half-life"),
        (["--max-tokens", "10", "--scorer", "decay", "--half-life", "0"], "half"),
        (
            ["--max-tokens", "10", "--scorer", "decay", "--half-life", "inf"],
            "--half-life must be a positive number of seconds, got inf",
        ),
        (
            ["--max-tokens", "10", "--scorer", "decay", "--half-life", "nan"],
            "--half-life must be a positive number of seconds, got nan",
        ),
        (
            ["--max-tokens", "10", "--scorer", "decay", "--half-life", "1e300"],
            "--half-life 1e+300: too large for a duration",
        ),
        (
            ["--max-tokens", "10", "--scorer", "decay", "--half-life", "1e-9"],
            "--half-life 1e-09: rounds to zero",
        ),
        (
            ["--max-tokens", "10", "--slicer", "knapsack", "--bucket-size", "0"],
            "--bucket-size must be a positive integer, got 0",
        ),
        (
            ["--max-tokens", "10", "--policy", "chat", "--bucket-size", "0"],
            "--policy cannot be combined with --bucket-size",
        ),
        (["--max-tokens", "10", "--bucket-size", "5"], "--bucket-size applies only"),
        (["--max-tokens", "10", "--slicer", "magic"], "invalid choice: 'magic'"),
        (["--max-tokens", "10", "--target-tokens", "20"], "invalid budget"),
        (["--max-tokens", "-1"], "invalid budget"),
    ],
)
def test_bad_flags(
    capsys: pytest.CaptureFixture[str], items_json: Path, flags: list[str], needle: str
) -> None:
    assert_one_line_error(*run(capsys, "select", str(items_json), *flags), needle)


def test_pinned_items_over_budget(capsys: pytest.CaptureFixture[str], items_json: Path) -> None:
    assert_one_line_error(
        *run(capsys, "select", str(items_json), "--max-tokens", "5"), "Pinned items require 10"
    )


def test_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run(capsys), "a command is required")


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "select", "--help")
    assert status == 0 and "--max-tokens" in out
    assert "--policy NAME|FILE" in out and "--report {text,json}" in out and "--html FILE" in out


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--help")
    assert status == 0
    for command in ("select", "explain", "compare", "min-budget", "demo", "conformance"):
        assert f"    {command}" in out, command


# -- real processes ----------------------------------------------------------------------
@pytest.mark.slow
def test_subprocess_select(items_jsonl: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cupel.cli", "select", str(items_jsonl), "--max-tokens", "1000"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 5
    assert "included (placed order):" in proc.stderr


@pytest.mark.slow
def test_subprocess_error_has_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("[{]", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "cupel.cli", "select", str(path), "--max-tokens", "10"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("cupel: error: ") and proc.stderr.count("\n") == 1
