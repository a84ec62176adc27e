"""Random pipelines for the property suite (tests/core/test_properties.py).

:func:`build_case` draws one whole case (items, budget, pipeline and its per-item
"reference" twin) from a :class:`Source`, which hypothesis (:class:`DrawSource`) or a
seeded ``random.Random`` (:class:`RandomSource`, for the hash-seed subprocesses, where
hypothesis's own generation is not under our control) both provide. :func:`outcome`
runs a case and returns everything observable about it, items compared by identity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from random import Random
from typing import Any, TypeVar

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    CupelError,
    DecayScorer,
    DiagnosticTraceCollector,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    MetadataKeyScorer,
    MetadataTrustScorer,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    ScoredItem,
    SelectionReport,
    StepDecay,
    TagScorer,
    TraceDetailLevel,
    UShapedPlacer,
    WindowDecay,
)
from cupel.slicers import SliceOutcome, slice_detailed

T = TypeVar("T")
T0 = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)
ZONES = [timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]
KINDS = ["Message", "message", "Document", "ToolOutput", "Memory", "SystemPrompt", "Custom"]
TAGS = ["a", "A", "b", "db", "DB", "ops", "é", "x1"]
CONTENTS = [f"c{i}" for i in range(12)] + ["long text", "ü"]
ALLOWED_ERRORS = {
    "PinnedBudgetError",
    "OverflowBudgetError",
    "CountRequirementError",
    "TableTooLargeError",
}
"""The budget-driven errors a valid configuration may raise; any other error fails."""


class Source:
    """Where a case's random choices come from."""

    def int(self, low: int, high: int) -> int:
        raise NotImplementedError

    def pick(self, options: Sequence[T]) -> T:
        return options[self.int(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        return self.int(1, 100) <= percent


class RandomSource(Source):
    def __init__(self, seed: int) -> None:
        self.rng = Random(seed)

    def int(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


class DrawSource(Source):
    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def int(self, low: int, high: int) -> int:
        result: int = self.draw(self.st.integers(low, high))
        return result


# -- items --------------------------------------------------------------------------------------


def metadata(src: Source) -> dict[str, Any]:
    options: list[dict[str, Any]] = [
        {},
        {"cupel:trust": src.pick(["0.85", "0.2", "high", "nan", "1e-1"])},
        {"tier": src.pick(["gold", "Gold", "silver"])},
        {"tier": "gold", "trace": {"steps": [1, [2, {"k": "v"}]], "ids": (1, 2)}},
        {"cupel:trust": src.pick([0.3, 1.5, -2, True])},
    ]
    return src.pick(options)


def item(src: Source, allow_pinned: bool) -> ContextItem:
    stamp: datetime | None = None
    if src.chance(70):
        minute = src.int(0, 4)
        stamp = (T0 + timedelta(minutes=minute, microseconds=src.pick([0, 0, 1]))).astimezone(
            src.pick(ZONES)
        )
    hint = src.pick([None, None, 0.0, 0.25, 0.5, 0.5, 0.9, 1.0, 1.7, -0.3, math.nan, math.inf])
    return ContextItem(
        content=src.pick(CONTENTS),
        tokens=src.pick([0, 1, 5, 10, 10, 20, 35, 60, 120, -3, src.int(0, 90)]),
        kind=src.pick(KINDS),
        priority=src.pick([None, None, -1, 0, 2, 5]),
        tags=tuple(src.pick(TAGS) for _ in range(src.int(0, 3))),
        timestamp=stamp,
        future_relevance_hint=hint,
        pinned=allow_pinned and src.chance(12),
        metadata=metadata(src),
    )


def items(src: Source) -> list[ContextItem]:
    allow_pinned = src.chance(60)
    result = [item(src, allow_pinned) for _ in range(src.int(0, 22))]
    if result and src.chance(30):  # the very same object listed again
        for _ in range(src.int(1, 3)):
            result.insert(src.int(0, len(result)), result[src.int(0, len(result) - 1)])
    return result


# -- components -----------------------------------------------------------------------------------


class Custom:
    """A custom scorer (no batch method) returning ints, NaN or infinities sometimes."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if self.mode == "int":
            return item.tokens % 7  # an int: a valid score, converted to float
        if self.mode == "nan":
            return math.nan if item.tokens % 5 == 0 else item.tokens / 100
        return math.inf if item.tokens % 4 == 0 else -item.tokens / 50

    def __repr__(self) -> str:
        return f"Custom({self.mode!r})"


def leaf(src: Source) -> Any:
    return src.pick(
        [
            lambda: RecencyScorer(),
            lambda: PriorityScorer(),
            lambda: FrequencyScorer(),
            lambda: ReflexiveScorer(),
            lambda: KindScorer(),
            lambda: KindScorer({"Document": 2.0, "custom": 0.5}),
            lambda: TagScorer({"a": 1.0, "db": 0.5, "é": 2.0}, case_insensitive=src.chance(50)),
            lambda: MetadataTrustScorer(0.4),
            lambda: MetadataKeyScorer("tier", "gold", 1.5),
            lambda: DecayScorer(
                FixedTimeProvider(T0 + timedelta(minutes=3)),
                src.pick(
                    [
                        ExponentialDecay(timedelta(minutes=2)),
                        WindowDecay(timedelta(minutes=2)),
                        StepDecay([(timedelta(minutes=1), 0.9), (timedelta(minutes=3), 0.2)]),
                    ]
                ),
            ),
            lambda: Custom(src.pick(["int", "nan", "inf"])),
        ]
    )()


def scorer(src: Source, depth: int = 0) -> Any:
    if depth >= 2 or src.chance(45):
        return leaf(src)
    if src.chance(30):
        return ScaledScorer(scorer(src, depth + 1))
    children = [scorer(src, depth + 1) for _ in range(src.int(1, 3))]
    if src.chance(30):  # one child object shared by several entries
        children.append(children[0])
    return CompositeScorer([(child, src.pick([0.5, 1.0, 3.0])) for child in children])


def slicer(src: Source) -> Any:
    counts = [CountQuotaEntry("ToolOutput", 1, 2), CountQuotaEntry("memory", 0, 1)]
    return src.pick(
        [
            lambda: GreedySlice(),
            lambda: KnapsackSlice(bucket_size=src.pick([1, 3, 7])),
            lambda: QuotaSlice(
                GreedySlice(), [QuotaEntry("Message", 20.0, 70.0), QuotaEntry("Document", 0, 40)]
            ),
            lambda: QuotaSlice(KnapsackSlice(bucket_size=5), [QuotaEntry("ToolOutput", 10, 50)]),
            lambda: CountQuotaSlice(GreedySlice(), counts),
            lambda: CountConstrainedKnapsackSlice(counts, KnapsackSlice(bucket_size=4)),
        ]
    )()


def budget(src: Source) -> ContextBudget:
    if src.chance(3):
        huge = 10 ** src.pick([18, 40, 400])
        return ContextBudget(
            max_tokens=huge, target_tokens=huge, estimation_safety_margin_percent=5.0
        )
    max_tokens = src.int(0, 400)
    target = src.int(0, max_tokens)
    return ContextBudget(
        max_tokens=max_tokens,
        target_tokens=target,
        output_reserve=src.pick([0, 0, src.int(0, max_tokens // 4)]),
        reserved_slots=src.pick([{}, {}, {"Memory": src.int(0, 20)}]),
        estimation_safety_margin_percent=src.pick([0.0, 0.0, 5.0, 12.5]),
    )


# -- the per-item twin ----------------------------------------------------------------------------


class SlowFloat(float):
    """A float subclass: built-in slicers and placers given these scores run their per-item
    definitions instead of their array fast paths."""


class PerItemScorer:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        result: float = self.inner.score(item, all_items)
        return result


class PerItemSlicer:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def _slow(self, scored: Sequence[ScoredItem]) -> list[ScoredItem]:
        return [ScoredItem(entry.item, SlowFloat(entry.score)) for entry in scored]

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return self.slice_detailed(scored, budget).selected

    def slice_detailed(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        return slice_detailed(self.inner, self._slow(scored), budget)

    def __getattr__(self, name: str) -> Any:
        if name == "exclusion_reasons":  # the reasons the slicer gives itself (PackingChoice)
            return getattr(self.inner, name)
        raise AttributeError(name)


class PerItemPlacer:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        result: list[ContextItem] = self.inner.place(
            [ScoredItem(entry.item, SlowFloat(entry.score)) for entry in items]
        )
        return result


@dataclass
class Case:
    items: list[ContextItem]
    budget: ContextBudget
    pipeline: Pipeline
    reference: Pipeline


def build_case(src: Source) -> Case:
    chosen_scorer = scorer(src)
    chosen_slicer = slicer(src)
    chosen_placer = src.pick([ChronologicalPlacer(), UShapedPlacer()])
    options: dict[str, Any] = {
        "deduplication": src.chance(70),
        "overflow_strategy": src.pick(["throw", "truncate", "proceed"]),
    }
    return Case(
        items(src),
        budget(src),
        Pipeline(chosen_scorer, chosen_slicer, chosen_placer, **options),
        Pipeline(
            PerItemScorer(chosen_scorer),
            PerItemSlicer(chosen_slicer),
            PerItemPlacer(chosen_placer),
            **options,
        ),
    )


# -- observing a run ------------------------------------------------------------------------------


def score_key(score: float) -> Any:
    return ("nan",) if math.isnan(score) else (score, math.copysign(1.0, score))


def report_key(report: SelectionReport | None) -> Any:
    """Everything in a report but durations, items by identity (stage events only: an
    item-level trace adds one event per decision)."""
    assert report is not None
    return (
        [(id(e.item), score_key(e.score), e.reason) for e in report.included],
        [(id(e.item), score_key(e.score), e.reason) for e in report.excluded],
        [(e.stage, e.item_count) for e in report.events if e.message is None],
        report.total_candidates,
        report.total_tokens_considered,
        report.count_requirement_shortfalls,
        None if report.overflow is None else report.overflow.tokens_over_budget,
    )


def run_all(
    pipeline: Pipeline, case: Case, names: Sequence[str] = ("run", "dry_run", "traced")
) -> dict[str, Any]:
    """The case under ``run`` (null collector), ``dry_run`` and an item-level traced run:
    each as ``("ok", window ids, tokens, overflow, report key)`` or ``("error", type,
    message)``. The ``dry_run`` result itself is kept under ``"result"``."""
    results: dict[str, Any] = {}
    for name in names:
        events: list[Any] = []
        try:
            if name == "run":
                result = pipeline.run(case.items, case.budget, on_overflow=events.append)
                key = None
            elif name == "dry_run":
                result = pipeline.dry_run(case.items, case.budget, on_overflow=events.append)
                key = report_key(result.report)
                results["result"] = result
            else:
                collector = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
                result = pipeline.run(
                    case.items, case.budget, collector=collector, on_overflow=events.append
                )
                key = report_key(collector.build_report())
        except CupelError as error:
            results[name] = ("error", type(error).__name__, str(error))
            continue
        overflow = [e.tokens_over_budget for e in events]
        results[name] = ("ok", [id(i) for i in result.items], result.total_tokens, overflow, key)
    return results
