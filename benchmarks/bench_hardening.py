"""Blow-up workloads of issue 12: each against a baseline measured in the same run.

    python benchmarks/bench_hardening.py          # or: python -m benchmarks.bench_hardening
    python benchmarks/bench_hardening.py h1       # only the named workloads

- **H1 frequency**: FrequencyScorer over 100,000 items with 8 tags each, for vocabularies
  from 16 to 10 million tags and a skewed (Zipf-like) one, and with 20 tags each from
  50,000 and 64 tags each from 200,000, against the floor (reading every item's tags once
  and sorting N floats); with the peak memory of the scoring against the input's size.
  Targets (issue 28): 8 tags under 1.5 s, 20 tags under 3 s, 64 tags under 8 s; peak
  memory beyond the input within 2x the input.
- **H2 knapsack**: KnapsackSlice with scores of 1e12 and more, and with infinities next to
  ordinary scores, against the same items with scores in [0, 1]. Target: the same order
  of time (the DP never leaves int64 arrays).
- **H3 composite**: a CompositeScorer reusing one child at every one of 20 levels
  (2^20 paths to it) against the child alone, 100 items. Target: the same order of time
  (each distinct child is scored once per pass).
- **H4 step decay**: DecayScorer with a StepDecay of 10,000 windows over 100,000 items,
  against ExponentialDecay over the same items. Target: under 1 s (issue 28; the step is
  found by bisection).

Figures are medians of a few runs; compare the ratios, not the absolute times (the
machines are shared).
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datetime import datetime, timedelta, timezone

from cupel import (
    CompositeScorer,
    ContextBudget,
    ContextItem,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    KnapsackSlice,
    PriorityScorer,
    ScaledScorer,
    ScoredItem,
    StepDecay,
)

SEED = 20261123


def median_seconds(call: Callable[[], object], runs: int = 3) -> float:
    call()  # warm-up
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def traced(call: Callable[[], object]) -> tuple[object, float, float]:
    """``call()`` under tracemalloc: (its result, MiB still allocated after it, peak MiB)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = call()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, current / 2**20, peak / 2**20


H1_CASES: tuple[tuple[int | str, int, float], ...] = (
    *((vocabulary, 8, 1.5) for vocabulary in (16, 30, 50, 1_000, 2_000, 100_000, 10_000_000)),
    ("zipf", 8, 1.5),
    (50_000, 20, 3.0),
    (200_000, 64, 8.0),
)
"""``(vocabulary, tags per item, target seconds)``: uniform vocabularies of these sizes, and
a skewed one: tag ``int(paretovariate(1.1))``, a few tags on most items and a long tail
(about 1,100 distinct tags at 100,000 x 8)."""


def h1_frequency(n: int = 100_000) -> list[str]:
    return [h1_case(v, n, tags, target) for v, tags, target in H1_CASES]


def h1_case(vocabulary: int | str, n: int, tags_per_item: int, target: float) -> str:
    rng = random.Random(SEED + (vocabulary if isinstance(vocabulary, int) else 1))

    def tag() -> str:
        if isinstance(vocabulary, int):
            return f"t{rng.randrange(vocabulary)}"
        return f"t{int(rng.paretovariate(1.1))}"

    def build() -> list[ContextItem]:
        return [
            ContextItem(
                content=f"item {i}",
                tokens=10,
                tags=tuple(tag() for _ in range(tags_per_item)),
            )
            for i in range(n)
        ]

    built, input_mib, _ = traced(build)
    items: list[ContextItem] = built  # type: ignore[assignment]
    floats = [rng.random() for _ in items]

    def floor() -> object:
        return sum(len(item.tags) for item in items), sorted(floats)

    scorer = FrequencyScorer()
    seconds = median_seconds(lambda: scorer.score_all(items))
    floor_seconds = median_seconds(floor)
    _, _, peak_mib = traced(lambda: scorer.score_all(items))
    met = seconds < target and peak_mib <= 2 * input_mib
    return (
        f"H1 frequency  vocabulary {_label(vocabulary):>10} x {tags_per_item:2}  "
        f"{seconds * 1000:8.1f} ms  ÷floor {seconds / floor_seconds:6.1f}  "
        f"peak {peak_mib:6.1f} MiB = {peak_mib / input_mib:4.2f}x input ({input_mib:.0f} MiB)  "
        f"{'met' if met else 'NOT met'} (< {target:g} s)"
    )


def _label(vocabulary: int | str) -> str:
    return f"{vocabulary:,}" if isinstance(vocabulary, int) else vocabulary


def h2_knapsack(n: int = 1_000, target: int = 2_000) -> list[str]:
    rng = random.Random(SEED)
    tokens = [rng.randint(1, 50) for _ in range(n)]
    budget = ContextBudget(max_tokens=target, target_tokens=target)
    slicer = KnapsackSlice(bucket_size=1)

    def scored(scores: list[float]) -> list[ScoredItem]:
        return [
            ScoredItem(ContextItem(content=f"i{i}", tokens=t), s)
            for i, (t, s) in enumerate(zip(tokens, scores, strict=True))
        ]

    baseline = scored([rng.random() for _ in range(n)])
    base = median_seconds(lambda: slicer.slice(baseline, budget))
    lines = [f"H2 knapsack   scores in [0, 1]          {base * 1000:8.1f} ms  (baseline)"]
    cases = {
        "scores >= 1e12": [1e12 * (1 + rng.random()) for _ in range(n)],
        "inf beside [0, 1]": [math.inf if rng.random() < 0.2 else rng.random() for _ in range(n)],
        "1e12 .. 1e40": [10 ** rng.uniform(12, 40) for _ in range(n)],
    }
    for label, scores in cases.items():
        items = scored(scores)
        seconds = median_seconds(lambda items=items: slicer.slice(items, budget))  # type: ignore[misc]
        lines.append(
            f"H2 knapsack   {label:<25} {seconds * 1000:8.1f} ms  ÷baseline {seconds / base:5.2f}"
        )
    return lines


def h3_composite(n: int = 100, depth: int = 20) -> list[str]:
    items = [ContextItem(content=f"i{i}", tokens=1, priority=i % 7) for i in range(n)]
    child = ScaledScorer(PriorityScorer())
    scorer: object = child
    for _ in range(depth):
        scorer = CompositeScorer([(scorer, 1.0), (child, 1.0), (scorer, 2.0)])
    base = median_seconds(lambda: child.score_all(items))
    seconds = median_seconds(lambda: scorer.score_all(items))  # type: ignore[attr-defined]
    return [
        f"H3 composite  one child x {depth} levels    {seconds * 1000:8.2f} ms  "
        f"÷child alone {seconds / base:5.1f}  ({base * 1000:.2f} ms)"
    ]


def h4_step_decay(n: int = 100_000, windows: int = 10_000) -> list[str]:
    rng = random.Random(SEED)
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    items = [
        ContextItem(
            content=f"i{i}", tokens=1, timestamp=now - timedelta(minutes=rng.uniform(0, 11_000))
        )
        for i in range(n)
    ]
    steps = [(timedelta(minutes=w + 1), 1 - w / windows) for w in range(windows)]
    clock = FixedTimeProvider(now)
    step = DecayScorer(clock, StepDecay(steps))
    exponential = DecayScorer(clock, ExponentialDecay(timedelta(hours=24)))
    base = median_seconds(lambda: exponential.score_all(items))
    seconds = median_seconds(lambda: step.score_all(items))
    return [
        f"H4 step decay {windows:,} windows x {n:,} items  {seconds * 1000:8.1f} ms  "
        f"÷exponential {seconds / base:5.2f}  {'met' if seconds <= 1.0 else 'NOT met'}"
    ]


def main(argv: list[str] | None = None) -> int:
    """Every workload, or only those named (``h1`` ... ``h4``)."""
    chosen = set(sys.argv[1:] if argv is None else argv) or {"h1", "h2", "h3", "h4"}
    workloads = {"h3": h3_composite, "h2": h2_knapsack, "h4": h4_step_decay, "h1": h1_frequency}
    for name, workload in workloads.items():
        if name in chosen:
            for line in workload():
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
