"""The pipeline's array route gives exactly what the spec's per-item definitions give."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import (
    PerItemScorer,
    SpecGreedy,
    SpecPlacer,
    outcome,
    passes,
    scorers,
    spec_chronological,
    spec_u_shaped,
)

import cupel._pipeline.slice
from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    Pipeline,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    UShapedPlacer,
)
from cupel._fastpath import stable_argsort

QUOTAS = [QuotaEntry("Message", require=25.0), QuotaEntry("Document", cap=30.0)]
COUNTS = [CountQuotaEntry("Message", require_count=1, cap_count=3)]

# (built-in slicer, the same slicer over the spec's per-item greedy)
SLICERS = [
    (GreedySlice(), SpecGreedy()),
    (QuotaSlice(GreedySlice(), QUOTAS), QuotaSlice(SpecGreedy(), QUOTAS)),
    (CountQuotaSlice(GreedySlice(), COUNTS), CountQuotaSlice(SpecGreedy(), COUNTS)),
    (KnapsackSlice(bucket_size=3), KnapsackSlice(bucket_size=3)),
]
PLACERS = [
    (ChronologicalPlacer(), SpecPlacer(spec_chronological)),
    (UShapedPlacer(), SpecPlacer(spec_u_shaped)),
]


@settings(max_examples=examples(400), deadline=None)
@given(
    scorer=scorers,
    slicers=st.sampled_from(SLICERS),
    placers=st.sampled_from(PLACERS),
    items=passes(max_size=16, allow_pinned=True, allow_negative=True),
    target=st.integers(0, 150),
    extra=st.integers(0, 40),
    reserve=st.integers(0, 10),
    deduplication=st.booleans(),
    strategy=st.sampled_from(["throw", "truncate", "proceed"]),
)
def test_built_in_pipeline_equals_the_per_item_definitions(
    scorer: Any,
    slicers: tuple[Any, Any],
    placers: tuple[Any, Any],
    items: list[ContextItem],
    target: int,
    extra: int,
    reserve: int,
    deduplication: bool,
    strategy: str,
) -> None:
    budget = ContextBudget(
        max_tokens=target + extra, target_tokens=target, output_reserve=min(reserve, target)
    )
    fast = Pipeline(
        scorer,
        slicers[0],
        placers[0],
        deduplication=deduplication,
        overflow_strategy=strategy,
    )
    reference = Pipeline(
        PerItemScorer(scorer),
        slicers[1],
        placers[1],
        deduplication=deduplication,
        overflow_strategy=strategy,
    )
    assert outcome(fast, items, budget) == outcome(reference, items, budget)


@settings(max_examples=examples(300), deadline=None)
@given(
    scorer=scorers,
    placers=st.sampled_from(PLACERS),
    items=st.one_of(
        passes(max_size=16, allow_pinned=True, allow_negative=True),
        passes(min_size=30, max_size=64, allow_pinned=True, allow_negative=True),
    ),
    share=st.one_of(st.floats(0.0, 1.2), st.floats(0.0, 0.4), st.floats(0.0, 0.4)),
    deduplication=st.booleans(),
    strategy=st.sampled_from(["throw", "truncate", "proceed"]),
)
def test_greedy_pipeline_at_any_budget_share_equals_the_per_item_definitions(
    scorer: Any,
    placers: tuple[Any, Any],
    items: list[ContextItem],
    share: float,
    deduplication: bool,
    strategy: str,
) -> None:
    """Greedy over longer passes at budgets cut anywhere (a tail walked after the first
    miss), then the placers, pinned items included: the same run and report as the
    per-item definitions."""
    pinned = sum(item.tokens for item in items if item.pinned and item.tokens > 0)
    target = pinned + int(sum(i.tokens for i in items if not i.pinned and i.tokens > 0) * share)
    budget = ContextBudget(max_tokens=target + 5, target_tokens=target)
    fast = Pipeline(
        scorer, GreedySlice(), placers[0], deduplication=deduplication, overflow_strategy=strategy
    )
    reference = Pipeline(
        PerItemScorer(scorer),
        SpecGreedy(),
        placers[1],
        deduplication=deduplication,
        overflow_strategy=strategy,
    )
    assert outcome(fast, items, budget) == outcome(reference, items, budget)


@settings(max_examples=examples(200), deadline=None)
@given(items=passes(max_size=16), target=st.integers(0, 150))
def test_integer_scores_take_the_list_route_and_agree_with_float_scores(
    items: list[ContextItem], target: int
) -> None:
    class IntScores:
        def score(self, item: ContextItem, all_items: Any) -> int:
            return item.tokens % 7

    class FloatScores:
        def score(self, item: ContextItem, all_items: Any) -> float:
            return float(item.tokens % 7)

    budget = ContextBudget(max_tokens=target, target_tokens=target)
    for placer in (ChronologicalPlacer(), UShapedPlacer()):
        ints = Pipeline(IntScores(), GreedySlice(), placer).dry_run(items, budget)
        floats = Pipeline(FloatScores(), GreedySlice(), placer).dry_run(items, budget)
        assert [id(i) for i in ints.items] == [id(i) for i in floats.items]
        assert ints.report is not None and floats.report is not None
        assert [(id(e.item), e.score, e.reason) for e in ints.report.excluded] == [
            (id(e.item), e.score, e.reason) for e in floats.report.excluded
        ]


def test_built_in_components_take_the_array_route(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_expected(*args: object) -> object:
        raise AssertionError("the array route should not build ScoredItem lists")

    monkeypatch.setattr(cupel._pipeline.slice, "slice_detailed", not_expected)
    monkeypatch.setattr(cupel._pipeline.slice, "ranked_lists", not_expected)
    items = [ContextItem(content=f"m{i}", tokens=10 + i, kind="Document") for i in range(50)]
    scorer = CompositeScorer([(RecencyScorer(), 1.0), (KindScorer(), 1.0)])
    budget = ContextBudget(max_tokens=200, target_tokens=200)
    for placer in (ChronologicalPlacer(), UShapedPlacer()):
        result = Pipeline(scorer, GreedySlice(), placer).run(items, budget)
        assert 0 < result.total_tokens <= 200


def test_the_array_route_leaves_the_input_untouched() -> None:
    items = [ContextItem(content=f"m{i}", tokens=5, priority=i % 3) for i in range(20)]
    before = list(items)
    result = Pipeline(KindScorer()).run(items, ContextBudget(max_tokens=40, target_tokens=40))
    assert items == before and all(a is b for a, b in zip(items, before, strict=True))
    assert all(any(x is y for y in items) for x in result.items)


def test_an_iterable_of_items_is_read_once_like_a_list() -> None:
    items = [ContextItem(content=f"m{i}", tokens=5, priority=i) for i in range(10)]
    budget = ContextBudget(max_tokens=20, target_tokens=20)
    pipeline = Pipeline(KindScorer())
    from_list = pipeline.run(items, budget)
    from_generator = pipeline.run((item for item in items), budget)  # type: ignore[arg-type]
    assert [id(i) for i in from_generator.items] == [id(i) for i in from_list.items]
    assert len(from_list.items) == 4


@settings(max_examples=examples(500), deadline=None)
@given(
    keys=st.lists(
        st.one_of(
            st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 5e-324, float("inf"), float("-inf")]),
            st.floats(allow_nan=False),
        ),
        max_size=80,
    )
)
def test_stable_argsort_is_numpys_stable_argsort(keys: list[float]) -> None:
    """The fast stable sort (unstable sort, then equal-key runs by position) orders every
    NaN-free key list exactly like ``np.argsort(kind="stable")``, ties and signed zeros
    included."""
    array = np.array(keys, dtype=np.float64)
    expected = np.argsort(array, kind="stable")
    assert stable_argsort(array).tolist() == expected.tolist()
