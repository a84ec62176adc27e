"""Core pipeline workloads W1-W4 and W3f of ../shared/bench/WORKLOADS.md.

Each workload builds its items, budget and pipeline with a fixed seed *before* timing,
times only ``pipeline.run``, warms up, and reports the median of >= 7 runs, the ratio to
the "floor" (one pass reading every item's tokens plus one ``sorted()`` of N floats, in
the same process), and peak memory of one run against the memory of the input items
(both measured with tracemalloc in separate, untimed passes).

    python benchmarks/bench_core.py                 # every workload
    python benchmarks/bench_core.py W1 W3 --runs 9  # a selection
    python benchmarks/bench_core.py --sizes 1000,10000 W3
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    TagScorer,
    UShapedPlacer,
)

SEED = 20261122
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
KINDS = ("Message", "Document", "ToolOutput", "Memory")
TAGS = tuple(f"tag{i:02d}" for i in range(20))
WORDS = ("alpha", "beta", "gamma", "delta", "deploy", "error", "cache", "token", "window", "index")


@dataclass
class Case:
    name: str
    items: list[ContextItem]
    budget: ContextBudget
    pipeline: Pipeline


def _content(rng: random.Random, i: int, tokens: int) -> str:
    # ~4 characters per token, distinct (the index prefix makes every string unique)
    body = " ".join(rng.choice(WORDS) for _ in range(max(1, tokens * 4 // 6)))
    return f"#{i} {body}"[: max(8, tokens * 4)]


def _chat_items(rng: random.Random, n: int, kinds: tuple[str, ...]) -> list[ContextItem]:
    items = []
    for i in range(n):
        tokens = rng.randint(20, 200)
        items.append(
            ContextItem(
                content=_content(rng, i, tokens),
                tokens=tokens,
                kind=rng.choice(kinds),
                timestamp=T0 + timedelta(seconds=30 * i),
                priority=rng.randint(1, 10) if rng.random() < 0.10 else None,
            )
        )
    return items


def w1(n: int) -> Case:
    rng = random.Random(SEED + n)
    items = _chat_items(rng, n, ("Message",))
    total = sum(i.tokens for i in items)
    b = total // 4
    scorer = CompositeScorer([(RecencyScorer(), 0.6), (PriorityScorer(), 0.4)])
    return Case(
        f"W1 chat {n:,}",
        items,
        ContextBudget(max_tokens=b, target_tokens=b),
        Pipeline(scorer, GreedySlice(), ChronologicalPlacer()),
    )


def w2(bucket: int) -> Case:
    rng = random.Random(SEED + bucket)
    items = []
    for i in range(200):
        tokens = rng.randint(100, 800)
        items.append(
            ContextItem(
                content=_content(rng, i, tokens),
                tokens=tokens,
                kind="Document",
                future_relevance_hint=rng.random(),
            )
        )
    return Case(
        f"W2 rag bucket {bucket}",
        items,
        ContextBudget(max_tokens=8000, target_tokens=8000),
        Pipeline(ReflexiveScorer(), KnapsackSlice(bucket_size=bucket), UShapedPlacer()),
    )


def _stress_items(rng: random.Random, n: int) -> list[ContextItem]:
    items = []
    for i in range(n):
        tokens = rng.randint(20, 200)
        items.append(
            ContextItem(
                content=_content(rng, i, tokens),
                tokens=tokens,
                kind=rng.choice(KINDS),
                timestamp=T0 + timedelta(seconds=30 * i),
                tags=tuple(rng.sample(TAGS, rng.randint(0, 3))),
                priority=rng.randint(1, 10) if rng.random() < 0.10 else None,
            )
        )
    return items


def w3(n: int) -> Case:
    rng = random.Random(SEED + 3 * n)
    items = _stress_items(rng, n)
    b = sum(i.tokens for i in items) // 10
    tag = TagScorer({"tag00": 1.0, "tag01": 0.8, "tag02": 0.6, "tag03": 0.4, "tag04": 0.2})
    scorer = CompositeScorer([(RecencyScorer(), 1.0), (KindScorer(), 1.0), (tag, 1.0)])
    return Case(
        f"W3 stress {n:,}",
        items,
        ContextBudget(max_tokens=b, target_tokens=b),
        Pipeline(scorer, GreedySlice(), UShapedPlacer()),
    )


def w3f(n: int = 10_000) -> Case:
    rng = random.Random(SEED + 7 * n)
    items = _stress_items(rng, n)
    b = sum(i.tokens for i in items) // 10
    scorer = CompositeScorer(
        [(RecencyScorer(), 1.0), (FrequencyScorer(), 1.0), (ScaledScorer(PriorityScorer()), 1.0)]
    )
    return Case(
        f"W3f frequency {n:,}",
        items,
        ContextBudget(max_tokens=b, target_tokens=b),
        Pipeline(scorer, GreedySlice(), UShapedPlacer()),
    )


def w4(n: int = 10_000) -> Case:
    rng = random.Random(SEED + 4 * n)
    items = _chat_items(rng, n, KINDS)
    b = sum(i.tokens for i in items) // 5
    scorer = CompositeScorer([(RecencyScorer(), 0.6), (PriorityScorer(), 0.4)])
    slicer = QuotaSlice(
        GreedySlice(),
        [QuotaEntry("Message", require=20.0), QuotaEntry("ToolOutput", cap=30.0)],
    )
    return Case(
        f"W4 quota {n:,}",
        items,
        ContextBudget(max_tokens=b, target_tokens=b),
        Pipeline(scorer, slicer, ChronologicalPlacer()),
    )


def _median_seconds(fn: Callable[[], object], runs: int, warmups: int = 2) -> float:
    for _ in range(warmups):
        fn()
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _floor(items: list[ContextItem]) -> Callable[[], object]:
    floats = [random.Random(1).random() for _ in items]

    def floor() -> object:
        total = 0
        for item in items:
            total += item.tokens
        return total, sorted(floats)

    return floor


def _peak_bytes(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(factory: Callable[[], Case], runs: int) -> dict[str, object]:
    tracemalloc.start()
    case = factory()
    input_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    run = lambda: case.pipeline.run(case.items, case.budget)  # noqa: E731
    result = case.pipeline.run(case.items, case.budget)
    median = _median_seconds(run, runs)
    floor = _median_seconds(_floor(case.items), runs)
    peak = _peak_bytes(run)
    return {
        "workload": case.name,
        "items": len(case.items),
        "selected": len(result.items),
        "median_ms": median * 1000,
        "floor_ms": floor * 1000,
        "ratio": median / floor if floor else float("inf"),
        "peak_mib": peak / 2**20,
        "input_mib": input_bytes / 2**20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", default=["W1", "W2", "W3", "W3f", "W4"])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sizes", default="1000,10000,100000", help="sizes for W3")
    args = parser.parse_args(argv)
    if args.runs < 7:
        parser.error("--runs must be >= 7 (WORKLOADS.md)")
    sizes = [int(s) for s in args.sizes.split(",")]
    plan: list[Callable[[], Case]] = []
    for name in args.workloads:
        key = name.upper()
        if key == "W1":
            plan += [lambda: w1(1_000), lambda: w1(10_000)]
        elif key == "W2":
            plan += [lambda: w2(100), lambda: w2(1)]
        elif key == "W3":
            plan += [lambda n=n: w3(n) for n in sizes]  # type: ignore[misc]
        elif key == "W3F":
            plan.append(w3f)
        elif key == "W4":
            plan.append(w4)
        else:
            parser.error(f"unknown workload {name!r} (choose from W1 W2 W3 W3f W4)")
    print(f"python {sys.version.split()[0]}, median of {args.runs} runs")
    print(
        f"{'workload':<22}{'items':>8}{'sel':>7}{'median ms':>11}{'floor ms':>10}"
        f"{'÷floor':>8}{'peak MiB':>10}{'input MiB':>10}"
    )
    for factory in plan:
        row = measure(factory, args.runs)
        print(
            f"{row['workload']:<22}{row['items']:>8}{row['selected']:>7}"
            f"{row['median_ms']:>11.2f}{row['floor_ms']:>10.3f}{row['ratio']:>8.1f}"
            f"{row['peak_mib']:>10.1f}{row['input_mib']:>10.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
