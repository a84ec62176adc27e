"""The benchmark harness runs (``python -m benchmarks --quick``) and prints its table.

A check that the harness works, not a timing gate: no figure is compared with a limit.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the benchmarks' quick run, a real process

ROOT = Path(__file__).resolve().parents[3]
HEADER = (
    "workload",
    "N",
    "median ms",
    "min–max ms",
    "peak MiB",
    "input MiB",
    "÷floor",
    "incumbent ms",
    "÷incumbent",
    "×10 N",
)
CORE_ROWS = {
    ("W1 chat", "100"),
    ("W1 chat", "1,000"),
    ("W2 rag bucket 100", "200"),
    ("W2 rag bucket 1", "200"),
    ("W3 stress", "100"),
    ("W3 stress", "1,000"),
    ("W3f frequency", "1,000"),
    ("W4 quota", "1,000"),
}
NUMBER = r"\d[\d,]*(\.\d+)?"


def half_unit(printed: str) -> float:
    """Half the last printed digit's unit: how far rounding may have moved ``printed``."""
    decimals = len(printed.partition(".")[2])
    return 0.5 * 10.0**-decimals


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, object]]:
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(out.read_text())


def table(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("workload "))
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_quick_run_prints_the_table_header_and_one_row_per_case(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    stdout, _ = quick_run
    rows = table(stdout)
    assert tuple(rows[0]) == HEADER
    assert all(len(row) == len(HEADER) for row in rows[1:])
    assert {(row[0], row[1]) for row in rows[1:]} >= CORE_ROWS


def test_core_rows_have_a_median_a_range_memory_and_a_floor_ratio(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    rows = [row for row in table(quick_run[0])[1:] if (row[0], row[1]) in CORE_ROWS]
    for row in rows:
        _, _, median, spread, peak, input_mib, floor, incumbent, ratio, _ = row
        assert re.fullmatch(NUMBER, median) and float(median) > 0
        low, high = spread.split("–")
        assert float(low) <= float(median) <= float(high)
        assert re.fullmatch(NUMBER, peak) and re.fullmatch(NUMBER, input_mib)
        assert re.fullmatch(NUMBER, floor)
        assert incumbent == ratio == "–"


def test_scaling_column_is_set_exactly_for_ten_times_larger_sizes(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    rows = {(row[0], row[1]): row[9] for row in table(quick_run[0])[1:]}
    assert re.fullmatch(NUMBER, rows[("W1 chat", "1,000")])
    assert re.fullmatch(NUMBER, rows[("W3 stress", "1,000")])
    assert rows[("W1 chat", "100")] == rows[("W4 quota", "1,000")] == "–"


def test_adapter_workloads_are_measured_against_their_incumbent_or_skipped_with_a_note(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    stdout, data = quick_run
    rows = table(stdout)[1:]
    for workload, label in (
        ("W5", "W5 langchain"),
        ("W6", "W6 llamaindex"),
        ("W7", "W7 llamaindex"),
    ):
        measured = [row for row in rows if row[0].startswith(label)]
        skipped = [note for note in data["skipped"] if str(note).startswith(workload)]  # type: ignore[attr-defined]
        assert measured or skipped, f"{workload}: neither measured nor skipped"
        for row in measured:
            assert re.fullmatch(NUMBER, row[7]) and re.fullmatch(NUMBER, row[8])
        for note in skipped:
            assert f"note: {note}" in stdout


def test_the_report_price_is_measured_against_run_in_the_same_process(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    stdout, data = quick_run
    rows = {(row[0], row[1]): row for row in table(stdout)[1:]}
    for label in ("W9 report W1", "W9 report W3"):
        for variant in (label, f"{label}, entries read"):
            row = rows[(variant, "1,000")]
            assert re.fullmatch(NUMBER, row[7]) and re.fullmatch(NUMBER, row[8])
            ours, theirs, printed = (float(row[i].replace(",", "")) for i in (2, 7, 8))
            # The printed ratio is of the unrounded times: allow the rounding of all three.
            slack = (ours + half_unit(row[2])) / max(theirs - half_unit(row[7]), 1e-12) - (
                ours / theirs
            )
            assert abs(ours / theirs - printed) <= slack + half_unit(row[8]) + 1e-9
    assert "W11 (a million items) not run: add --million" in data["skipped"]  # type: ignore[operator]


def test_json_output_holds_the_same_rows(quick_run: tuple[str, dict[str, object]]) -> None:
    stdout, data = quick_run
    assert data["quick"] is True and data["runs"] == 3
    printed = {(row[0], row[1]) for row in table(stdout)[1:]}
    dumped = {(row["label"], f"{row['n']:,}") for row in data["rows"]}  # type: ignore[attr-defined]
    assert printed == dumped


def test_small_histories_and_budget_simulation_are_measured(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    """W8 rows against their incumbents (same run), W10 with its check against full runs."""
    stdout, data = quick_run
    rows = {(row[0], row[1]): row for row in table(stdout)[1:]}
    if not any(str(note).startswith("W8") for note in data["skipped"]):  # type: ignore[attr-defined]
        for label in ("W8 selector", "W8 select_messages", "W8 chat memory"):
            for n in ("10", "1,000"):
                row = rows[(label, n)]
                assert re.fullmatch(NUMBER, row[7]) and re.fullmatch(NUMBER, row[8])
                assert abs(float(row[2]) / float(row[7]) - float(row[8])) < 0.01
    assert re.fullmatch(NUMBER, rows[("W10 min budget", "1,000")][2])
    assert "same as the search over full dry runs: True" in stdout


def test_cupel_output_checks_hold_on_every_row_that_makes_them(
    quick_run: tuple[str, dict[str, object]],
) -> None:
    """Rows that check cupel's output — valid tool-call groups (W5), valid windows (W8 chat
    memory), the minimum budget of full dry runs (W10) — pass them. An incumbent's check
    ("trim_messages tool groups valid") may fail: some rows are there to show it."""
    _, data = quick_run
    rows: list[dict[str, object]] = data["rows"]  # type: ignore[assignment]
    skipped: list[str] = data["skipped"]  # type: ignore[assignment]
    ours = {
        (str(row["label"]), row["n"], name): ok
        for row in rows
        for name, ok in row["checks"].items()  # type: ignore[attr-defined]
        if name.startswith(("cupel ", "same answer"))
    }
    assert all(ours.values()), [key for key, ok in ours.items() if not ok]
    expected = {"W10 min budget"}
    for workload, label in (("W5", "W5 langchain history"), ("W8", "W8 chat memory")):
        if not any(note.startswith(workload) for note in skipped):
            expected.add(label)
    assert expected <= {label for label, _, _ in ours}
