"""RecencyScorer and PriorityScorer: rank among the keyed items of the pass."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from scorers_testkit import T0, make

from cupel._model import ContextItem
from cupel.scorers import PriorityScorer, RecencyScorer


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def both_paths(scorer: RecencyScorer | PriorityScorer, items: list[ContextItem]) -> list[float]:
    batch = scorer.score_all(items)
    assert batch == [scorer.score(item, items) for item in items]
    return batch


class TestRecencyScorer:
    def test_item_without_timestamp_scores_zero(self) -> None:
        items = [make(timestamp=at(0)), make(), make(timestamp=at(1))]
        assert both_paths(RecencyScorer(), items)[1] == 0.0

    def test_all_null_timestamps_score_zero(self) -> None:
        assert both_paths(RecencyScorer(), [make(), make(), make()]) == [0.0, 0.0, 0.0]

    def test_only_timestamped_item_scores_one(self) -> None:
        assert both_paths(RecencyScorer(), [make(), make(timestamp=at(0)), make()]) == [
            0.0,
            1.0,
            0.0,
        ]

    def test_single_item_pass_scores_one(self) -> None:
        assert both_paths(RecencyScorer(), [make(timestamp=at(0))]) == [1.0]

    def test_all_shared_timestamp_scores_zero(self) -> None:
        assert both_paths(RecencyScorer(), [make(timestamp=at(2)) for _ in range(4)]) == [0.0] * 4

    def test_distinct_timestamps_are_evenly_spaced_newest_one(self) -> None:
        items = [make(timestamp=at(h)) for h in (3, 0, 2, 1, 4)]
        assert both_paths(RecencyScorer(), items) == [0.75, 0.0, 0.5, 0.25, 1.0]

    def test_tied_timestamps_share_the_count_of_strictly_older_items(self) -> None:
        items = [make(timestamp=at(h)) for h in (0, 1, 1, 2)]
        assert both_paths(RecencyScorer(), items) == [0.0, 1 / 3, 1 / 3, 1.0]

    def test_denominator_counts_only_timestamped_items(self) -> None:
        items = [make(timestamp=at(0)), make(), make(), make(timestamp=at(1))]
        assert both_paths(RecencyScorer(), items) == [0.0, 0.0, 0.0, 1.0]

    def test_timestamps_compare_by_instant_not_by_offset(self) -> None:
        plus_two = timezone(timedelta(hours=2))
        same_instant = T0.astimezone(plus_two)
        items = [make(timestamp=T0), make(timestamp=same_instant), make(timestamp=at(-1))]
        assert both_paths(RecencyScorer(), items) == [0.5, 0.5, 0.0]

    def test_empty_pass_scores_nothing(self) -> None:
        assert RecencyScorer().score_all([]) == []

    def test_item_outside_the_pass_is_ranked_against_it(self) -> None:
        items = [make(timestamp=at(0)), make(timestamp=at(2))]
        assert RecencyScorer().score(make(timestamp=at(1)), items) == 1.0

    def test_repr(self) -> None:
        assert repr(RecencyScorer()) == "RecencyScorer()"


class TestPriorityScorer:
    def test_item_without_priority_scores_zero(self) -> None:
        items = [make(priority=1), make(), make(priority=2)]
        assert both_paths(PriorityScorer(), items)[1] == 0.0

    def test_all_null_priorities_score_zero(self) -> None:
        assert both_paths(PriorityScorer(), [make(), make()]) == [0.0, 0.0]

    def test_only_prioritized_item_scores_one(self) -> None:
        assert both_paths(PriorityScorer(), [make(priority=-5), make()]) == [1.0, 0.0]

    def test_all_shared_priority_scores_zero(self) -> None:
        assert both_paths(PriorityScorer(), [make(priority=7) for _ in range(3)]) == [0.0] * 3

    def test_higher_priority_scores_higher(self) -> None:
        items = [make(priority=5), make(priority=10), make(priority=-1)]
        assert both_paths(PriorityScorer(), items) == [0.5, 1.0, 0.0]

    def test_tied_priorities_score_identically(self) -> None:
        items = [make(priority=p) for p in (1, 5, 5, 9, None)]
        assert both_paths(PriorityScorer(), items) == [0.0, 1 / 3, 1 / 3, 1.0, 0.0]

    def test_denominator_counts_only_prioritized_items(self) -> None:
        items = [make(priority=1), make(), make(priority=3), make(priority=2), make()]
        assert both_paths(PriorityScorer(), items) == [0.0, 0.0, 1.0, 0.5, 0.0]

    def test_repr(self) -> None:
        assert repr(PriorityScorer()) == "PriorityScorer()"


@pytest.mark.parametrize("scorer", [RecencyScorer(), PriorityScorer()])
def test_scores_stay_in_unit_interval(scorer: RecencyScorer | PriorityScorer) -> None:
    items = [make(priority=p, timestamp=at(p)) for p in (3, 1, 4, 1, 5, 9, 2, 6)]
    assert all(0.0 <= s <= 1.0 for s in both_paths(scorer, items))
