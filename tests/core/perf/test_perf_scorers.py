"""The built-in scorers' array fast paths agree exactly with the per-item ``score``."""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import T0, assert_same_floats, leaf_scorers, passes, scorers

from cupel import ContextItem, ContextKind
from cupel.scorers import (
    BaseScorer,
    CompositeScorer,
    FrequencyScorer,
    KindScorer,
    PriorityScorer,
    RecencyScorer,
    ScaledScorer,
    TagScorer,
)
from cupel.scorers._base import ArrayScorer, batch_scores
from cupel.scorers.recency import rank_scores


def per_item(scorer: Any, items: list[ContextItem]) -> list[float]:
    return [scorer.score(item, items) for item in items]


@settings(max_examples=examples(400), deadline=None)
@given(scorer=leaf_scorers, items=passes())
def test_leaf_batches_equal_per_item_scores_bit_for_bit(
    scorer: Any, items: list[ContextItem]
) -> None:
    assert_same_floats(scorer.score_all(items), per_item(scorer, items))


@settings(max_examples=examples(300), deadline=None)
@given(scorer=scorers, items=passes(max_size=8))
def test_composite_and_scaled_batches_equal_per_item_scores_bit_for_bit(
    scorer: Any, items: list[ContextItem]
) -> None:
    assert_same_floats(scorer.score_all(items), per_item(scorer, items))


@settings(max_examples=examples(200), deadline=None)
@given(scorer=scorers, items=passes(max_size=8))
def test_pipeline_batch_holds_the_score_all_values(scorer: Any, items: list[ContextItem]) -> None:
    batch = batch_scores(scorer, items)
    assert isinstance(batch, np.ndarray) and batch.dtype == np.float64
    assert_same_floats(batch.tolist(), scorer.score_all(items))


def test_array_scorers_hand_the_pipeline_a_float64_array() -> None:
    items = [
        ContextItem(content=str(i), tokens=1, priority=i % 3, timestamp=T0 + timedelta(hours=i))
        for i in range(5)
    ]
    scorer = CompositeScorer(
        [(RecencyScorer(), 1.0), (ScaledScorer(PriorityScorer()), 1.0), (FrequencyScorer(), 1.0)]
    )
    assert isinstance(scorer, ArrayScorer)
    batch = batch_scores(scorer, items)
    assert isinstance(batch, np.ndarray) and batch.dtype == np.float64
    assert_same_floats(batch.tolist(), per_item(scorer, items))


def test_rank_ties_equal_instants_written_in_different_zones() -> None:
    zone = timezone(timedelta(hours=-3))
    same_instant = [T0, T0.astimezone(zone)]
    one_microsecond_later = T0 + timedelta(microseconds=1)
    keys = [*same_instant, one_microsecond_later, None]
    assert rank_scores(keys).tolist() == [0.0, 0.0, 1.0, 0.0]


def test_recency_orders_instants_one_microsecond_apart_far_from_the_epoch() -> None:
    far = T0.replace(year=9999)
    items = [
        ContextItem(content=str(i), tokens=1, timestamp=far + timedelta(microseconds=i))
        for i in (2, 0, 1)
    ]
    assert RecencyScorer().score_all(items) == [1.0, 0.0, 0.5]


@given(st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=30))
def test_rank_scores_equal_the_per_item_rank_definition(keys: list[int | None]) -> None:
    items = [ContextItem(content=str(i), tokens=1, priority=k) for i, k in enumerate(keys)]
    assert_same_floats(rank_scores(keys).tolist(), per_item(PriorityScorer(), items))


@given(
    st.lists(st.integers(-50, 50), unique=True, max_size=20).map(sorted),
    st.lists(st.integers(0, 20), max_size=4),
)
def test_rank_scores_of_increasing_keys_with_gaps_equal_the_per_item_definition(
    increasing: list[int], gaps: list[int]
) -> None:
    keys: list[int | None] = list(increasing)
    for position in gaps:
        keys.insert(min(position, len(keys)), None)
    items = [ContextItem(content=str(i), tokens=1, priority=k) for i, k in enumerate(keys)]
    assert_same_floats(rank_scores(keys).tolist(), per_item(PriorityScorer(), items))


def test_frequency_counts_an_object_listed_twice_as_itself_not_a_peer() -> None:
    shared = ContextItem(content="s", tokens=1, tags=("db",))
    other = ContextItem(content="o", tokens=1, tags=("DB", "x"))
    items = [shared, other, shared, ContextItem(content="t", tokens=1)]
    assert FrequencyScorer().score_all(items) == per_item(FrequencyScorer(), items)
    assert FrequencyScorer().score_all(items) == [1 / 3, 2 / 3, 1 / 3, 0.0]


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([f"t{i}" for i in range(12)]), min_size=9, max_size=12),
        min_size=2,
        max_size=8,
    )
)
def test_frequency_with_many_tags_per_item_agrees(tags: list[list[str]]) -> None:
    items = [ContextItem(content=str(i), tokens=1, tags=tuple(t)) for i, t in enumerate(tags)]
    assert_same_floats(FrequencyScorer().score_all(items), per_item(FrequencyScorer(), items))


class _IntScores(BaseScorer):
    """A custom scorer returning ints (not floats)."""

    def score(self, item: ContextItem, all_items: Any) -> float:
        return item.tokens  # an int


def test_integer_scores_of_a_custom_child_become_floats_equal_to_the_definition() -> None:
    items = [ContextItem(content=str(i), tokens=i) for i in (3, 1, 2)]
    composite = CompositeScorer([(_IntScores(), 1.0), (RecencyScorer(), 1.0)])
    scaled = ScaledScorer(_IntScores())
    assert_same_floats(batch_scores(composite, items).tolist(), per_item(composite, items))
    assert_same_floats(batch_scores(scaled, items).tolist(), per_item(scaled, items))
    assert batch_scores(scaled, items).tolist() == [1.0, 0.0, 0.5]
    assert batch_scores(_IntScores(), items).tolist() == [3.0, 1.0, 2.0]


def test_a_subclass_overriding_score_all_is_called_by_the_pipeline_batch() -> None:
    class Doubled(RecencyScorer):
        def score_all(self, items: Any) -> list[float]:
            return [2 * s for s in super().score_all(items)]

    items = [
        ContextItem(content=str(d), tokens=1, timestamp=T0 + timedelta(days=d)) for d in (0, 1)
    ]
    assert batch_scores(Doubled(), items).tolist() == [0.0, 2.0]


def test_kind_scorer_with_many_distinct_and_equal_but_distinct_kind_objects() -> None:
    def fresh_kind(text: str) -> ContextKind:  # equal to the interned kind, another object
        kind = str.__new__(ContextKind, text)
        kind.key = ContextKind(text).key
        return kind

    kinds: list[Any] = [f"Kind{i}" for i in range(40)] + ["Document", "document", "MEMORY"]
    items = [ContextItem(content=str(i), tokens=1, kind=kind) for i, kind in enumerate(kinds)]
    items += [item.model_copy(update={"kind": fresh_kind(str(item.kind))}) for item in items[-3:]]
    assert len({id(item.kind) for item in items}) == len(items)  # one kind object each
    for scorer in (
        KindScorer(),
        KindScorer({"document": 2.0, "Kind3": 0.5, "Kind39": 1.5, "Memory": 0.25}),
    ):
        assert_same_floats(scorer.score_all(items), [scorer.score(i, items) for i in items])
        assert_same_floats(scorer.score_all(items[:1]), [scorer.score(items[0], items[:1])])
        assert scorer.score_all([]) == []


@settings(max_examples=examples(200), deadline=None)
@given(
    tags=st.lists(
        st.lists(st.sampled_from(["a", "A", "b", "db", "ops", "x", ""]), max_size=9), max_size=12
    ),
    insensitive=st.booleans(),
)
def test_tag_scorer_with_many_tags_per_item_agrees(
    tags: list[list[str]], insensitive: bool
) -> None:
    items = [ContextItem(content=str(i), tokens=1, tags=tuple(t)) for i, t in enumerate(tags)]
    items += items[:3]
    scorer = TagScorer(
        {"a": 8e307, "db": 8e307, "ops": 0.25, "": 0.5}, case_insensitive=insensitive
    )
    assert_same_floats(scorer.score_all(items), [scorer.score(i, items) for i in items])
