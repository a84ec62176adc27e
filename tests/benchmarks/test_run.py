"""Every workload of ``python -m benchmarks`` builds, runs and passes its own checks at a
small size (the timings themselves are the benchmark's business, not a test's)."""

from __future__ import annotations

import math

import pytest

from benchmarks.harness import Plan
from benchmarks.run import WORKLOADS, measure_workload

SMALL = {
    "W1": [100],
    "W2": [100],  # a bucket size: W2 always holds 200 documents
    "W3": [100],
    "W3f": [100],
    "W4": [100],
    "W5": [100],
    "W6": [100],
    "W7": [200],
    "W8": [10],
    "W9": [100],
    "W10": [100],
    "W11": [1_000],
}


OURS = ("cupel ", "same answer")
CHECKED = {
    "W5 langchain history",
    "W8 chat memory",
    "W8 chat memory, per turn",
    "W10 min budget",
}
"""The rows that check cupel's output (a valid window, the same answer)."""


def test_every_workload_has_a_small_size() -> None:
    assert set(SMALL) == set(WORKLOADS)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_each_workload_measures_and_passes_its_checks(workload: str) -> None:
    plan = Plan(SMALL, runs=1, warmups=0)
    rows = measure_workload(workload, plan)
    assert plan.skipped == []  # the extras are installed: nothing may be skipped
    assert rows and all(row.workload == workload for row in rows)
    for row in rows:
        assert row.timing.runs == 1 and math.isfinite(row.timing.median_ms)
        assert row.timing.median_ms > 0
        if row.floor_ms is not None:
            assert row.floor_ms > 0
        if row.incumbent is not None:
            assert row.incumbent.median_ms > 0 and row.incumbent_label
        # cupel's own checks (an incumbent's, "trim_messages tool groups valid", may fail:
        # that is what some rows are there to show)
        ours = {name: ok for name, ok in row.checks.items() if name.startswith(OURS)}
        assert all(ours.values()), f"{row.label} N={row.n}: {ours}"
        assert bool(ours) == (row.label in CHECKED)
