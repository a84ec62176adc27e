"""ScaledScorer: min-max normalization of an inner scorer over the pass."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from scorers_testkit import CountingScorer, assert_same_scores, make, per_item

from cupel._errors import ScorerConfigError
from cupel._model import ContextItem
from cupel.scorers import BaseScorer, KindScorer, PriorityScorer, ReflexiveScorer, ScaledScorer


class ByContent(BaseScorer):
    """Scores items by a content → value table (custom, no batch method)."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self.table[item.content]


def both_paths(scorer: ScaledScorer, items: list[ContextItem]) -> list[float]:
    batch = scorer.score_all(items)
    assert_same_scores(batch, per_item(scorer, items))
    return batch


class TestScoring:
    def test_empty_all_items_gives_one_half(self) -> None:
        assert ScaledScorer(ReflexiveScorer()).score(make(future_relevance_hint=0.9), []) == 0.5

    def test_single_item_gives_one_half(self) -> None:
        assert both_paths(ScaledScorer(ReflexiveScorer()), [make(future_relevance_hint=0.9)]) == [
            0.5
        ]

    def test_equal_inner_scores_give_exactly_one_half(self) -> None:
        items = [make(future_relevance_hint=0.3) for _ in range(4)]
        assert both_paths(ScaledScorer(ReflexiveScorer()), items) == [0.5] * 4

    def test_two_distinct_scores_map_to_zero_and_one(self) -> None:
        items = [make(future_relevance_hint=0.6), make(future_relevance_hint=0.2)]
        assert both_paths(ScaledScorer(ReflexiveScorer()), items) == [1.0, 0.0]

    def test_intermediate_scores_are_interpolated(self) -> None:
        items = [make(future_relevance_hint=h) for h in (0.2, 0.3, 0.6)]
        assert both_paths(ScaledScorer(ReflexiveScorer()), items) == pytest.approx([0.0, 0.25, 1.0])

    def test_inner_scores_outside_unit_interval_are_scaled_into_it(self) -> None:
        scorer = ScaledScorer(KindScorer({"a": 5.0, "b": 10.0, "c": 20.0}))
        items = [make(kind=k) for k in ("b", "a", "c")]
        assert both_paths(scorer, items) == [1 / 3, 0.0, 1.0]

    def test_item_is_found_by_identity_not_equality(self) -> None:
        scorer = ScaledScorer(ByContent({"low": 0.0, "high": 1.0}))
        low = make(content="low")
        items = [low, make(content="high")]
        copy = ContextItem(content="low", tokens=1)
        assert copy == low
        assert scorer.score(low, items) == 0.0
        assert math.isnan(scorer.score(copy, items))  # an equal copy is not in all_items

    def test_item_outside_all_items_scores_nan(self) -> None:
        items = [make(priority=1), make(priority=2)]
        assert math.isnan(ScaledScorer(PriorityScorer()).score(make(priority=1), items))

    def test_same_object_twice_is_consistent(self) -> None:
        shared = make(priority=1)
        items = [shared, make(priority=5), shared, make(priority=3)]
        assert both_paths(ScaledScorer(PriorityScorer()), items) == [0.0, 1.0, 0.0, 2 / 3]

    def test_nan_inner_scores_are_ignored_for_bounds_and_scale_to_nan(self) -> None:
        table = {"a": 0.0, "b": math.nan, "c": 2.0}
        items = [make(content=c) for c in "abc"]
        result = both_paths(ScaledScorer(ByContent(table)), items)
        assert result[0] == 0.0 and math.isnan(result[1]) and result[2] == 1.0

    def test_all_nan_inner_scores_give_nan(self) -> None:
        items = [make(content=c) for c in "ab"]
        result = both_paths(ScaledScorer(ByContent({"a": math.nan, "b": math.nan})), items)
        assert all(math.isnan(s) for s in result)

    def test_infinite_inner_score_follows_ieee_arithmetic(self) -> None:
        items = [make(content=c) for c in "abc"]
        result = both_paths(ScaledScorer(ByContent({"a": 0.0, "b": 1.0, "c": math.inf})), items)
        assert result[0] == 0.0 and result[1] == 0.0 and math.isnan(result[2])

    def test_all_infinite_inner_scores_are_degenerate(self) -> None:
        items = [make(content=c) for c in "ab"]
        result = both_paths(ScaledScorer(ByContent({"a": math.inf, "b": math.inf})), items)
        assert result == [0.5, 0.5]

    def test_nested_scaled_scorers(self) -> None:
        items = [make(priority=p) for p in (1, 2, 4)]
        assert both_paths(ScaledScorer(ScaledScorer(PriorityScorer())), items) == [0.0, 0.5, 1.0]

    def test_batch_scores_inner_once_per_pass(self) -> None:
        counting = CountingScorer()
        items = [make(priority=p) for p in range(30)]
        ScaledScorer(counting).score_all(items)
        assert counting.calls == 30

    def test_per_item_score_rescores_the_whole_pass(self) -> None:
        counting = CountingScorer()
        items = [make(priority=p) for p in range(5)]
        ScaledScorer(counting).score(items[0], items)
        assert counting.calls == 5


class TestConstruction:
    def test_none_inner_is_rejected(self) -> None:
        with pytest.raises(ScorerConfigError, match=r"^ScaledScorer: inner must not be None$"):
            ScaledScorer(None)  # type: ignore[arg-type]

    @pytest.mark.parametrize("inner", [1.0, "priority", object()])
    def test_inner_without_score_method_is_rejected(self, inner: Any) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^ScaledScorer: inner must have a callable score\(item, all_items\) method, got",
        ):
            ScaledScorer(inner)

    def test_inner_and_children_expose_the_wrapped_scorer(self) -> None:
        inner = PriorityScorer()
        scaled = ScaledScorer(inner)
        assert scaled.inner is inner
        assert scaled.children() == (inner,)


def test_repr_shows_the_inner_scorer() -> None:
    assert (
        repr(ScaledScorer(ScaledScorer(PriorityScorer())))
        == "ScaledScorer(ScaledScorer(PriorityScorer()))"
    )
