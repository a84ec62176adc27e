"""GreedySlice: value-density greedy fill (spec: Slicers > GreedySlice)."""

from __future__ import annotations

from cupel.slicers import GreedySlice


class TestEdgeCases:
    """One test per row of the spec's GreedySlice edge-case table."""

    def test_empty_input_selects_nothing(self, budget):
        assert GreedySlice().slice([], budget(100)) == []

    def test_zero_target_selects_nothing_not_even_zero_token_items(self, scored, budget):
        items = scored(("free", 0, 0.5), ("a", 10, 0.9))
        assert GreedySlice().slice(items, budget(0, 100)) == []

    def test_all_zero_token_items_are_all_selected(self, scored, budget, names):
        items = scored(("a", 0, 0.1), ("b", 0, 0.9), ("c", 0, 0.5))
        assert names(GreedySlice().slice(items, budget(1))) == ["a", "b", "c"]

    def test_single_item_that_fits_is_selected(self, scored, budget, names):
        assert names(GreedySlice().slice(scored(("a", 10, 0.5)), budget(10))) == ["a"]

    def test_single_item_over_budget_leaves_only_zero_token_items(self, scored, budget, names):
        assert GreedySlice().slice(scored(("a", 11, 0.5)), budget(10)) == []
        items = scored(("a", 11, 0.5), ("free", 0, 0.1))
        assert names(GreedySlice().slice(items, budget(10))) == ["free"]

    def test_items_each_over_budget_leave_only_zero_token_items(self, scored, budget, names):
        items = scored(("a", 50, 0.9), ("free", 0, 0.0), ("b", 60, 0.8))
        assert names(GreedySlice().slice(items, budget(40))) == ["free"]

    def test_everything_fits_so_everything_is_selected(self, scored, budget, names):
        items = scored(("a", 10, 0.9), ("b", 20, 0.8), ("c", 30, 0.1))
        assert sorted(names(GreedySlice().slice(items, budget(60)))) == ["a", "b", "c"]


def test_prefers_density_over_raw_score(scored, budget, names):
    # densities: big 0.9/90 = 0.01, small-1 0.5/10 = 0.05, small-2 0.4/10 = 0.04
    items = scored(("big", 90, 0.9), ("small-1", 10, 0.5), ("small-2", 10, 0.4))
    assert names(GreedySlice().slice(items, budget(90))) == ["small-1", "small-2"]


def test_output_is_in_density_order(scored, budget, names):
    items = scored(("low", 100, 0.9), ("high", 10, 0.8), ("mid", 20, 0.7))
    assert names(GreedySlice().slice(items, budget(1000))) == ["high", "mid", "low"]


def test_equal_densities_prefer_lower_input_index(scored, budget, names):
    # Both have density 0.05; only one fits.
    items = scored(("first", 10, 0.5), ("second", 20, 1.0))
    assert names(GreedySlice().slice(items, budget(25))) == ["first"]
    items = scored(("first", 20, 1.0), ("second", 10, 0.5))
    assert names(GreedySlice().slice(items, budget(25))) == ["first"]


def test_zero_token_items_come_first_in_input_order_whatever_their_score(scored, budget, names):
    items = scored(("dense", 1, 1.0), ("z-low", 0, 0.0), ("z-high", 0, 1.0), ("z-neg", 0, -5.0))
    result = names(GreedySlice().slice(items, budget(10)))
    assert result == ["z-low", "z-high", "z-neg", "dense"]


def test_skipped_item_is_not_revisited_but_later_smaller_items_still_fill(scored, budget, names):
    # density order: a (0.9/60), b (0.7/50 = 0.014), c (0.1/10 = 0.01); b no longer fits.
    items = scored(("a", 60, 0.9), ("b", 50, 0.7), ("c", 10, 0.1))
    assert names(GreedySlice().slice(items, budget(100))) == ["a", "c"]


def test_negative_token_items_are_never_selected_and_consume_nothing(scored, budget, names):
    items = scored(("neg", -50, 0.9), ("a", 10, 0.5), ("b", 10, 0.4))
    # A negative item admitted by `tokens <= remaining` would raise the remaining budget.
    assert names(GreedySlice().slice(items, budget(10))) == ["a"]


def test_returns_the_input_objects_themselves(scored, budget):
    items = scored(("a", 10, 0.5), ("b", 0, 0.1))
    result = GreedySlice().slice(items, budget(10))
    assert {id(i) for i in result} == {id(s.item) for s in items}


def test_repr_and_not_a_count_quota():
    assert repr(GreedySlice()) == "GreedySlice()"
    assert GreedySlice().is_count_quota is False
