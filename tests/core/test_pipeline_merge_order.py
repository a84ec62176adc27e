"""Place merge order (DESIGN.md ruling 13): the selection enters the merge in the Sort
stage's order (score descending, stable), never in the order the slicer returned it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

import pytest

from cupel import (
    ChronologicalPlacer,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KnapsackSlice,
    Pipeline,
    ReflexiveScorer,
    ScoredItem,
    UShapedPlacer,
)
from cupel.diagnostics import BudgetExceeded

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def hinted(content: str, tokens: int, hint: float, **kw: object) -> ContextItem:
    return ContextItem(content=content, tokens=tokens, future_relevance_hint=hint, **kw)  # type: ignore[arg-type]


class Reversed:
    """A custom slicer selecting everything, returned in reverse score order (the list
    route of the pipeline)."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return [entry.item for entry in reversed(scored)]


class Recorder:
    """A custom placer recording the merged list it is given (then keeping that order)."""

    def __init__(self) -> None:
        self.merged: list[tuple[str, float]] = []

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        self.merged = [(entry.item.content, entry.score) for entry in items]
        return [entry.item for entry in items]


def contents(items: Sequence[ContextItem]) -> list[str]:
    return [i.content for i in items]


BUDGET = ContextBudget(max_tokens=100, target_tokens=100)


@pytest.mark.parametrize("slicer", [GreedySlice(), KnapsackSlice(bucket_size=10), Reversed()])
def test_the_placer_receives_pinned_then_the_selection_by_score(slicer: object) -> None:
    items = [
        hinted("low", 30, 0.3),
        hinted("pin", 5, 0.0, pinned=True),
        hinted("high", 30, 0.9),
        hinted("mid", 5, 0.6),  # the densest: greedy returns it first
    ]
    recorder = Recorder()
    Pipeline(ReflexiveScorer(), slicer, recorder).run(items, BUDGET)  # type: ignore[arg-type]
    assert recorder.merged == [("pin", 1.0), ("high", 0.9), ("mid", 0.6), ("low", 0.3)]


def test_greedy_density_order_does_not_leak_into_u_shaped_ties() -> None:
    items = [hinted("a", 40, 0.5), hinted("b", 10, 0.5), hinted("c", 20, 0.5)]
    sliced = GreedySlice().slice([ScoredItem(i, 0.5) for i in items], BUDGET)
    assert contents(sliced) == ["b", "c", "a"]  # density order
    for pipeline_slicer in (GreedySlice(), Reversed()):
        result = Pipeline(ReflexiveScorer(), pipeline_slicer, UShapedPlacer()).run(items, BUDGET)
        assert contents(result.items) == ["a", "c", "b"]


def test_knapsack_reconstruction_order_does_not_leak_into_chronological_ties() -> None:
    items = [hinted("r", 30, 0.3), hinted("p", 30, 0.9), hinted("q", 30, 0.6)]
    scored = [ScoredItem(i, i.future_relevance_hint or 0.0) for i in (items[1], items[2], items[0])]
    assert contents(KnapsackSlice(bucket_size=10).slice(scored, BUDGET)) == ["r", "q", "p"]
    pipeline = Pipeline(ReflexiveScorer(), KnapsackSlice(bucket_size=10), ChronologicalPlacer())
    assert contents(pipeline.run(items, BUDGET).items) == ["p", "q", "r"]


def test_equal_and_missing_timestamps_follow_score_order() -> None:
    items = [
        hinted("w", 4, 0.2),
        hinted("y", 5, 0.3, timestamp=T0),
        hinted("z", 40, 0.8),
        hinted("x", 50, 0.9, timestamp=T0),
    ]
    result = Pipeline(ReflexiveScorer(), GreedySlice(), ChronologicalPlacer()).run(items, BUDGET)
    assert contents(result.items) == ["x", "y", "z", "w"]


def test_truncate_keeps_the_higher_scored_item_whatever_the_slicer_order() -> None:
    tool = hinted("tool", 60, 0.3, kind="ToolOutput")
    doc = hinted("doc", 60, 0.8, kind="Document")
    slicer = CountQuotaSlice(
        GreedySlice(),
        [CountQuotaEntry("ToolOutput", require_count=1), CountQuotaEntry("Document", 1)],
    )
    budget = ContextBudget(max_tokens=200, target_tokens=100)
    outcome = slicer.slice_detailed([ScoredItem(doc, 0.8), ScoredItem(tool, 0.3)], budget)
    assert contents(outcome.selected) == ["tool", "doc"]  # commit (entry) order
    pipeline = Pipeline(ReflexiveScorer(), slicer, overflow_strategy="truncate")
    result = pipeline.dry_run([tool, doc], budget)
    assert contents(result.items) == ["doc"]
    assert result.report is not None
    (dropped,) = result.report.excluded
    assert dropped.item is tool and dropped.reason == BudgetExceeded(60, 40)
    assert contents(pipeline.run([tool, doc], budget).items) == ["doc"]


def test_equal_scores_keep_input_order_in_the_merge() -> None:
    items = [hinted(f"i{n}", 10 - n, 0.5) for n in range(5)]  # greedy: densest last
    recorder = Recorder()
    Pipeline(ReflexiveScorer(), GreedySlice(), recorder).run(items, BUDGET)
    assert [c for c, _ in recorder.merged] == ["i0", "i1", "i2", "i3", "i4"]
