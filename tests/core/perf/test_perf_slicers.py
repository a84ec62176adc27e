"""The slicers' array fast paths agree exactly with the spec's pseudocode."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import (
    GREEDY_THRESHOLDS,
    budgets,
    context_items,
    greedy_thresholds,
    scored_lists,
    spec_greedy,
)

import cupel.slicers.greedy as greedy_module
from cupel import ContextBudget, ContextItem, GreedySlice, QuotaEntry, QuotaSlice, ScoredItem
from cupel.slicers._base import Candidates, candidates_of, fast_selector


def ids(items: list[ContextItem]) -> list[int]:
    return [id(item) for item in items]


@settings(max_examples=examples(500), deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_equals_the_spec_pseudocode(scored: list[ScoredItem], budget: ContextBudget) -> None:
    assert ids(GreedySlice().slice(scored, budget)) == ids(spec_greedy(scored, budget))


@settings(max_examples=examples(300), deadline=None)
@given(scored=scored_lists(), budget=budgets)
def test_greedy_array_path_selects_the_spec_positions(
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


MAX_FLOAT = sys.float_info.max


def reference_positions(
    tokens: list[int], scores: list[float], target: int, by_score: bool
) -> list[int]:
    """GREEDY-SLICE on plain lists: by descending density (zero tokens: the largest
    float), then (``by_score``) descending score, then position; each item taken when it
    has no tokens or fits what is left."""
    if not tokens or target <= 0:
        return []
    density = [MAX_FLOAT if t == 0 else s / t for t, s in zip(tokens, scores, strict=True)]
    order = sorted(
        range(len(tokens)), key=lambda i: (-density[i], -scores[i] if by_score else 0.0, i)
    )
    remaining = target
    taken = []
    for i in order:
        if tokens[i] <= remaining:
            taken.append(i)
            remaining -= tokens[i]
    return taken


token_counts = st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(0, 40), st.integers(20, 200))
tiny_counts = st.one_of(st.sampled_from([1, 1, 1, 2]), st.just(0), st.integers(1, 60))
edge_scores = st.one_of(
    st.sampled_from(
        [0.0, -0.0, 0.5, 1.0, 2.0, float("inf"), float("-inf"), MAX_FLOAT, -MAX_FLOAT, 5e-324]
    ),
    st.floats(allow_nan=False),
    st.integers(-4, 4).map(lambda k: k / 4),
)


@settings(max_examples=examples(600), deadline=None)
@given(
    rows=st.one_of(
        st.lists(st.tuples(token_counts, edge_scores), max_size=300),
        st.lists(st.tuples(token_counts, edge_scores), min_size=40, max_size=300),
        st.lists(st.tuples(tiny_counts, edge_scores), min_size=40, max_size=300),
        st.lists(
            st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([0.0, 1.0, 2.0])),
            min_size=40,
            max_size=300,
        ),
    ),
    limits=st.sampled_from(GREEDY_THRESHOLDS),
    by_score=st.booleans(),
    data=st.data(),
)
def test_greedy_positions_equal_the_per_item_definition(
    rows: list[tuple[int, float]],
    limits: tuple[int, ...],
    by_score: bool,
    data: st.DataObject,
) -> None:
    """The array path (a head of the density order found from a sample, the tail after
    the first miss in array rounds) selects exactly what the per-item loop selects, in
    greedy order: ties, equal densities, zero-token items, signed zeros, infinities,
    huge scores, one item, none, all fitting, none fitting, many tiny items."""
    tokens = [t for t, _ in rows]
    scores = [s for _, s in rows]
    total = sum(tokens)
    target = data.draw(
        st.one_of(
            st.integers(-1, total + 5),
            st.integers(0, max(0, total // 4)),
            st.integers(0, max(0, total // 4)),
            st.just(total),
        )
    )
    candidates = Candidates(
        [None] * len(rows),  # type: ignore[list-item]  # never read on the array path
        np.arange(len(rows)),
        np.array(tokens, dtype=np.int64),
        np.array(scores, dtype=np.float64),
    )
    budget = ContextBudget(max_tokens=max(target, 0) + 10, target_tokens=max(target, 0))
    expected = reference_positions(tokens, scores, max(target, 0), by_score)
    with greedy_thresholds(*limits):
        select = GreedySlice()._select_unranked if by_score else GreedySlice()._select_positions
        assert select(candidates, budget).tolist() == expected


@pytest.mark.parametrize("seed", range(6))
def test_greedy_head_search_on_large_inputs_equals_the_per_item_definition(seed: int) -> None:
    """The shipped thresholds on inputs large enough for the head search: W1/W3-like
    token counts and scores, coarse scores (long runs of equal densities), tiny items."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4096, 20_000))
    tokens = [
        rng.integers(20, 201, n),
        rng.integers(1, 4, n),
        np.where(rng.random(n) < 0.05, 0, rng.integers(1, 60, n)),
    ][seed % 3]
    scores = [rng.random(n), rng.integers(0, 4, n) / 2.0, -rng.random(n)][(seed // 3) % 3]
    for share in (0.02, 0.1, 0.25, 0.6, 1.0):
        target = int(tokens.sum() * share)
        candidates = Candidates(
            [None] * n,  # type: ignore[list-item]  # never read on the array path
            np.arange(n),
            tokens.astype(np.int64),
            scores.astype(np.float64),
        )
        budget = ContextBudget(max_tokens=target + 10, target_tokens=target)
        for by_score in (False, True):
            expected = reference_positions(tokens.tolist(), scores.tolist(), target, by_score)
            select = GreedySlice()._select_unranked if by_score else GreedySlice()._select_positions
            assert select(candidates, budget).tolist() == expected


@settings(max_examples=examples(300), deadline=None)
@given(
    sizes=st.lists(st.one_of(st.integers(0, 3), st.integers(0, 300)), max_size=200),
    remaining=st.integers(0, 400),
    walk=st.sampled_from([0, 1, 4, 32]),
)
def test_greedy_tail_rounds_take_what_the_item_loop_takes(
    sizes: list[int], remaining: int, walk: int
) -> None:
    positions = np.arange(100, 100 + len(sizes), dtype=np.intp)
    expected = []
    left = remaining
    for position, size in zip(positions.tolist(), sizes, strict=True):
        if size <= left:
            expected.append(position)
            left -= size
    with greedy_thresholds(4096, 1024, 8, walk):
        taken = greedy_module._tail(positions, np.array(sizes, dtype=np.int64), remaining)
    assert taken.tolist() == expected


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


@settings(max_examples=examples(300), deadline=None)
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
