"""The conformance runner itself, on vectors written to a temporary directory."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from cupel.conformance import (
    VectorError,
    build_placer,
    build_scorer,
    build_slicer,
    default_vector_dir,
    main,
    run_paths,
    run_vector,
)

PLACING_OK = """
[test]
name = "chronological"
stage = "placing"
placer = "chronological"

[[items]]
content = "a"
tokens = 1
score = 0.1
timestamp = 2024-01-01T00:00Z

[[items]]
content = "b"
tokens = 1
score = 0.9
timestamp = 2024-01-02T00:00:00Z

[expected]
ordered_contents = ["a", "b"]
"""

PLACING_WRONG_ORDER = PLACING_OK.replace('["a", "b"]', '["b", "a"]')

SCORING = """
[test]
name = "priority"
stage = "scoring"
scorer = "priority"

[[items]]
content = "low"
tokens = 1
priority = 1

[[items]]
content = "high"
tokens = 1
priority = 9

[[expected]]
content = "low"
score_approx = 0.0

[[expected]]
content = "high"
score_approx = {high}
"""

# The spec's own diagnostics example (chapter "Test Vector Format").
DIAGNOSTICS = """
[test]
name = "Pipeline diagnostics: BudgetExceeded exclusion reason"
stage = "pipeline"

[budget]
max_tokens = 1000
target_tokens = 200
output_reserve = 0

[config]
slicer = "greedy"
placer = "chronological"
deduplication = false

[[config.scorers]]
type = "recency"
weight = 1.0

[[items]]
content = "fits"
tokens = 150
kind = "Message"
timestamp = 2024-06-01T00:00:00Z

[[items]]
content = "too-big"
tokens = 400
kind = "Message"
timestamp = 2024-01-01T00:00:00Z

[[expected_output]]
content = "fits"

[expected.diagnostics.summary]
total_candidates = 2
total_tokens_considered = 550

[[expected.diagnostics.included]]
content = "fits"
score_approx = 1.0
inclusion_reason = "Scored"

[[expected.diagnostics.excluded]]
content = "too-big"
score_approx = 0.0
exclusion_reason = "BudgetExceeded"
item_tokens = 400
available_tokens = 50
"""

COUNT_QUOTA_THROW = """
[test]
name = "count quota throw"
stage = "slicing"
slicer = "count_quota"
expect_error = "{text}"

[budget]
target_tokens = 500

[config]
scarcity_behavior = "{scarcity}"

[[config.entries]]
kind = "tool"
require_count = 2
cap_count = 3

[[scored_items]]
content = "tool-a"
tokens = 100
score = 0.9
kind = "tool"
"""

KIND_CONSTRUCTION_ERROR = """
[test]
name = "kind weight"
stage = "scoring"
scorer = "kind"
expect_construction_error = true

[[config.weights]]
kind = "Message"
weight = {weight}
"""

OVERFLOW_PROCEED = """
[test]
name = "proceed"
stage = "pipeline"

[budget]
max_tokens = 100
target_tokens = 50

[config]
slicer = "greedy"
placer = "chronological"
overflow_strategy = "proceed"

[[config.scorers]]
type = "kind"

[[items]]
content = "system"
tokens = 60
kind = "SystemPrompt"
pinned = true

[[expected_output]]
content = "system"

[expected]
overflow_tokens_over_budget = {over}
"""

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)
SUMMARY = re.compile(r"^\d+ passed, \d+ failed$")


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def messages(tmp_path: Path, text: str) -> tuple[str, ...]:
    return run_vector(write(tmp_path, "v.toml", text)).messages


# -- passing and failing vectors ----------------------------------------------------------
def test_a_correct_vector_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "ok.toml", PLACING_OK)
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["1 passed, 0 failed"]


def test_wrong_order_names_the_file_and_the_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "wrong.toml", PLACING_WRONG_ORDER)
    assert main([str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("FAIL ") and "wrong.toml: " in lines[0]
    assert "expected ['b', 'a'], got ['a', 'b']" in lines[0]
    assert lines[-1] == "0 passed, 1 failed"


def test_directories_are_searched_recursively_in_sorted_order(tmp_path: Path) -> None:
    write(tmp_path, "b/two.toml", PLACING_WRONG_ORDER)
    write(tmp_path, "a/one.toml", PLACING_OK)
    write(tmp_path, "a/notes.txt", "not a vector")
    result = run_paths([tmp_path])
    assert [Path(v.path).name for v in result.vectors] == ["one.toml", "two.toml"]
    assert (result.passed, result.failed, result.summary()) == (1, 1, "1 passed, 1 failed")


def test_closing_line_counts_vectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "1.toml", PLACING_OK)
    write(tmp_path, "2.toml", PLACING_OK)
    write(tmp_path, "3.toml", PLACING_WRONG_ORDER)
    assert main([str(tmp_path)]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert SUMMARY.match(last) and last == "2 passed, 1 failed"


def test_every_difference_gets_its_own_fail_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SCORING.format(high=0.5).replace("score_approx = 0.0", "score_approx = 0.25")
    path = write(tmp_path, "scores.toml", text)
    assert main([str(path)]) == 1
    fails = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL")]
    # score() and score_all() are both checked, for both items.
    assert len(fails) == 4
    assert all("scores.toml: " in line for line in fails)
    assert "score of 'low': expected 0.25, got 0.0 (epsilon=1e-09)" in fails[0]


# -- unknown types are failures ----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (PLACING_OK.replace('stage = "placing"', 'stage = "sorting"'), "unknown stage 'sorting'"),
        (SCORING.format(high=1.0).replace('"priority"\n\n', '"astrology"\n\n'), "unknown scorer"),
        (PLACING_OK.replace('placer = "chronological"', 'placer = "spiral"'), "unknown placer"),
        (COUNT_QUOTA_THROW.replace("count_quota", "lottery"), "unknown slicer"),
        ("[test]\nname = 'x'\n", "unknown stage None"),
        ("this is = not [toml", "invalid TOML"),
    ],
)
def test_unknown_or_malformed_vectors_fail(tmp_path: Path, text: str, needle: str) -> None:
    found = messages(tmp_path, text)
    assert found and needle in found[0]


def test_unknown_keys_are_ignored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = PLACING_OK.replace('content = "a"', 'content = "a"\nmood = "calm"') + "\n[extra]\nx=1\n"
    path = write(tmp_path, "v.toml", text)
    result = run_vector(path)
    assert result.passed and result.messages == ()
    assert result.warnings == (
        "items[0]: unknown key 'mood' ignored",
        "unknown key 'extra' ignored",
    )
    assert main([str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["1 passed, 0 failed"]
    assert err.splitlines() == [
        f"WARN {path}: items[0]: unknown key 'mood' ignored",
        f"WARN {path}: unknown key 'extra' ignored",
    ]
    assert main([str(path), "--json"]) == 0
    (vector,) = json.loads(capsys.readouterr().out)["vectors"]
    assert vector["status"] == "passed" and len(vector["warnings"]) == 2


@pytest.mark.parametrize(
    ("old", "new", "where", "meant"),
    [
        ('content = "a"', 'content = "a"\npined = true', "items[0]", "pinned"),
        ("tokens = 1", "tokes = 1", "items[0]", "tokens"),
        ('placer = "chronological"', 'Placer = "chronological"', "test", "placer"),
        ("ordered_contents", "ordered-contents", "expected", "ordered_contents"),
        ("[expected]", "[expected]\nselected_content = []", "expected", "selected_contents"),
        ("[test]", "[tolerance]\nscore_epsilon_ = 0.1\n\n[test]", "tolerance", "score_epsilon"),
    ],
)
def test_a_near_miss_of_a_known_key_fails_naming_the_key_it_meant(
    tmp_path: Path, old: str, new: str, where: str, meant: str
) -> None:
    found = messages(tmp_path, PLACING_OK.replace(old, new, 1))
    assert found and found[0].startswith(f"vector error: {where}: unknown key")
    assert f"(did you mean {meant!r}?)" in found[0]


def test_near_misses_are_found_in_nested_config_tables(tmp_path: Path) -> None:
    text = COUNT_QUOTA_THROW.replace("require_count", "requires_count", 1)
    found = messages(tmp_path, text)
    assert (
        "config.entries[0]: unknown key 'requires_count' (did you mean 'require_count'?)"
        in (found[0])
    )


def test_user_data_tables_may_hold_any_key(tmp_path: Path) -> None:
    text = PLACING_OK.replace('content = "a"', 'content = "a"\nmetadata = { pined = "x" }')
    result = run_vector(write(tmp_path, "v.toml", text))
    assert result.passed and result.warnings == ()


def test_a_file_that_is_not_utf8_fails_by_name_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "a.toml", PLACING_OK)
    (tmp_path / "b.toml").write_bytes(
        PLACING_OK.replace("chronological", "caf\xe9").encode("latin-1")
    )
    write(tmp_path, "c.toml", PLACING_OK)
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL ") and "b.toml: not valid UTF-8 text" in out[0]
    assert out[-1] == "2 passed, 1 failed"


def test_toml_nested_too_deeply_to_parse_fails_by_name(tmp_path: Path) -> None:
    text = PLACING_OK + "\n[extra]\nx = " + "[" * 1000 + "]" * 1000 + "\n"
    found = messages(tmp_path, text)
    assert found == ("nested too deeply to parse (vectors may nest at most 100 levels)",)


def test_data_nested_past_the_vector_limit_fails_with_the_path(tmp_path: Path) -> None:
    text = PLACING_OK + "\n[extra]\nx = " + "[" * 150 + "]" * 150 + "\n"
    (found,) = messages(tmp_path, text)
    assert found.startswith("vector error: extra.x[0][0]")
    assert found.endswith("nested deeper than 100 tables/arrays (the limit for vectors)")


def test_a_vector_without_assertions_fails(tmp_path: Path) -> None:
    text = PLACING_OK.split("[expected]")[0]
    assert "makes no assertion" in messages(tmp_path, text)[0]


def test_builders_reject_unknown_types() -> None:
    with pytest.raises(VectorError, match="unknown scorer type 'nope'"):
        build_scorer({"type": "nope"})
    with pytest.raises(VectorError, match="unknown slicer type"):
        build_slicer("nope", {})
    with pytest.raises(VectorError, match="unknown placer type"):
        build_placer("nope")
    with pytest.raises(VectorError, match="decay curve"):
        build_scorer({"type": "decay", "reference_time": NOW, "curve": {"type": "x"}})
    with pytest.raises(VectorError, match="reference_time"):
        build_scorer({"type": "decay", "curve": {"type": "window", "max_age_secs": 1}})


# -- scoring, tolerance -------------------------------------------------------------------
def test_scores_pass_within_epsilon(tmp_path: Path) -> None:
    assert messages(tmp_path, SCORING.format(high=1.0)) == ()
    assert messages(tmp_path, SCORING.format(high=0.9999)) != ()
    loose = SCORING.format(high=0.9999) + "\n[tolerance]\nscore_epsilon = 0.001\n"
    assert messages(tmp_path, loose) == ()


def test_missing_expected_content_is_reported(tmp_path: Path) -> None:
    text = SCORING.format(high=1.0).replace('content = "high"\nscore', 'content = "ghost"\nscore')
    assert "no item with content 'ghost'" in messages(tmp_path, text)[0]


# -- diagnostics ------------------------------------------------------------------------
def test_diagnostics_vector_passes(tmp_path: Path) -> None:
    assert messages(tmp_path, DIAGNOSTICS) == ()


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("available_tokens = 50", "available_tokens = 49", "available_tokens: expected 49, got 50"),
        (
            'exclusion_reason = "BudgetExceeded"',
            'exclusion_reason = "Deduplicated"',
            "expected 'Deduplicated', got 'BudgetExceeded'",
        ),
        (
            "total_tokens_considered = 550",
            "total_tokens_considered = 551",
            "total_tokens_considered: expected 551, got 550",
        ),
        (
            'inclusion_reason = "Scored"',
            'inclusion_reason = "Pinned"',
            "inclusion_reason: expected 'Pinned'",
        ),
        (
            "score_approx = 1.0",
            "score_approx = 0.5",
            "included[0] ('fits') score: expected 0.5, got 1.0",
        ),
        (
            "available_tokens = 50",
            'available_tokens = 50\ndisplaced_by = "x"',
            "BudgetExceeded has no displaced_by",
        ),
        (
            '[[expected_output]]\ncontent = "fits"',
            '[[expected_output]]\ncontent = "too-big"',
            "output: expected ['too-big'], got ['fits']",
        ),
    ],
)
def test_diagnostics_differences_are_reported(
    tmp_path: Path, old: str, new: str, needle: str
) -> None:
    assert old in DIAGNOSTICS
    found = messages(tmp_path, DIAGNOSTICS.replace(old, new))
    assert any(needle in m for m in found), found


def test_excluded_entries_are_compared_in_order(tmp_path: Path) -> None:
    extra = (
        '\n[[expected.diagnostics.excluded]]\ncontent = "ghost"\nscore_approx = 0.0\n'
        'exclusion_reason = "BudgetExceeded"\n'
    )
    found = messages(tmp_path, DIAGNOSTICS + extra)
    assert "diagnostics.excluded contents: expected ['too-big', 'ghost'], got ['too-big']" in found


def test_overflow_events_are_checked(tmp_path: Path) -> None:
    assert messages(tmp_path, OVERFLOW_PROCEED.format(over=10)) == ()
    found = messages(tmp_path, OVERFLOW_PROCEED.format(over=11))
    assert found == ("overflow events: expected one with tokens_over_budget=11, got 1 [10]",)


# -- expected errors ---------------------------------------------------------------------
def test_expect_error_passes_when_the_error_matches(tmp_path: Path) -> None:
    text = COUNT_QUOTA_THROW.format(text="candidate pool for kind", scarcity="throw")
    assert messages(tmp_path, text) == ()


def test_expect_error_fails_on_another_message(tmp_path: Path) -> None:
    text = COUNT_QUOTA_THROW.format(text="something else", scarcity="throw")
    (message,) = messages(tmp_path, text)
    assert "expected an error containing 'something else', got CountRequirementError" in message


def test_expect_error_fails_when_the_run_succeeds(tmp_path: Path) -> None:
    text = COUNT_QUOTA_THROW.format(text="candidate pool", scarcity="degrade")
    assert messages(tmp_path, text) == (
        "expected an error containing 'candidate pool', but the run succeeded",
    )


def test_expect_error_on_a_pipeline(tmp_path: Path) -> None:
    text = OVERFLOW_PROCEED.format(over=10).replace('"proceed"', '"throw"')
    text = text.replace(
        'stage = "pipeline"', 'stage = "pipeline"\nexpect_error = "exceeding target"'
    )
    assert messages(tmp_path, text) == ()


def test_expect_construction_error(tmp_path: Path) -> None:
    assert messages(tmp_path, KIND_CONSTRUCTION_ERROR.format(weight=-1.0)) == ()
    (message,) = messages(tmp_path, KIND_CONSTRUCTION_ERROR.format(weight=0.5))
    assert message == "expected a construction error, but KindScorer was built"


def test_expect_construction_error_needs_a_known_type(tmp_path: Path) -> None:
    text = KIND_CONSTRUCTION_ERROR.format(weight=-1.0).replace('"kind"', '"nope"', 1)
    assert "unknown scorer type 'nope'" in messages(tmp_path, text)[0]


# -- command line ------------------------------------------------------------------------
def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "a.toml", PLACING_OK)
    write(tmp_path, "b.toml", PLACING_WRONG_ORDER)
    assert main([str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failed"], report["total"]) == (1, 1, 2)
    first, second = report["vectors"]
    assert set(first) == {"path", "name", "stage", "status", "messages", "warnings"}
    assert (first["name"], first["stage"], first["status"], first["messages"]) == (
        "chronological",
        "placing",
        "passed",
        [],
    )
    assert second["status"] == "failed" and second["path"].endswith("b.toml")
    assert second["messages"] == ["order: expected ['b', 'a'], got ['a', 'b']"]


def test_missing_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "error: no such file or directory" in err and err.count("\n") == 1


def test_empty_directory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 2
    assert "no .toml vectors found" in capsys.readouterr().err


def test_default_directory_is_the_repository_suite() -> None:
    default = default_vector_dir()
    assert default is not None
    assert default.resolve() == (Path(__file__).resolve().parents[3] / "conformance")


@pytest.mark.slow
def test_module_entry_point(tmp_path: Path) -> None:
    path = write(tmp_path, "wrong.toml", PLACING_WRONG_ORDER)
    proc = subprocess.run(
        [sys.executable, "-m", "cupel.conformance", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "0 passed, 1 failed"


# -- slicing -----------------------------------------------------------------------------
CAP_EXCLUSION = """
[test]
name = "cap exclusion"
stage = "slicing"
slicer = "count_constrained_knapsack"

[budget]
target_tokens = 600

[config]
bucket_size = 100

[[config.entries]]
kind = "tool"
require_count = 1
cap_count = 2

[[scored_items]]
content = "tool-a"
tokens = 100
score = 0.9
kind = "tool"

[[scored_items]]
content = "tool-b"
tokens = 100
score = 0.8
kind = "tool"

[[scored_items]]
content = "tool-c"
tokens = 100
score = 0.7
kind = "tool"

[expected]
selected_contents = {selected}
shortfall_count = {shortfalls}
cap_excluded_count = {capped}
"""


def test_slicing_set_and_counts_are_checked(tmp_path: Path) -> None:
    good = CAP_EXCLUSION.format(selected='["tool-b", "tool-a"]', shortfalls=0, capped=1)
    assert messages(tmp_path, good) == ()
    wrong = CAP_EXCLUSION.format(selected='["tool-a", "tool-c"]', shortfalls=1, capped=0)
    assert messages(tmp_path, wrong) == (
        "selected: expected ['tool-a', 'tool-c'], got ['tool-a', 'tool-b'] "
        "(missing ['tool-c'], unexpected ['tool-b'])",
        "shortfall_count: expected 1, got 0",
        "cap_excluded_count: expected 0, got 1",
    )


# -- pipeline: both collector paths and the report's own invariants ----------------------
def test_pipeline_output_must_not_depend_on_diagnostics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cupel import Pipeline

    original = Pipeline.run

    def run_differently_without_a_collector(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if kwargs.get("collector") is None:
            return dataclasses.replace(result, items=[], total_tokens=0)
        return result

    monkeypatch.setattr(Pipeline, "run", run_differently_without_a_collector)
    assert messages(tmp_path, DIAGNOSTICS) == (
        "output without diagnostics: expected ['fits'], got []",
        "total_tokens without diagnostics: expected 150, got 0",
    )


def test_expected_errors_must_be_raised_without_diagnostics_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cupel import Pipeline

    original = Pipeline.run

    def swallow_errors_without_a_collector(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("collector") is None:
            return None
        return original(self, *args, **kwargs)

    text = OVERFLOW_PROCEED.format(over=10).replace('"proceed"', '"throw"')
    text = text.replace(
        'stage = "pipeline"', 'stage = "pipeline"\nexpect_error = "exceeding target"'
    )
    assert messages(tmp_path, text) == ()
    monkeypatch.setattr(Pipeline, "run", swallow_errors_without_a_collector)
    assert messages(tmp_path, text) == (
        "without diagnostics: expected an error containing 'exceeding target', "
        "but the run succeeded",
    )


def test_report_invariants_are_checked() -> None:
    from cupel import (
        BudgetExceeded,
        ContextItem,
        ExcludedItem,
        IncludedItem,
        InclusionReason,
        SelectionReport,
    )
    from cupel.conformance._pipeline_vectors import report_invariants

    a, b, c = (ContextItem(content=x, tokens=10) for x in "abc")
    report = SelectionReport(
        events=(),
        included=(IncludedItem(a, 0.5, InclusionReason.SCORED),),
        excluded=(
            ExcludedItem(b, 0.1, BudgetExceeded(10, 0)),
            ExcludedItem(c, 0.2, BudgetExceeded(10, 0)),
        ),
        total_candidates=4,
        total_tokens_considered=31,
    )
    assert report_invariants(report, [a]) == [
        "report.total_candidates 4 != included + excluded 3",
        "report.total_tokens_considered 31 != tokens of included + excluded 30",
        "report.excluded is not sorted by score descending: [0.1, 0.2]",
    ]
    assert report_invariants(report, [b])[0] == "report.included ['a'] is not the window ['b']"


# -- builders ----------------------------------------------------------------------------
def test_scaled_inner_scorer_reads_the_keys_beside_it() -> None:
    from cupel import ContextKind, KindScorer, ScaledScorer

    scaled = build_scorer(
        {"type": "scaled", "inner_scorer": "kind", "weights": [{"kind": "Memory", "weight": 2}]}
    )
    assert isinstance(scaled, ScaledScorer) and isinstance(scaled.inner, KindScorer)
    assert dict(scaled.inner.weights) == {ContextKind.MEMORY: 2.0}
    with pytest.raises(VectorError, match="needs 'inner_scorer' or \\[inner\\]"):
        build_scorer({"type": "scaled", "inner_scorer": "scaled"})


@pytest.mark.slow
def test_a_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    for i in range(400):  # a JSON report larger than a pipe buffer
        write(tmp_path, f"v{i:03d}.toml", PLACING_WRONG_ORDER)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cupel.conformance", str(tmp_path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    status = proc.wait(timeout=60)
    assert "Traceback" not in proc.stderr.read().decode()
    assert status == 1  # the vectors' verdict, not a crash
