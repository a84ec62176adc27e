"""KnapsackSlice: 0/1 knapsack DP (spec: Slicers > KnapsackSlice; knapsack-slice.txt)."""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

import cupel.slicers.knapsack as knapsack_module
from cupel._errors import SlicerConfigError, TableTooLargeError
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.slicers import KnapsackSlice
from cupel.slicers.knapsack import MAX_CELLS_LIMIT


def reference_knapsack(
    scored: list[ScoredItem], budget: ContextBudget, bucket_size: int
) -> list[ContextItem]:
    """KNAPSACK-SLICE transcribed line by line from the spec, in pure Python."""
    if len(scored) == 0 or budget.target_tokens <= 0:
        return []
    zero_token_items = []
    candidates = []
    for si in scored:
        if si.item.tokens == 0:
            zero_token_items.append(si.item)
        elif si.item.tokens > 0:
            candidates.append(si)
    if len(candidates) == 0:
        return zero_token_items
    n = len(candidates)
    weights = [c.item.tokens for c in candidates]
    values = [max(0, math.floor(c.score * 10000)) for c in candidates]
    items = [c.item for c in candidates]
    capacity = budget.target_tokens // bucket_size
    if capacity == 0:
        return zero_token_items
    discretized = [math.ceil(w / bucket_size) for w in weights]
    dp = [0] * (capacity + 1)
    keep = [[False] * (capacity + 1) for _ in range(n)]
    for i in range(n):
        dw, dv = discretized[i], values[i]
        for w in range(capacity, dw - 1, -1):
            with_item = dp[w - dw] + dv
            if with_item > dp[w]:
                dp[w] = with_item
                keep[i][w] = True
    selected = []
    remaining = capacity
    for i in range(n - 1, -1, -1):
        if keep[i][remaining]:
            selected.append(items[i])
            remaining -= discretized[i]
    return zero_token_items + selected


class TestEdgeCases:
    """One test per row of the spec's KnapsackSlice edge-case table."""

    def test_empty_input_selects_nothing(self, budget):
        assert KnapsackSlice().slice([], budget(1000)) == []

    def test_zero_target_selects_nothing_not_even_zero_token_items(self, scored, budget):
        assert KnapsackSlice().slice(scored(("free", 0, 0.5)), budget(0, 100)) == []

    def test_all_zero_token_items_are_all_selected(self, scored, budget, names):
        items = scored(("a", 0, 0.1), ("b", 0, 0.9))
        assert names(KnapsackSlice().slice(items, budget(1))) == ["a", "b"]

    def test_capacity_zero_after_discretization_leaves_only_zero_token_items(
        self, scored, budget, names
    ):
        # floor(99 / 100) = 0 buckets, although "a" has only 5 tokens.
        items = scored(("a", 5, 0.9), ("free", 0, 0.1))
        assert names(KnapsackSlice(bucket_size=100).slice(items, budget(99))) == ["free"]

    def test_items_over_discretized_capacity_leave_only_zero_token_items(
        self, scored, budget, names
    ):
        # capacity floor(250/100) = 2; weights ceil(201/100) = 3 and ceil(300/100) = 3.
        items = scored(("a", 201, 0.9), ("free", 0, 0.1), ("b", 300, 0.8))
        assert names(KnapsackSlice().slice(items, budget(250))) == ["free"]

    def test_single_candidate_that_fits_comes_after_zero_token_items(self, scored, budget, names):
        items = scored(("a", 100, 0.5), ("free", 0, 0.1))
        assert names(KnapsackSlice().slice(items, budget(100))) == ["free", "a"]


def test_finds_the_best_combination_where_greedy_would_not(scored, budget, names):
    # Greedy takes "dense" first (0.6/60 = 0.01 > 0.45/50) and then fits nothing else:
    # 0.6 in total. The optimum is "x" + "y" = 0.9 in 100 tokens.
    items = scored(("dense", 60, 0.6), ("x", 50, 0.45), ("y", 50, 0.45))
    result = KnapsackSlice(bucket_size=10).slice(items, budget(100))
    assert sorted(names(result)) == ["x", "y"]


def test_output_is_zero_token_items_then_reconstruction_order(scored, budget, names):
    items = scored(("a", 10, 0.9), ("z1", 0, 0.1), ("b", 10, 0.8), ("z2", 0, 0.2), ("c", 10, 0.7))
    result = KnapsackSlice(bucket_size=10).slice(items, budget(30))
    assert names(result) == ["z1", "z2", "c", "b", "a"]


def test_weights_round_up_and_capacity_rounds_down(scored, budget, names):
    # 101 tokens need ceil(101/100) = 2 buckets; a 199-token budget has floor(199/100) = 1.
    items = scored(("a", 101, 0.9))
    assert KnapsackSlice().slice(items, budget(199)) == []
    assert names(KnapsackSlice().slice(items, budget(200))) == ["a"]


def test_equal_candidates_keep_the_earlier_one_as_the_pseudocode_does(scored, budget, names):
    # The second item only ties the first (not strictly better), so it is never kept.
    items = scored(("first", 10, 0.5), ("second", 10, 0.5))
    assert names(KnapsackSlice(bucket_size=10).slice(items, budget(10))) == ["first"]


def test_scores_below_one_ten_thousandth_have_no_value_and_are_not_selected(scored, budget, names):
    # floor(0.00005 * 10000) = 0 and negative scores clamp to 0: never strictly better.
    items = scored(("tiny", 10, 0.00005), ("negative", 10, -0.5), ("ok", 10, 0.0001))
    assert names(KnapsackSlice(bucket_size=1).slice(items, budget(100))) == ["ok"]


def test_negative_token_items_are_excluded_from_the_dp(scored, budget, names):
    items = scored(("neg", -10, 0.9), ("a", 10, 0.5))
    assert names(KnapsackSlice(bucket_size=1).slice(items, budget(10))) == ["a"]


def test_nan_score_counts_as_zero_value(budget, names):
    items = [
        ScoredItem(ContextItem(content="nan", tokens=10), math.nan),
        ScoredItem(ContextItem(content="a", tokens=10), 0.5),
    ]
    assert names(KnapsackSlice(bucket_size=1).slice(items, budget(100))) == ["a"]


def test_huge_scores_match_the_exact_integer_reference(budget):
    # Values past int64 totals: selection must still equal the pure-Python reference.
    items = [
        ScoredItem(ContextItem(content=f"i{i}", tokens=t), s)
        for i, (t, s) in enumerate([(3, 1e300), (4, 2e300), (2, 1e300), (5, 1.5e300)])
    ]
    result = KnapsackSlice(bucket_size=1).slice(items, budget(9))
    expected = reference_knapsack(items, budget(9), 1)
    assert [id(i) for i in result] == [id(i) for i in expected]


def test_infinite_score_counts_as_the_largest_value(budget, names):
    items = [
        ScoredItem(ContextItem(content="big", tokens=6), 1e300),
        ScoredItem(ContextItem(content="inf", tokens=6), math.inf),
    ]
    assert names(KnapsackSlice(bucket_size=1).slice(items, budget(10))) == ["inf"]


class TestTableGuard:
    def test_refuses_a_table_over_50_million_cells_with_a_clear_message(self, budget):
        items = [ScoredItem(ContextItem(content=f"i{i}", tokens=10), 0.5) for i in range(1000)]
        # 1000 candidates x (50_000 + 1) = 50_001_000 cells > 50_000_000
        with pytest.raises(
            TableTooLargeError,
            match=re.escape(
                "KnapsackSlice DP table too large: 1000 candidates x (50000 + 1) capacity = "
                "50001000 cells exceeds the limit of 50000000 cells"
            ),
        ) as info:
            KnapsackSlice(bucket_size=1).slice(items, budget(50_000))
        assert (info.value.candidates, info.value.capacity) == (1000, 50_000)
        assert (info.value.cells, info.value.limit) == (50_001_000, 50_000_000)
        assert isinstance(info.value, ValueError)

    def test_refuses_before_allocating_anything(self, scored):
        # 10 x (10**13 + 1) cells could never be allocated; the guard must fire first.
        huge = ContextBudget(max_tokens=10**13, target_tokens=10**13)
        items = scored(*[(f"i{i}", 5, 0.5) for i in range(10)])
        with pytest.raises(TableTooLargeError):
            KnapsackSlice(bucket_size=1).slice(items, huge)

    def test_a_table_exactly_at_the_limit_is_allowed(self, scored, budget, names):
        items = scored(("a", 5, 0.5), ("b", 5, 0.4))  # 2 x (10 + 1) = 22 cells
        assert len(KnapsackSlice(bucket_size=1, max_cells=22).slice(items, budget(10))) == 2
        with pytest.raises(TableTooLargeError, match="22 cells exceeds the limit of 21 cells"):
            KnapsackSlice(bucket_size=1, max_cells=21).slice(items, budget(10))

    def test_zero_token_items_do_not_count_as_candidates(self, scored, budget):
        items = scored(("a", 5, 0.5), *[(f"z{i}", 0, 0.1) for i in range(50)])
        assert len(KnapsackSlice(bucket_size=1, max_cells=11).slice(items, budget(10))) == 51


class TestConstruction:
    @pytest.mark.parametrize("bad", [0, -1, True, 1.5, "100", None])
    def test_bucket_size_must_be_a_positive_integer(self, bad):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(f"KnapsackSlice: bucket_size must be a positive integer, got {bad!r}"),
        ) as info:
            KnapsackSlice(bucket_size=bad)
        assert (info.value.field, info.value.value) == ("bucket_size", bad)

    @pytest.mark.parametrize("bad", [0, -5, False, 2.0])
    def test_max_cells_must_be_a_positive_integer(self, bad):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(f"KnapsackSlice: max_cells must be a positive integer, got {bad!r}"),
        ):
            KnapsackSlice(max_cells=bad)

    def test_defaults_properties_and_repr(self):
        slicer = KnapsackSlice()
        assert (slicer.bucket_size, slicer.max_cells) == (100, 50_000_000)
        assert repr(KnapsackSlice(7, max_cells=99)) == "KnapsackSlice(bucket_size=7, max_cells=99)"
        assert slicer.is_count_quota is False


_scores = st.one_of(
    st.floats(min_value=-0.1, max_value=1.0, allow_nan=False),
    st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75, 1.0]),  # frequent ties
)
_rows = st.lists(st.tuples(st.integers(min_value=-5, max_value=120), _scores), max_size=14)


@settings(max_examples=examples(300), deadline=None)
@given(
    rows=_rows,
    target=st.integers(min_value=0, max_value=600),
    bucket_size=st.integers(min_value=1, max_value=40),
)
def test_numpy_dp_selects_exactly_what_the_pseudocode_selects(rows, target, bucket_size):
    items = [ScoredItem(ContextItem(content=f"i{i}", tokens=t), s) for i, (t, s) in enumerate(rows)]
    budget = ContextBudget(max_tokens=target, target_tokens=target)
    result = KnapsackSlice(bucket_size=bucket_size).slice(items, budget)
    expected = reference_knapsack(items, budget, bucket_size)
    assert [id(i) for i in result] == [id(i) for i in expected]


# -- any score magnitude stays on int64 arrays, with the exact selection -----------------------


def _value(score: float) -> int:
    """The documented value rule: max(0, floor(score * 10000)), NaN as 0 and an infinite
    product as the largest double."""
    if not score > 0:
        return 0
    scaled = score * 10_000
    return int(sys.float_info.max) if math.isinf(scaled) else math.floor(scaled)


def reference_exact(scored: list[ScoredItem], target: int, bucket: int) -> list[ContextItem]:
    """The pseudocode on Python integers (exact for any magnitude)."""
    candidates = [s for s in scored if s.item.tokens > 0]
    zero = [s.item for s in scored if s.item.tokens == 0]
    capacity = target // bucket
    if not scored or target <= 0:
        return []
    if not candidates or capacity == 0:
        return zero
    weights = [-(-s.item.tokens // bucket) for s in candidates]
    values = [_value(s.score) for s in candidates]
    dp = [0] * (capacity + 1)
    keep = [[False] * (capacity + 1) for _ in candidates]
    for i, (dw, dv) in enumerate(zip(weights, values, strict=True)):
        for w in range(capacity, dw - 1, -1):
            if dp[w - dw] + dv > dp[w]:
                dp[w] = dp[w - dw] + dv
                keep[i][w] = True
    selected, remaining = [], capacity
    for i in range(len(candidates) - 1, -1, -1):
        if keep[i][remaining]:
            selected.append(candidates[i].item)
            remaining -= weights[i]
    return zero + selected


_huge_scores = st.one_of(
    st.sampled_from([0.0, 0.5, 1e12, 1.5e12, 3e15, 1e300, 1.7e308, math.inf, 2.5e13]),
    st.floats(min_value=1e11, max_value=1e40),
    st.floats(min_value=0.0, max_value=1.0),
)


@pytest.fixture
def no_object_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if the DP allocates a NumPy array of Python objects (the old slow fallback)."""
    real = np.zeros

    def zeros(*args: Any, **kwargs: Any) -> Any:
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        assert dtype is not object, "the knapsack DP fell back to Python-object arrays"
        return real(*args, **kwargs)

    monkeypatch.setattr(knapsack_module.np, "zeros", zeros)


@settings(max_examples=examples(300), deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 60), _huge_scores), max_size=12),
    target=st.integers(0, 200),
    bucket=st.integers(1, 12),
)
def test_huge_and_infinite_scores_select_exactly_what_integers_select(
    rows: list[tuple[int, float]], target: int, bucket: int
) -> None:
    items = [ScoredItem(ContextItem(content=f"i{i}", tokens=t), s) for i, (t, s) in enumerate(rows)]
    budget = ContextBudget(max_tokens=target, target_tokens=target)
    result = KnapsackSlice(bucket_size=bucket).slice(items, budget)
    assert [id(i) for i in result] == [id(i) for i in reference_exact(items, target, bucket)]


@settings(max_examples=examples(200), deadline=None)
@given(
    weights=st.lists(st.integers(1, 6), min_size=1, max_size=10),
    data=st.data(),
    capacity=st.integers(1, 20),
)
def test_the_wide_dp_and_the_compression_each_agree_with_integers(
    weights: list[int], data: st.DataObject, capacity: int
) -> None:
    values = [_value(data.draw(_huge_scores)) for _ in weights]
    expected = [[bool(x) for x in row] for row in _fill_reference(weights, values, capacity)]
    assert knapsack_module._fill_keep_table_wide(weights, values, capacity).tolist() == expected
    compressed = knapsack_module._compress_values(values)
    assert _fill_reference(weights, compressed, capacity) == _fill_reference(
        weights, values, capacity
    )


def _fill_reference(weights: list[int], values: list[int], capacity: int) -> list[list[bool]]:
    dp = [0] * (capacity + 1)
    keep = [[False] * (capacity + 1) for _ in weights]
    for i, (dw, dv) in enumerate(zip(weights, values, strict=True)):
        for w in range(capacity, dw - 1, -1):
            if dp[w - dw] + dv > dp[w]:
                dp[w] = dp[w - dw] + dv
                keep[i][w] = True
    return keep


@pytest.mark.usefixtures("no_object_arrays")
@pytest.mark.parametrize(
    "scores",
    [
        [1e12 * (1 + i / 7) for i in range(300)],  # totals past int64
        [math.inf if i % 5 == 0 else i / 300 for i in range(300)],  # inf next to [0, 1]
        [10 ** (12 + (i % 29)) * 1.37 for i in range(300)],  # 29 magnitudes: several words
    ],
    ids=["1e12", "inf", "magnitudes"],
)
def test_scores_past_int64_totals_stay_on_int64_arrays(scores: list[float]) -> None:
    items = [
        ScoredItem(ContextItem(content=f"i{i}", tokens=1 + (i * 7) % 23), s)
        for i, s in enumerate(scores)
    ]
    budget = ContextBudget(max_tokens=500, target_tokens=500)
    result = KnapsackSlice(bucket_size=1).slice(items, budget)
    assert [id(i) for i in result] == [id(i) for i in reference_exact(items, 500, 1)]


def test_inf_beside_ordinary_scores_compresses_into_int64() -> None:
    values = [_value(s) for s in (math.inf, 0.5, math.inf, 0.25, 1.0)]
    assert sum(values) > 2**63
    compressed = knapsack_module._compress_values(values)
    assert sum(compressed) < 2**63
    # [2500, 5000, 10000] share the gcd 2500 (-> 1, 2, 4); inf outweighs them all (-> 8)
    assert compressed == [8, 2, 8, 1, 4]


class TestMaxCellsCeiling:
    def test_max_cells_beyond_the_ceiling_is_refused_at_construction(self) -> None:
        with pytest.raises(
            SlicerConfigError,
            match=re.escape("KnapsackSlice: max_cells must be at most 1,000,000,000"),
        ) as info:
            KnapsackSlice(max_cells=10**15)
        assert (info.value.field, info.value.value) == ("max_cells", 10**15)

    def test_the_ceiling_itself_is_allowed_and_still_guards_the_table(self, scored) -> None:
        slicer = KnapsackSlice(bucket_size=1, max_cells=MAX_CELLS_LIMIT)
        items = scored(*[(f"i{i}", 5, 0.5) for i in range(1000)])  # x (10**6 + 1) cells
        huge = ContextBudget(max_tokens=10**6, target_tokens=10**6)
        with pytest.raises(TableTooLargeError, match="exceeds the limit of 1000000000 cells"):
            slicer.slice(items, huge)
