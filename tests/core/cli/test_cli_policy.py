"""``--policy NAME|FILE`` on select / explain / demo, and ``--report json`` on select / demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testkit import (
    ITEMS,
    assert_one_line_error,
    context_items,
    run,
    run_process,
    write_items,
)

from cupel import ContextBudget, Pipeline, SelectionReport
from cupel.policy import Policy
from cupel.presets import PRESET_NAMES, preset

BUDGET = ContextBudget(max_tokens=100, target_tokens=100)


QUERY = "which assistant is helpful?"


def library_window(pipeline: Pipeline) -> list[str]:
    return [i.content for i in pipeline.run(context_items(ITEMS), BUDGET).items]


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_each_preset_selects_what_the_library_selects(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    path = write_items(tmp_path, ITEMS)
    pipeline = Pipeline.from_policy(name)
    query = ["--query", QUERY] if pipeline.needs_query else []  # recall: a query to bind
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "100", "--policy", name, *query
    )
    assert status == 0, err
    if pipeline.needs_query:
        pipeline = pipeline.with_query(QUERY)
    assert [i["content"] for i in json.loads(out)] == library_window(pipeline)


def test_preset_names_are_case_insensitive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, lower, _ = run(capsys, "select", str(path), "--max-tokens", "100", "--policy", "code_review")
    _, other, _ = run(capsys, "select", str(path), "--max-tokens", "100", "--policy", "Code-Review")
    assert lower == other


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_policy_files(capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    policy = Policy.from_dict(
        {
            "scorer": {
                "type": "composite",
                "scorers": [
                    {"weight": 2, "scorer": "priority"},
                    {"weight": 1, "scorer": {"type": "tag", "tag_weights": {"runbook": 1.0}}},
                ],
            },
            "slicer": {"type": "knapsack", "bucket_size": 5},
            "placer": "u_shaped",
            "deduplication": False,
        }
    )
    policy_path = tmp_path / f"policy{suffix}"
    policy.save(policy_path)
    path = write_items(tmp_path, ITEMS)
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "100", "--policy", str(policy_path)
    )
    assert status == 0, err
    assert [i["content"] for i in json.loads(out)] == library_window(policy.build())
    assert "Deduplicated" not in err  # deduplication off, as the file says


@pytest.mark.parametrize(
    "flags",
    [
        ["--scorer", "kind"],
        ["--scorer", "tag", "--tag-weight", "a=1"],
        ["--slicer", "greedy"],
        ["--bucket-size", "10"],
        ["--placer", "chronological"],
        ["--no-dedup"],
        ["--overflow", "throw"],
    ],
)
def test_policy_excludes_the_individual_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str]
) -> None:
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "100", "--policy", "chat", *flags),
        f"--policy cannot be combined with {flags[0]}",
        "the policy sets the scorer, slicer, placer, deduplication and overflow strategy",
    )


def test_bad_policy_file_names_the_file_and_the_path_in_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[scorer]\ntype = "composite"\n[[scorer.scorers]]\nweight = 1\n'
        '[scorer.scorers.scorer]\ntype = "recency"\n[[scorer.scorers]]\nweight = 2\n'
        '[scorer.scorers.scorer]\ntype = "astrology"\n',
        encoding="utf-8",
    )
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "100", "--policy", str(bad)),
        f"policy file {bad}: ",
        "unknown type 'astrology'",
    )


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("broken.json", "{not json", "policy: invalid JSON"),
        ("broken.toml", "scorer = ", "policy: invalid TOML"),
        ("empty.json", "{}", "scorer: is required"),
        ("extra.json", '{"scorer": "kind", "budget": 5}', "budget: unknown key"),
    ],
)
def test_malformed_policy_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: str, needle: str
) -> None:
    policy = tmp_path / name
    policy.write_text(content, encoding="utf-8")
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "100", "--policy", str(policy)),
        f"policy file {policy}: ",
        needle,
    )


def test_unknown_policy_names_the_presets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "100", "--policy", "summary"),
        "--policy 'summary' is neither a preset (chat, code_review, rag, document_qa, "
        "tool_use, long_running, recall, debugging) nor a .json / .toml policy file",
    )
    missing = tmp_path / "gone.json"
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "100", "--policy", str(missing)),
        f"--policy: cannot read {missing}: No such file or directory",
    )


def test_demo_with_a_preset(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "demo", "--policy", "rag")
    assert status == 0
    assert out.splitlines()[2].startswith("  chosen by: policy rag: Retriever relevance first")
    _, default, _ = run(capsys, "demo")
    assert out != default


# -- --report json -----------------------------------------------------------------------
def test_select_json_puts_window_and_report_on_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    _, text_window, _ = run(capsys, "select", str(path), "--max-tokens", "100")
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "100", "--report", "json")
    assert status == 0 and err == ""
    document = json.loads(out)
    assert list(document) == ["window", "report"]
    assert document["window"] == json.loads(text_window)  # the same window as without it
    report = SelectionReport.from_dict(document["report"])
    assert [e.item.content for e in report.included] == [i["content"] for i in document["window"]]
    assert report.total_candidates == 6 and len(report.excluded) == 3
    assert {e.reason.name for e in report.excluded} == {"Deduplicated", "BudgetExceeded"}


def test_select_json_keeps_overflow_in_the_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, [ITEMS[0] | {"tokens": 60}])
    status, out, err = run(
        capsys,
        "select",
        str(path),
        "--max-tokens",
        "100",
        "--target-tokens",
        "50",
        "--overflow",
        "proceed",
        "--report",
        "json",
    )
    assert status == 0
    assert json.loads(out)["report"]["overflow"]["tokens_over_budget"] == 10
    assert "warning: window exceeds target_tokens by 10 tokens" in err


def test_demo_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "demo", "--report", "json", "--policy", "chat")
    assert status == 0 and err == ""
    document = json.loads(out)
    assert document["command"] == "demo"
    assert document["config"] == "policy chat: The newest whole turns that fit, without holes."
    assert document["budget"] == {"max_tokens": 8000, "target_tokens": 6000}
    # The window is the transcript's messages (a tool call and its results are one unit).
    assert len(document["window"]) > len(document["report"]["included"]) > 40
    assert all("role" in message for message in document["window"])
    assert document["report"]["total_candidates"] == 273


def test_json_errors_stay_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    assert_one_line_error(
        *run(capsys, "select", str(path), "--max-tokens", "5", "--report", "json"),
        "Pinned items require 10",
    )


@pytest.mark.slow
def test_select_policy_json_in_a_real_process(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = run_process(
        "select", str(path), "--max-tokens", "100", "--policy", "rag", "--report", "json"
    )
    assert proc.returncode == 0 and proc.stderr == ""
    document = json.loads(proc.stdout)
    assert [i["content"] for i in document["window"]] == library_window(preset("rag").build())


@pytest.mark.slow
def test_bad_policy_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"scorer": "kind", "placer": "sideways"}', encoding="utf-8")
    path = write_items(tmp_path, ITEMS)
    proc = run_process("select", str(path), "--max-tokens", "100", "--policy", str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"cupel: error: policy file {bad}: placer")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
