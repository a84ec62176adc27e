"""The slicers' array fast paths agree exactly with the spec's pseudocode."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st
from perf_testkit import budgets, context_items, scored_lists, spec_greedy

from cupel import ContextBudget, ContextItem, GreedySlice, QuotaEntry, QuotaSlice, ScoredItem
from cupel.slicers._base import candidates_of, fast_selector


def ids(items: list[ContextItem]) -> list[int]:
    return [id(item) for item in items]


@settings(max_examples=500, deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_equals_the_spec_pseudocode(scored: list[ScoredItem], budget: ContextBudget) -> None:
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


@settings(max_examples=300, deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_array_path_selects_the_spec_positions(
    scored: list[ScoredItem], budget: ContextBudget
) -> None:
    candidates = candidates_of(scored)
    assert candidates is not None  # finite-or-infinite floats, non-negative tokens
    positions = GreedySlice()._select_positions(candidates, budget).tolist()
    assert ids([scored[p].item for p in positions]) == ids(spec_greedy(scored, budget))


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(context_items(), max_size=12),
    values=st.lists(st.one_of(st.integers(-3, 3), st.just(float("nan"))), min_size=12),
    budget=budgets,
)
def test_greedy_with_int_or_nan_scores_uses_the_per_item_loop_and_agrees(
    items: list[ContextItem], values: list[float], budget: ContextBudget
) -> None:
    scored = [ScoredItem(item, value) for item, value in zip(items, values, strict=False)]
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


def test_greedy_never_selects_negative_token_items() -> None:
    scored = [
        ScoredItem(ContextItem(content="neg", tokens=-5), 0.9),
        ScoredItem(ContextItem(content="ok", tokens=5), 0.1),
    ]
    assert candidates_of(scored) is None
    budget = ContextBudget(max_tokens=10, target_tokens=10)
    assert [i.content for i in GreedySlice().slice(scored, budget)] == ["ok"]


def test_greedy_walks_the_tail_after_the_first_item_that_does_not_fit() -> None:
    # densities: big 0.05, a 0.04, b 0.03, c 0.02 -> big fits, a does not, b and c do.
    rows = [("big", 60, 3.0), ("a", 50, 2.0), ("b", 20, 0.6), ("c", 20, 0.4), ("d", 30, 0.1)]
    scored = [ScoredItem(ContextItem(content=c, tokens=t), s) for c, t, s in rows]
    budget = ContextBudget(max_tokens=100, target_tokens=100)
    assert [i.content for i in GreedySlice().slice(scored, budget)] == ["big", "b", "c"]


QUOTAS = [
    [QuotaEntry("Message", require=30.0), QuotaEntry("ToolOutput", cap=20.0)],
    [QuotaEntry("document", require=50.0, cap=60.0), QuotaEntry("Custom", cap=0.0)],
    [],
]


class PlainGreedy(GreedySlice):
    """GreedySlice without the pipeline fast path (a subclass overriding ``slice``):
    QuotaSlice's per-partition route."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return super().slice(scored, budget)


@settings(max_examples=300, deadline=None)
@given(scored=scored_lists(max_size=20), budget=budgets, quotas=st.sampled_from(QUOTAS))
def test_quota_array_path_equals_the_per_partition_route(
    scored: list[ScoredItem], budget: ContextBudget, quotas: list[QuotaEntry]
) -> None:
    fast = QuotaSlice(GreedySlice(), quotas)
    reference = QuotaSlice(PlainGreedy(), quotas)
    assert fast_selector(fast) is not None and fast_selector(reference.inner) is None
    candidates = candidates_of(scored)
    assert candidates is not None
    positions = fast._select_positions(candidates, budget)
    assert positions is not None
    expected = ids(reference.slice(scored, budget))
    assert ids([scored[p].item for p in positions.tolist()]) == expected
    assert ids(fast.slice(scored, budget)) == expected


def test_a_subclass_overriding_slice_keeps_its_behaviour_in_the_pipeline() -> None:
    class NothingGreedy(GreedySlice):
        def slice(self, scored: object, budget: object) -> list[ContextItem]:
            return []

    assert fast_selector(NothingGreedy()) is None
    assert fast_selector(GreedySlice()) is not None
