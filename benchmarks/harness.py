"""The benchmark harness's measurement and data: timing calls side by side
(:func:`measure_together`), the inputs' size (:func:`traced_build`), one :class:`Case` per
timed call and its measured :class:`Row`.
Each workload's cases are built beside what they measure (``bench_core``, ``bench_langchain``,
``bench_llamaindex``, ``bench_simulation``); ``benchmarks/run.py`` runs them."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass
class Timed:
    """A call to time: ``setup``, when given, runs untimed before every call of ``fn``
    (fresh inputs); ``trace``: whether one more call runs under tracemalloc for the peak."""

    fn: Callable[[], object]
    setup: Callable[[], object] | None = None
    trace: bool = True


def measure_together(calls: Sequence[Timed], runs: int, warmups: int) -> list[Timing]:
    """Time ``calls`` side by side: warm-ups, then ``runs`` rounds of one timed sample of
    each, the calls' order reversed every other round, then one traced call each for the
    peak. A ratio of two medians is then measured over the same stretch of time, so the
    machine's drift (a shared VM's neighbours) moves both alike instead of whichever was
    timed second. A call whose first call is slow (over :data:`SLOW_SECONDS`) takes part
    in :data:`SLOW_RUNS` rounds only, without warm-up or traced pass."""
    slow = [_first_seconds(call) > SLOW_SECONDS for call in calls]
    for _ in range(max(0, warmups - 1)):
        for call, was_slow in zip(calls, slow, strict=True):
            if not was_slow:
                _prepare(call)
                call.fn()
    samples: list[list[float]] = [[] for _ in calls]
    order = list(range(len(calls)))
    for round_ in range(runs):
        for k in order if round_ % 2 == 0 else order[::-1]:
            if slow[k] and round_ >= SLOW_RUNS:
                continue
            call = calls[k]
            _prepare(call)
            gc.collect()
            start = time.perf_counter()
            call.fn()
            samples[k].append((time.perf_counter() - start) * 1000.0)
    timings = []
    for call, taken, was_slow in zip(calls, samples, slow, strict=True):
        peak = None if was_slow or not call.trace else _traced_peak(call)
        timings.append(Timing(statistics.median(taken), min(taken), max(taken), len(taken), peak))
    return timings


def _prepare(call: Timed) -> None:
    if call.setup is not None:
        call.setup()


def _first_seconds(call: Timed) -> float:
    """The seconds of ``call``'s first (untimed-for-the-row) call."""
    _prepare(call)
    start = time.perf_counter()
    call.fn()
    return time.perf_counter() - start


def _traced_peak(call: Timed) -> float:
    """The peak MiB tracemalloc sees during one call of ``call``."""
    _prepare(call)
    gc.collect()
    tracemalloc.start()
    try:
        call.fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


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


def replace_block(path: Path, start: str, end: str, block: str) -> None:
    """Rewrite the doc at ``path``: ``block`` between its ``start`` and ``end`` markers
    (the markers kept); exits naming the file when a marker is missing."""
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{path}: no markers ({start} ... {end})")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(head + start + "\n" + block + "\n" + end + tail, encoding="utf-8")
