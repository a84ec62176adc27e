"""W10 budget simulation: ``find_min_budget_for`` on the W3 stress items.

The item searched for sits in the middle of the pipeline's ranking (the median score),
the search ceiling is the items' total. Baseline, in the same run: the binary search over
full dry runs (report and all, every stage per probe) that ``find_min_budget_for`` made
before it reused scores and sort — its answer must be the same.

    python benchmarks/bench_simulation.py                # 100,000 items
    python benchmarks/bench_simulation.py --sizes 10000,100000 --runs 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import bench_core
from benchmarks.harness import Case
from cupel import ContextBudget, ContextItem, Pipeline, find_min_budget_for
from cupel.analytics import smallest_included


@dataclass
class SimulationRow:
    n: int
    probes: int
    answer: int | None
    probe_ms: float
    dry_runs_ms: float

    @property
    def ratio(self) -> float:
        return self.probe_ms / self.dry_runs_ms


def middle_item(pipeline: Pipeline, items: list[ContextItem]) -> ContextItem:
    """The item with the median score (ties: the first in ranking order)."""
    total = sum(max(i.tokens, 0) for i in items)
    report = pipeline.dry_run(items, ContextBudget(max_tokens=total, target_tokens=total)).report
    assert report is not None
    ranked = sorted(report.included, key=lambda entry: -entry.score)
    return ranked[len(ranked) // 2].item


def by_dry_runs(
    pipeline: Pipeline, items: list[ContextItem], target: ContextItem, ceiling: int
) -> int | None:
    """The earlier search: a full dry run per probe, membership read from the report."""

    def included(tokens: int) -> bool:
        report = pipeline.dry_run(items, ContextBudget(max_tokens=tokens, target_tokens=tokens))
        assert report.report is not None
        return any(entry.item is target for entry in report.report.included)

    pinned = sum(i.tokens for i in items if i.pinned and i.tokens >= 0)
    low = max(target.tokens, pinned)
    return None if low > ceiling else smallest_included(low, ceiling, included)


def _median_ms(func: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def run(n: int, runs: int = 3) -> SimulationRow:
    """Measure W10 at ``n`` items (the baseline once per run as well)."""
    case = bench_core.w3(n)
    items, pipeline = case.items, case.pipeline
    target = middle_item(pipeline, items)
    ceiling = sum(max(i.tokens, 0) for i in items)
    probed: list[int] = []
    answer = find_min_budget_for(pipeline, items, target, ceiling, on_probe=probed.append)
    expected = by_dry_runs(pipeline, items, target, ceiling)
    assert answer == expected, f"probe answer {answer} != dry-run answer {expected}"
    probe_ms = _median_ms(lambda: find_min_budget_for(pipeline, items, target, ceiling), runs)
    dry_ms = _median_ms(lambda: by_dry_runs(pipeline, items, target, ceiling), max(1, runs // 2))
    return SimulationRow(n, len(probed), answer, probe_ms, dry_ms)


def w10_cases(sizes: list[int]) -> Iterator[Any]:
    """W10 rows for ``python -m benchmarks``: ``find_min_budget_for`` on W3's items, the
    item of median score; checked once against the search over full dry runs (not timed:
    it takes tens of seconds at 100,000 items)."""
    for n in sizes:
        case = bench_core.w3(n)
        items, pipeline = case.items, case.pipeline
        target = middle_item(pipeline, items)
        ceiling = sum(max(i.tokens, 0) for i in items)
        answer = find_min_budget_for(pipeline, items, target, ceiling)
        same = answer == by_dry_runs(pipeline, items, target, ceiling)

        def search(
            pipeline: Pipeline = pipeline,
            items: list[ContextItem] = items,
            target: ContextItem = target,
            ceiling: int = ceiling,
        ) -> object:
            return find_min_budget_for(pipeline, items, target, ceiling)

        yield Case(
            "W10",
            "W10 min budget",
            n,
            search,
            note=f"answer {answer}, same as the search over full dry runs: {same}",
            checks={"same answer as full dry runs": same},
        )
        del case


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated item counts")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median)")
    args = parser.parse_args(argv)
    print(
        f"{'N':>8} {'probes':>6} {'answer':>9} {'find_min_budget_for':>20} "
        f"{'full dry runs':>14} {'ratio':>6}  target <= 1 s"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        row = run(n, args.runs)
        verdict = "met" if row.probe_ms <= 1000 else "NOT met"
        print(
            f"{row.n:>8,} {row.probes:>6} {row.answer!s:>9} {row.probe_ms:>17.0f} ms "
            f"{row.dry_runs_ms:>11.0f} ms {row.ratio:>6.3f}  {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
