"""The benchmark harness's timing: calls measured side by side, round by round."""

from __future__ import annotations

import time

import pytest

from benchmarks import harness
from benchmarks.harness import Timed, measure_together

pytestmark = pytest.mark.slow  # timing rounds with real sleeps


def recorder(log: list[str], name: str, pause: float = 0.0) -> Timed:
    def setup() -> None:
        log.append(f"setup {name}")

    def fn() -> None:
        log.append(name)
        if pause:
            time.sleep(pause)

    return Timed(fn, setup, trace=False)


def test_samples_alternate_round_by_round_with_the_order_reversed_every_other_round() -> None:
    log: list[str] = []
    call, floor = recorder(log, "call"), recorder(log, "floor")
    timings = measure_together([call, floor], runs=4, warmups=2)
    calls = [entry for entry in log if not entry.startswith("setup")]
    # first calls (the slow check), one warm-up round, then four rounds: ab ba ab ba
    assert calls == ["call", "floor", "call", "floor"] + ["call", "floor", "floor", "call"] * 2
    # every call is preceded by its own setup
    for index, entry in enumerate(log):
        if not entry.startswith("setup"):
            assert log[index - 1] == f"setup {entry}"
    assert [timing.runs for timing in timings] == [4, 4]
    assert all(timing.peak_mib is None for timing in timings)


def test_medians_belong_to_their_own_call() -> None:
    log: list[str] = []
    quick, slower = recorder(log, "quick"), recorder(log, "slower", pause=0.004)
    fast_timing, slow_timing = measure_together([quick, slower], runs=5, warmups=1)
    assert slow_timing.median_ms >= 4.0
    assert fast_timing.median_ms < slow_timing.median_ms
    assert fast_timing.min_ms <= fast_timing.median_ms <= fast_timing.max_ms


def test_a_slow_call_takes_part_in_fewer_rounds_without_warm_up_or_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(harness, "SLOW_SECONDS", 0.002)
    log: list[str] = []
    quick = recorder(log, "quick")
    quick.trace = True
    slow = recorder(log, "slow", pause=0.005)
    quick_timing, slow_timing = measure_together([quick, slow], runs=6, warmups=3)
    assert (quick_timing.runs, slow_timing.runs) == (6, harness.SLOW_RUNS)
    assert quick_timing.peak_mib is not None and slow_timing.peak_mib is None
    # the slow call: its first call and SLOW_RUNS samples, no warm-up
    assert log.count("slow") == 1 + harness.SLOW_RUNS
    # the quick one: first call, two warm-ups, six samples and the traced call
    assert log.count("quick") == 1 + 2 + 6 + 1


def test_one_call_alone_traces_the_peak() -> None:
    held: list[bytes] = []

    def allocate() -> None:
        held.append(bytes(2**21))
        held.clear()

    (timing,) = measure_together([Timed(allocate)], runs=3, warmups=1)
    assert timing.runs == 3
    assert timing.peak_mib is not None and timing.peak_mib >= 2.0


def test_rows_carry_the_floor_or_incumbent_measured_in_the_same_rounds() -> None:
    from benchmarks.harness import Plan
    from benchmarks.run import measure_workload

    plan = Plan({"W1": [100], "W9": [100]}, runs=3, warmups=1)
    (core,) = measure_workload("W1", plan)
    assert core.label == "W1 chat" and core.n == 100
    assert core.timing.runs == 3 and core.timing.peak_mib is not None
    assert core.floor_ms is not None and core.floor_ms > 0
    assert core.floor_ratio == core.timing.median_ms / core.floor_ms
    rows = measure_workload("W9", plan)
    assert [row.label for row in rows] == [
        "W9 report W1",
        "W9 report W1, entries read",
        "W9 report W3",
        "W9 report W3, entries read",
    ]
    for row in rows:
        assert row.incumbent_label == "run" and row.incumbent is not None
        assert row.incumbent.runs == 3 and row.floor_ms is None
        assert row.incumbent_ratio == row.timing.median_ms / row.incumbent.median_ms
    # each row times its own incumbent beside it
    assert rows[0].incumbent is not rows[1].incumbent
