"""``cupel compare``: policy sensitivity as an aligned table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testkit import ITEMS, assert_one_line_error, context_items, run, run_process, write_items

from cupel import ContextBudget
from cupel.policy import Policy, policy_sensitivity
from cupel.presets import preset

ROWS = [
    {"content": "You are terse.", "tokens": 5, "kind": "SystemPrompt", "pinned": True},
    {
        "content": "old but important",
        "tokens": 40,
        "priority": 9,
        "timestamp": "2025-01-01T09:00:00Z",
    },
    {"content": "fresh chatter", "tokens": 40, "priority": 1, "timestamp": "2025-01-01T12:00:00Z"},
    {"content": "always fits", "tokens": 5, "timestamp": "2025-01-01T11:00:00Z"},
]


def policy_file(tmp_path: Path, name: str, data: dict[str, object]) -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(Policy.from_dict(data).to_toml(), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    items = write_items(tmp_path, ROWS)
    newest = policy_file(tmp_path, "newest.toml", {"scorer": "recency"})
    important = policy_file(tmp_path, "important.json", {"scorer": "priority"})
    return items, newest, important


def test_table_has_a_row_per_swinging_item_and_a_column_per_policy(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path, Path]
) -> None:
    items, newest, important = files
    status, out, err = run(
        capsys,
        "compare",
        str(items),
        "--max-tokens",
        "50",
        "--policy",
        str(newest),
        "--policy",
        str(important),
    )
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == (
        f"cupel compare: 4 candidates (90 tokens) from {items}, budget max 50 / target 50; "
        "2 items change status"
    )
    table = lines[2:]
    assert table == [
        "item                 newest                     important",
        "-------------------  -------------------------  -------------------------",
        '"old but important"  excluded (BudgetExceeded)  included',
        '"fresh chatter"      included                   excluded (BudgetExceeded)',
        "-------------------  -------------------------  -------------------------",
        "included items       3                          3",
        "included tokens      50                         50",
    ]


def test_columns_line_up(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    _, out, _ = run(
        capsys,
        "compare",
        str(path),
        "--max-tokens",
        "70",  # a budget where the three policies disagree on some items
        "--policy",
        "chat",
        "--policy",
        "document_qa",
        "--policy",
        "debugging",
    )
    table = out.splitlines()[2:]
    header = table[0]
    starts = [header.index(label) for label in ("chat", "document_qa", "debugging")]
    for line in table[2:]:
        if set(line) <= {"-", " "}:
            continue
        for start in starts:
            assert line[start - 2 : start] == "  " and line[start] != " ", (line, start)


def test_json_matches_the_library(
    capsys: pytest.CaptureFixture[str], files: tuple[Path, Path, Path]
) -> None:
    items, newest, important = files
    status, out, _ = run(
        capsys,
        "compare",
        str(items),
        "--max-tokens",
        "50",
        "--policy",
        str(newest),
        "--policy",
        str(important),
        "--report",
        "json",
    )
    assert status == 0
    document = json.loads(out)
    assert document["command"] == "compare" and document["budget"] == {
        "max_tokens": 50,
        "target_tokens": 50,
    }
    assert [v["label"] for v in document["variants"]] == ["newest", "important"]
    assert [v["policy"] for v in document["variants"]] == [str(newest), str(important)]
    assert document["diffs"] == [
        {
            "content": "old but important",
            "statuses": {"newest": "excluded", "important": "included"},
            "reasons": {"newest": "BudgetExceeded", "important": None},
        },
        {
            "content": "fresh chatter",
            "statuses": {"newest": "included", "important": "excluded"},
            "reasons": {"newest": None, "important": "BudgetExceeded"},
        },
    ]
    expected = policy_sensitivity(
        context_items(ROWS),
        ContextBudget(max_tokens=50, target_tokens=50),
        [("newest", Policy.load(newest)), ("important", Policy.load(important))],
    )
    for variant, (label, report) in zip(document["variants"], expected.variants, strict=True):
        assert variant["label"] == label
        assert [e["item"]["content"] for e in variant["report"]["included"]] == [
            e.item.content for e in report.included
        ]
        assert variant["included_tokens"] == report.included_tokens


def test_the_kept_copy_explains_a_duplicate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Under document_qa with 100-token buckets the runbook's kept copy is over budget and
    # its twin deduplicated: the table shows the reason of the kept copy.
    path = write_items(tmp_path, ITEMS)
    coarse = preset("document_qa").replace(slicer={"type": "knapsack", "bucket_size": 100})
    policy = policy_file(tmp_path, "document_qa.json", coarse.to_dict())
    _, out, _ = run(
        capsys,
        "compare",
        str(path),
        "--max-tokens",
        "100",
        "--policy",
        "chat",
        "--policy",
        str(policy),
        "--report",
        "json",
    )
    diffs = {d["content"]: d for d in json.loads(out)["diffs"]}
    runbook = diffs["Runbook: restarting app safely"]
    assert runbook["statuses"] == {"chat": "included", "document_qa": "excluded"}
    assert runbook["reasons"]["document_qa"] == "BudgetExceeded"


def test_no_swing_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    status, out, _ = run(
        capsys, "compare", str(path), "--max-tokens", "1000", "--policy", "chat", "--policy", "rag"
    )
    assert status == 0
    assert "0 items change status" in out.splitlines()[0]
    assert "(no item changes status between these policies)" in out
    assert out.splitlines()[-2].split() == ["included", "items", "6", "5"]


def test_same_stem_files_are_labelled_by_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = policy_file(tmp_path / "a", "p.json", {"scorer": "recency"})
    second = policy_file(tmp_path / "b", "p.toml", {"scorer": "priority"})
    items = write_items(tmp_path, ROWS)
    _, out, _ = run(
        capsys,
        "compare",
        str(items),
        "--max-tokens",
        "50",
        "--policy",
        str(first),
        "--policy",
        str(second),
        "--report",
        "json",
    )
    assert [v["label"] for v in json.loads(out)["variants"]] == [str(first), str(second)]


@pytest.mark.slow
def test_in_a_real_process(files: tuple[Path, Path, Path]) -> None:
    items, newest, _ = files
    proc = run_process(
        "compare", str(items), "--max-tokens", "50", "--policy", str(newest), "--policy", "chat"
    )
    assert proc.returncode == 0, proc.stderr
    assert "included tokens" in proc.stdout


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["--policy", "chat"], ["compare needs at least two --policy options, got 1"]),
        ([], ["compare needs at least two --policy options, got 0"]),
        (["--policy", "chat", "--policy", "chat"], ["--policy chat is given more than once"]),
        (["--policy", "chat", "--policy", "gossip"], ["--policy 'gossip' is neither a preset"]),
        (["--policy", "chat", "--policy", "missing.toml"], ["cannot read missing.toml"]),
        (["--policy", "chat", "--policy", "rag", "--scorer", "kind"], ["unrecognized arguments"]),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], needles: list[str]
) -> None:
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "compare", str(path), "--max-tokens", "100", *argv), *needles
    )


def test_a_bad_policy_file_names_the_file_and_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"scorer": {"type": "composite", "scorers": [{"weight": -1, "scorer": "kind"}]}}
        ),
        encoding="utf-8",
    )
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(
            capsys,
            "compare",
            str(path),
            "--max-tokens",
            "100",
            "--policy",
            "chat",
            "--policy",
            str(bad),
        ),
        f"policy file {bad}: ",
        "weight: must be > 0, got -1",
    )
