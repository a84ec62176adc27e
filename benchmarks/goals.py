"""The speed, memory and behaviour targets as data (:data:`GOALS`) and the one loop that
judges a run's rows against them (:func:`targets`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.harness import Row, yes


@dataclass
class Target:
    text: str
    measured: str
    met: bool


Measure = Callable[[Row], "tuple[float, str] | None"]
"""A row's figure for a goal and how it is shown; ``None`` when the row has no figure."""


def _ms(digits: int) -> Measure:
    return lambda row: (row.timing.median_ms, f"{row.timing.median_ms:.{digits}f} ms")


def _memory(row: Row) -> tuple[float, str] | None:
    peak, data = row.timing.peak_mib, row.input_mib
    if peak is None or not data:
        return None
    return peak / data, f"{peak:.1f} / {data:.1f} MiB = {peak / data:.2f}×"


def _floor(row: Row) -> tuple[float, str] | None:
    ratio = row.floor_ratio
    return None if ratio is None else (ratio, f"{ratio:.1f}")


def _incumbent(digits: int) -> Measure:
    def measure(row: Row) -> tuple[float, str] | None:
        ratio = row.incumbent_ratio
        return None if ratio is None else (ratio, f"{ratio:.{digits}f}×")

    return measure


def _check(name: str) -> Measure:
    def measure(row: Row) -> tuple[float, str] | None:
        if row.incumbent_ratio is None:
            return None
        valid = row.checks.get(name, False)
        return (0.0 if valid else 1.0), yes(valid)

    return measure


def _flag(name: str) -> Measure:
    """A check the case made (no incumbent needed): 0 when it holds, else 1."""

    def measure(row: Row) -> tuple[float, str] | None:
        if name not in row.checks:
            return None
        valid = row.checks[name]
        return (0.0 if valid else 1.0), yes(valid)

    return measure


def _call_or_incumbent(row: Row) -> tuple[float, str] | None:
    """The smaller of the ratio to the incumbent and the milliseconds per call (W8 rows
    time ``2000 // n`` calls per sample): a limit of 1 reads "≤ 1.0× or ≤ 1 ms a call"."""
    ratio = row.incumbent_ratio
    if ratio is None:
        return None
    per_call = row.timing.median_ms / max(1, 2000 // row.n)
    return min(ratio, per_call), f"{ratio:.2f}×, {per_call:.2f} ms a call"


def _floor_growth(row: Row) -> tuple[float, str] | None:
    """How much the ÷floor ratio grew from a tenth of the items (``scaling ÷ floor
    scaling``: above 1 the pipeline grows faster than its floor)."""
    if row.scaling is None or not row.floor_scaling or row.floor_ratio is None:
        return None
    growth = row.scaling / row.floor_scaling
    before = row.floor_ratio / growth
    return growth, f"÷floor {before:.1f} → {row.floor_ratio:.1f} (×{growth:.2f})"


def _scaling(row: Row) -> tuple[float, str] | None:
    if row.scaling is None:
        return None
    context = "" if row.floor_scaling is None else f" (floor ×{row.floor_scaling:.1f})"
    return row.scaling, f"×{row.scaling:.1f}{context}"


@dataclass(frozen=True)
class Goal:
    """One target (docs/performance.md): the rows it judges (a label and size, or every row
    of ``workloads`` (``None``: every row) of size ``n`` when given), the figure, its
    limit, and the target's text (``{label}``, ``{n}`` and ``{tenth}`` fill in)."""

    text: str
    measure: Measure
    limit: float
    label: str | None = None
    n: int | None = None
    workloads: tuple[str, ...] | None = None
    n_for: tuple[str, int] | None = None  # (workload, n): that workload only at that size
    sizes: tuple[int, ...] | None = None  # only rows of these sizes


_REPORT_READ = (
    ("W8 selector, report read", "trim_messages Runnable", (10, 50, 200, 1_000, 10_000)),
    (
        "W8 select_messages_with_report, report read",
        "trim_messages (include_system, start_on='human')",
        (10, 50, 200, 1_000, 10_000),
    ),
    (
        "W8 chat memory, per turn, report read",
        "ChatMemoryBuffer put + get + delete",
        (10, 50, 200, 1_000),
    ),
)
"""The rows of issue 28's report target: (label, incumbent, sizes)."""

GOALS: tuple[Goal, ...] = (
    Goal("{label} {n:,} ≤ 30 ms", _ms(2), 30.0, "W1 chat", 10_000),
    Goal("{label} {n:,} ≤ 40 ms", _ms(2), 40.0, "W4 quota", 10_000),
    Goal("W3 stress 100,000 ≤ 1,500 ms", _ms(1), 1500.0, "W3 stress", 100_000),
    Goal("W3 stress 100,000 peak ≤ 3× input memory", _memory, 3.0, "W3 stress", 100_000),
    Goal("W2 rag bucket 1 ≤ 5 ms", _ms(2), 5.0, "W2 rag bucket 1", 200),
    Goal(
        "{label} {n:,} ÷ floor ≤ 8",
        _floor,
        8.0,
        workloads=("W1", "W3", "W4"),
        n_for=("W4", 10_000),
    ),
    Goal(
        "W5 10,000 cupel ≤ 0.7× trim_messages", _incumbent(3), 0.7, "W5 langchain history", 10_000
    ),
    Goal(
        "W5 10,000 cupel keeps tool-call groups valid",
        _check("cupel tool groups valid"),
        0.0,
        "W5 langchain history",
        10_000,
    ),
    Goal(
        "W6 10,000 cupel ≤ 0.01× ChatMemoryBuffer",
        _incumbent(4),
        0.01,
        "W6 llamaindex memory",
        10_000,
    ),
    Goal(
        "W6 10,000, fresh cupel ≤ 0.01× ChatMemoryBuffer",
        _incumbent(4),
        0.01,
        "W6 llamaindex memory, fresh",
        10_000,
    ),
    Goal(  # the warm rows and the cold ones ("W1 chat cold", "W3 stress cold") alike;
        # issue 28 retired issue 15's ≤ 4× (it bought a second route per stage)
        "{label} {n:,} ÷ floor ≤ 8 (issue 28)",
        _floor,
        8.0,
        workloads=("W1", "W3"),
        sizes=(10_000, 100_000),
    ),
    Goal(
        "{label} {tenth:,} → {n:,}: ÷ floor not growing",
        _floor_growth,
        1.0,
        workloads=("W1", "W3"),
        sizes=(100_000,),
    ),
    Goal("{label} {n:,}: dry_run ≤ 1.3× run", _incumbent(2), 1.3, "W9 report W1"),
    Goal("{label} {n:,}: dry_run ≤ 1.3× run", _incumbent(2), 1.3, "W9 report W3"),
    *(
        Goal(f"{label} {{n:,}}: ≤ {limit:.1f}× {baseline}", _incumbent(2), limit, label, n)
        for label, baseline in (
            ("W8 selector", "trim_messages Runnable"),
            ("W8 select_messages", "trim_messages"),
            ("W8 chat memory", "ChatMemoryBuffer.get (repeated get, unchanged history)"),
        )
        for n, limit in ((10, 1.0), (50, 1.0), (200, 1.0), (1_000, 1.0), (10_000, 0.6))
    ),
    *(
        Goal(
            "W8 chat memory, per turn {n:,}: ≤ 1.0× ChatMemoryBuffer (issue 15)",
            _incumbent(2),
            1.0,
            "W8 chat memory, per turn",
            n,
        )
        for n in (10, 50, 200, 1_000)
    ),
    *(
        Goal(
            f"{label} {{n:,}}: report built and read ≤ 1.0× {baseline} (issue 28)",
            _incumbent(2),
            1.0,
            label,
            n,
        )
        for label, baseline, sizes in _REPORT_READ
        for n in sizes
        if n >= 1_000
    ),
    *(
        Goal(
            f"{label} {{n:,}}: report built and read ≤ 1 ms a call or ≤ 1.0× {baseline}",
            _call_or_incumbent,
            1.0,
            label,
            n,
        )
        for label, baseline, sizes in _REPORT_READ
        for n in sizes
        if n < 1_000
    ),
    *(
        Goal(f"{label} {{n:,}}: window valid", _flag("cupel window valid"), 0.0, label)
        for label in ("W8 chat memory", "W8 chat memory, per turn")
    ),
    Goal("W10 min budget {n:,} ≤ 1 s", _ms(0), 1000.0, "W10 min budget"),
    Goal(
        "W10 min budget {n:,}: same answer as full dry runs",
        _flag("same answer as full dry runs"),
        0.0,
        "W10 min budget",
    ),
    Goal("W11 run {n:,} ≤ 1 s", _ms(0), 1000.0, "W11 million run"),
    Goal("W11 run {n:,}, fresh items ≤ 1 s", _ms(0), 1000.0, "W11 million run cold"),
    Goal("W11 dry_run {n:,} ≤ 1.5 s", _ms(0), 1500.0, "W11 million dry_run"),
    Goal("W11 run {n:,} peak ≤ 1× input memory", _memory, 1.0, "W11 million run"),
    Goal("W11 dry_run {n:,} peak ≤ 1× input memory", _memory, 1.0, "W11 million dry_run"),
    Goal(
        "{label} {tenth:,} → {n:,}: ×10 items ≤ ×12 time",
        _scaling,
        12.0,
        workloads=("W1", "W2", "W3", "W3f", "W4", "W5", "W6", "W7"),
    ),
)
"""The speed, memory and behaviour targets, in the order the report lists them."""


def _judged(goal: Goal, rows: list[Row]) -> list[Row]:
    if goal.label is not None:
        return [
            row for row in rows if row.label == goal.label and (goal.n is None or row.n == goal.n)
        ][: None if goal.n is None else 1]
    return [
        row
        for row in rows
        if (goal.workloads is None or row.workload in goal.workloads)
        and (goal.n_for is None or row.workload != goal.n_for[0] or row.n == goal.n_for[1])
        and (goal.sizes is None or row.n in goal.sizes)
    ]


def targets(rows: list[Row]) -> list[Target]:
    """The targets of :data:`GOALS` that this run's rows can judge."""
    out: list[Target] = []
    for goal in GOALS:
        for row in _judged(goal, rows):
            figure = goal.measure(row)
            if figure is None:
                continue
            value, measured = figure
            text = goal.text.format(label=row.label, n=row.n, tenth=row.n // 10)
            out.append(Target(text, measured, value <= goal.limit))
    return out
