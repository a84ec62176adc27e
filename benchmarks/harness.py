"""The benchmark harness's measurement and data: timing a call (:func:`measure`), the inputs'
size (:func:`traced_build`), one :class:`Case` per timed call and its measured :class:`Row`.
Each workload's cases are built beside what they measure (``bench_core``, ``bench_langchain``,
``bench_llamaindex``, ``bench_simulation``); ``benchmarks/run.py`` runs them."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

SLOW_SECONDS = 2.0
SLOW_RUNS = 3


# -- measurement ----------------------------------------------------------------------------
@dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int
    peak_mib: float | None


def measure(
    fn: Callable[[], object],
    runs: int,
    warmups: int,
    trace_memory: bool = True,
    setup: Callable[[], object] | None = None,
) -> Timing:
    """Time ``fn``: warm-ups, then ``runs`` timed calls (a slow first call cuts the runs to
    :data:`SLOW_RUNS` without warm-up or traced pass), then one traced call for the peak.
    ``setup``, when given, runs untimed before every call of ``fn`` (fresh inputs)."""
    prepare = setup if setup is not None else _nothing
    prepare()
    start = time.perf_counter()
    fn()
    if time.perf_counter() - start > SLOW_SECONDS:
        runs, warmups, trace_memory = min(runs, SLOW_RUNS), 0, False
    for _ in range(max(0, warmups - 1)):
        prepare()
        fn()
    samples = []
    for _ in range(runs):
        prepare()
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    peak = None
    if trace_memory:
        prepare()
        gc.collect()
        tracemalloc.start()
        try:
            fn()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
    return Timing(statistics.median(samples), min(samples), max(samples), runs, peak)


def _nothing() -> None:
    return None


def traced_build(build: Callable[[], object]) -> tuple[object, float]:
    """Build a case under tracemalloc: (the case, MiB still allocated after building)."""
    gc.collect()
    tracemalloc.start()
    try:
        case = build()
        size = tracemalloc.get_traced_memory()[0] / 2**20
    finally:
        tracemalloc.stop()
    return case, size


# -- cases ----------------------------------------------------------------------------------
@dataclass
class Case:
    """One row: a timed cupel call, plus optionally a floor or an incumbent to compare."""

    workload: str
    label: str
    n: int
    call: Callable[[], object]
    input_mib: float | None = None
    floor: Callable[[], object] | None = None
    incumbent: Callable[[], object] | None = None
    incumbent_label: str = ""
    note: str = ""
    checks: dict[str, bool] = field(default_factory=dict)
    setup: Callable[[], object] | None = None  # untimed, before every call (fresh inputs)


@dataclass
class Row:
    workload: str
    label: str
    n: int
    timing: Timing
    input_mib: float | None
    floor_ms: float | None = None
    incumbent_label: str = ""
    incumbent: Timing | None = None
    scaling: float | None = None
    floor_scaling: float | None = None
    note: str = ""
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def floor_ratio(self) -> float | None:
        return None if self.floor_ms is None else self.timing.median_ms / self.floor_ms

    @property
    def incumbent_ratio(self) -> float | None:
        if self.incumbent is None:
            return None
        return self.timing.median_ms / self.incumbent.median_ms


@dataclass
class Plan:
    sizes: dict[str, list[int]]
    runs: int
    warmups: int
    skipped: list[str] = field(default_factory=list)


def yes(flag: bool) -> str:
    return "yes" if flag else "no"
