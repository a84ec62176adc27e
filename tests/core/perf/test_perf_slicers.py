"""GreedySlice's one route (arrays) agrees exactly with the spec's pseudocode, the oracle
transcribed in perf_testkit: through ``slice`` and through the pipeline's columns."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from candidates_testkit import candidates_of
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import MAX_FLOAT, budgets, context_items, scored_lists, spec_greedy

from cupel import ContextBudget, ContextItem, GreedySlice, QuotaEntry, QuotaSlice, ScoredItem
from cupel.slicers._base import fast_selector


def ids(items: list[ContextItem]) -> list[int]:
    return [id(item) for item in items]


@settings(max_examples=examples(500), deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_equals_the_spec_pseudocode(scored: list[ScoredItem], budget: ContextBudget) -> None:
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


@settings(max_examples=examples(300), deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_over_the_pipeline_columns_selects_the_spec_positions(
    scored: list[ScoredItem], budget: ContextBudget
) -> None:
    candidates = candidates_of(scored)
    assert candidates is not None  # finite-or-infinite floats, non-negative tokens
    positions = GreedySlice()._select_positions(candidates, budget).tolist()
    assert ids([scored[p].item for p in positions]) == ids(spec_greedy(scored, budget))


@settings(max_examples=examples(200), deadline=None)
@given(
    items=st.lists(context_items(), max_size=12),
    values=st.lists(st.one_of(st.integers(-3, 3), st.just(float("nan"))), min_size=12),
    budget=budgets,
)
def test_greedy_with_int_or_nan_scores_agrees(
    items: list[ContextItem], values: list[float], budget: ContextBudget
) -> None:
    scored = [ScoredItem(item, value) for item, value in zip(items, values, strict=False)]
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


def test_greedy_never_selects_negative_token_items() -> None:
    scored = [
        ScoredItem(ContextItem(content="neg", tokens=-5), 0.9),
        ScoredItem(ContextItem(content="ok", tokens=5), 0.1),
    ]
    budget = ContextBudget(max_tokens=10, target_tokens=10)
    assert [i.content for i in GreedySlice().slice(scored, budget)] == ["ok"]


def test_greedy_with_token_counts_beyond_int64_agrees() -> None:
    scored = [
        ScoredItem(ContextItem(content="huge", tokens=2**70), 1.0),
        ScoredItem(ContextItem(content="big", tokens=2**64), 0.5),
        ScoredItem(ContextItem(content="small", tokens=3), 0.1),
        ScoredItem(ContextItem(content="free", tokens=0), 0.0),
    ]
    for target in (0, 2, 3, 2**64 + 3, 2**71):
        budget = ContextBudget(max_tokens=2**72, target_tokens=target)
        assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


def test_greedy_walks_the_tail_after_the_first_item_that_does_not_fit() -> None:
    # densities: big 0.05, a 0.04, b 0.03, c 0.02 -> big fits, a does not, b and c do.
    rows = [("big", 60, 3.0), ("a", 50, 2.0), ("b", 20, 0.6), ("c", 20, 0.4), ("d", 30, 0.1)]
    scored = [ScoredItem(ContextItem(content=c, tokens=t), s) for c, t, s in rows]
    budget = ContextBudget(max_tokens=100, target_tokens=100)
    assert [i.content for i in GreedySlice().slice(scored, budget)] == ["big", "b", "c"]


token_counts = st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(0, 40), st.integers(20, 200))
tiny_counts = st.one_of(st.sampled_from([1, 1, 1, 2]), st.just(0), st.integers(1, 60))
edge_scores = st.one_of(
    st.sampled_from(
        [0.0, -0.0, 0.5, 1.0, 2.0, float("inf"), float("-inf"), MAX_FLOAT, -MAX_FLOAT, 5e-324]
    ),
    st.floats(allow_nan=False),
    st.integers(-4, 4).map(lambda k: k / 4),
)


def rows_scored(rows: list[tuple[int, float]]) -> list[ScoredItem]:
    return [ScoredItem(ContextItem(content=f"r{i}", tokens=t), s) for i, (t, s) in enumerate(rows)]


@settings(max_examples=examples(600), deadline=None)
@given(
    rows=st.one_of(
        st.lists(st.tuples(token_counts, edge_scores), max_size=300),
        st.lists(st.tuples(tiny_counts, edge_scores), min_size=40, max_size=300),
        st.lists(
            st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([0.0, 1.0, 2.0])),
            min_size=40,
            max_size=300,
        ),
    ),
    data=st.data(),
)
def test_greedy_on_longer_inputs_equals_the_spec_pseudocode(
    rows: list[tuple[int, float]], data: st.DataObject
) -> None:
    total = sum(t for t, _ in rows)
    target = data.draw(st.integers(0, total + 5))
    scored = rows_scored(rows)
    budget = ContextBudget(max_tokens=total + 10, target_tokens=target)
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


@pytest.mark.parametrize("seed", range(4))
def test_greedy_on_large_inputs_equals_the_spec_pseudocode(seed: int) -> None:
    rng = random.Random(seed)
    rows = [(rng.randint(0, 200), rng.choice([rng.random(), 0.5, 0.0])) for _ in range(20_000)]
    scored = rows_scored(rows)
    for share in (0.01, 0.3, 0.99):
        target = int(sum(t for t, _ in rows) * share)
        budget = ContextBudget(max_tokens=target + 1, target_tokens=target)
        candidates = candidates_of(scored)
        assert candidates is not None
        positions = GreedySlice()._select_positions(candidates, budget).tolist()
        expected = ids(spec_greedy(scored, budget))
        assert ids([scored[p].item for p in positions]) == expected
        assert ids(GreedySlice().slice(scored, budget)) == expected


QUOTAS = [
    [QuotaEntry("Message", require=30.0), QuotaEntry("ToolOutput", cap=20.0)],
    [QuotaEntry("document", require=50.0, cap=60.0), QuotaEntry("Custom", cap=0.0)],
    [],
]


class SpecGreedySlice:
    """The spec's GREEDY-SLICE as a slicer (the oracle of QuotaSlice's inner)."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return spec_greedy(scored, budget)


@settings(max_examples=examples(300), deadline=None)
@given(scored=scored_lists(max_size=20), budget=budgets, quotas=st.sampled_from(QUOTAS))
def test_quota_over_greedy_equals_quota_over_the_spec_pseudocode(
    scored: list[ScoredItem], budget: ContextBudget, quotas: list[QuotaEntry]
) -> None:
    expected = ids(QuotaSlice(SpecGreedySlice(), quotas).slice(scored, budget))  # type: ignore[arg-type]
    assert ids(QuotaSlice(GreedySlice(), quotas).slice(scored, budget)) == expected


def test_a_subclass_overriding_slice_keeps_its_behaviour_in_the_pipeline() -> None:
    class NothingGreedy(GreedySlice):
        def slice(self, scored: object, budget: object) -> list[ContextItem]:
            return []

    assert fast_selector(NothingGreedy()) is None
    assert fast_selector(GreedySlice()) is not None
