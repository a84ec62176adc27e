"""Core pipeline workloads W1-W4 and W3f (docs/performance.md), and W11 (W3 at a
million items, Greedy and Chronological).

Each builder generates its items with a fixed seed (same seed → same items) and returns
the items, budget and pipeline, built *before* any timing. :func:`floor` is the
workload's floor: the irreducible Python work on the same items (one pass reading every
item's tokens, one ``sorted()`` of N distinct floats).

The harness (``python -m benchmarks``) times them; this module alone runs the core rows:

    python benchmarks/bench_core.py    # = python -m benchmarks --only W1,W2,W3,W3f,W4
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository root holds the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import Case, traced_build
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
class CoreCase:
    """One core workload instance: the input, the budget and the configured pipeline."""

    items: list[ContextItem]
    budget: ContextBudget
    pipeline: Pipeline

    def run(self) -> object:
        """The timed call."""
        return self.pipeline.run(self.items, self.budget)

    def dry_run(self) -> object:
        """The same run with its report (W9, W11)."""
        return self.pipeline.dry_run(self.items, self.budget)

    def dry_run_read(self) -> object:
        """``dry_run`` and every entry of its report read (W9)."""
        report = self.pipeline.dry_run(self.items, self.budget).report
        if report is None:  # pragma: no cover - dry_run always reports
            raise RuntimeError("dry_run returned no report")
        return report.included, report.excluded


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


def _share(items: list[ContextItem], divisor: int) -> ContextBudget:
    tokens = sum(item.tokens for item in items) // divisor
    return ContextBudget(max_tokens=tokens, target_tokens=tokens)


def w1(n: int) -> CoreCase:
    """W1 chat: Messages, Composite(Recency 0.6, Priority 0.4), Greedy, Chronological, 25%."""
    items = _chat_items(random.Random(SEED + n), n, ("Message",))
    scorer = CompositeScorer([(RecencyScorer(), 0.6), (PriorityScorer(), 0.4)])
    return CoreCase(items, _share(items, 4), Pipeline(scorer, GreedySlice(), ChronologicalPlacer()))


def w2(bucket: int) -> CoreCase:
    """W2 rag: 200 Documents, Reflexive, Knapsack(bucket), U-shaped, 8,000 tokens."""
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
    pipeline = Pipeline(ReflexiveScorer(), KnapsackSlice(bucket_size=bucket), UShapedPlacer())
    return CoreCase(items, ContextBudget(max_tokens=8000, target_tokens=8000), pipeline)


def w3(n: int) -> CoreCase:
    """W3 stress: mixed kinds and tags, Composite(Recency, Kind, Tag), Greedy, U-shaped, 10%."""
    items = _stress_items(random.Random(SEED + 3 * n), n)
    tag = TagScorer({"tag00": 1.0, "tag01": 0.8, "tag02": 0.6, "tag03": 0.4, "tag04": 0.2})
    scorer = CompositeScorer([(RecencyScorer(), 1.0), (KindScorer(), 1.0), (tag, 1.0)])
    return CoreCase(items, _share(items, 10), Pipeline(scorer, GreedySlice(), UShapedPlacer()))


def w3f(n: int = 10_000) -> CoreCase:
    """W3f: W3's items, Composite(Recency, Frequency, Scaled(Priority)), Greedy, U-shaped."""
    items = _stress_items(random.Random(SEED + 7 * n), n)
    scorer = CompositeScorer(
        [(RecencyScorer(), 1.0), (FrequencyScorer(), 1.0), (ScaledScorer(PriorityScorer()), 1.0)]
    )
    return CoreCase(items, _share(items, 10), Pipeline(scorer, GreedySlice(), UShapedPlacer()))


def w4(n: int = 10_000) -> CoreCase:
    """W4 quota: W1's scorer, Quota(Require Message 20%, Cap ToolOutput 30%) over Greedy, 20%."""
    items = _chat_items(random.Random(SEED + 4 * n), n, KINDS)
    scorer = CompositeScorer([(RecencyScorer(), 0.6), (PriorityScorer(), 0.4)])
    slicer = QuotaSlice(
        GreedySlice(),
        [QuotaEntry("Message", require=20.0), QuotaEntry("ToolOutput", cap=30.0)],
    )
    return CoreCase(items, _share(items, 5), Pipeline(scorer, slicer, ChronologicalPlacer()))


def w11(n: int = 1_000_000) -> CoreCase:
    """W11 a million: W3's items and scorer, Greedy, Chronological, 10%."""
    case = w3(n)
    scorer = case.pipeline.scorer
    return CoreCase(case.items, case.budget, Pipeline(scorer, GreedySlice(), ChronologicalPlacer()))


def floor(items: list[ContextItem]) -> Callable[[], object]:
    """The workload floor on ``items``: one pass reading every item's tokens plus one
    ``sorted()`` of N distinct (seeded random) floats, i.e. N scores."""
    rng = random.Random(SEED)
    floats = [rng.random() for _ in items]

    def run_floor() -> object:
        total = 0
        for item in items:
            total += item.tokens
        return total, sorted(floats)

    return run_floor


def fresh_copy(item: ContextItem) -> ContextItem:
    """A new item equal to ``item`` whose content string, tags tuple and timestamp are new
    objects too, as when a caller builds its items per request: nothing a previous run
    touched (a string's cached hash, say) carries over."""
    content = item.content
    timestamp = item.timestamp
    return item.model_copy(
        update={
            "content": content[:1] + content[1:],
            "tags": tuple(list(item.tags)),
            "timestamp": None if timestamp is None else timestamp.replace(),
        }
    )


class ColdRuns:
    """A workload's first and only run over fresh items (callers that build their items
    per request): :meth:`fresh`, the row's untimed setup, copies the case's items with
    :func:`fresh_copy`; :meth:`run` times one run over those copies."""

    def __init__(self, case: CoreCase) -> None:
        self.case = case
        self.items: list[ContextItem] = []

    def fresh(self) -> None:
        self.items = []  # the previous copies go first (peak memory)
        self.items = list(map(fresh_copy, self.case.items))

    def run(self) -> object:
        return self.case.pipeline.run(self.items, self.case.budget)


def cold_case(workload: str, label: str, case: CoreCase, input_mib: float | None) -> Case:
    """The cold row of ``case``: one run over fresh items per sample, against the floor of
    the same items."""
    cold = ColdRuns(case)
    return Case(
        workload,
        label,
        len(case.items),
        cold.run,
        input_mib=input_mib,
        floor=floor(case.items),
        note=COLD,
        setup=cold.fresh,
    )


WARM = "repeated run over the same items"
"""The note of the rows that time one items list again and again (warm-ups included)."""

COLD = "first run over fresh items (new objects and strings per sample, built untimed)"
"""The note of the cold rows."""

COLD_SIZES = (10_000, 100_000)
"""The sizes with a cold row (W1, W3)."""

# -- the harness's cases -------------------------------------------------------------------
SPEC_SIZES = {"W3f": {10_000}, "W4": {10_000}}
"""Sizes the workloads define; the harness's other sizes are extra points for the ×10 column."""


def core_cases(workload: str, sizes: list[int]) -> Iterator[Case]:
    builders = {
        "W1": ("W1 chat", w1),
        "W2": ("W2 rag", w2),
        "W3": ("W3 stress", w3),
        "W3f": ("W3f frequency", w3f),
        "W4": ("W4 quota", w4),
    }
    title, build = builders[workload]
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: build(size))  # type: ignore[misc]
        case: CoreCase = built  # type: ignore[assignment]
        label = f"{title} bucket {size}" if workload == "W2" else title
        extra = workload in SPEC_SIZES and size not in SPEC_SIZES[workload]
        yield Case(
            workload,
            label,
            len(case.items),
            case.run,
            input_mib=input_mib,
            floor=floor(case.items),
            note="; ".join(["extra size (scaling)"] * extra + [WARM]),
        )
        if workload in ("W1", "W3") and size in COLD_SIZES:
            yield cold_case(workload, f"{title} cold", case, input_mib)
        del case, built


def w9_cases(sizes: list[int]) -> Iterator[Case]:
    """W9: ``dry_run`` (the report included) against ``run`` on W1's and W3's items; and
    ``dry_run`` with every entry of the report read (``included`` and ``excluded``)."""
    builders = (("W1", w1), ("W3", w3))
    for size in sizes:
        for name, build in builders:
            built, input_mib = traced_build(lambda size=size, build=build: build(size))  # type: ignore[misc]
            case: CoreCase = built  # type: ignore[assignment]
            yield Case(
                "W9",
                f"W9 report {name}",
                len(case.items),
                case.dry_run,
                input_mib=input_mib,
                incumbent=case.run,
                incumbent_label="run",
                note="dry_run ÷ run",
            )
            yield Case(
                "W9",
                f"W9 report {name}, entries read",
                len(case.items),
                case.dry_run_read,
                input_mib=input_mib,
                incumbent=case.run,
                incumbent_label="run",
                note="dry_run and every report entry read ÷ run (no target: the price of reading)",
            )
            del case, built


def w11_cases(sizes: list[int]) -> Iterator[Case]:
    """W11: W3's items at a million, Greedy and Chronological; ``run`` and ``dry_run``
    on one build of the items."""
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: w11(size))  # type: ignore[misc]
        case: CoreCase = built  # type: ignore[assignment]
        base = floor(case.items)
        n = len(case.items)
        yield Case(
            "W11", "W11 million run", n, case.run, input_mib=input_mib, floor=base, note=WARM
        )
        yield Case(
            "W11",
            "W11 million dry_run",
            n,
            case.dry_run,
            input_mib=input_mib,
            floor=base,
            note=WARM,
        )
        yield cold_case("W11", "W11 million run cold", case, input_mib)
        del case, built


if __name__ == "__main__":
    from benchmarks.run import main

    raise SystemExit(main(["--only", "W1,W2,W3,W3f,W4", *sys.argv[1:]]))
