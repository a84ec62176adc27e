"""The built-in batches (KindScorer, TagScorer, rank_scores) agree bit for bit with the
per-item ``score``, the spec's definition: on small hypothesis passes and on large ones."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import T0, ZONES, assert_same_floats, instants, leaf_scorers, passes, scorers

from cupel import ContextItem
from cupel.scorers import CompositeScorer, KindScorer, PriorityScorer, RecencyScorer, TagScorer
from cupel.scorers.recency import _rank_score, rank_scores


def per_item(scorer: Any, items: list[ContextItem]) -> list[float]:
    return [scorer.score(item, items) for item in items]


def per_key(keys: list[Any]) -> list[float]:
    """The spec's per-item rank algorithm for every key."""
    return [_rank_score(key, keys) for key in keys]


def fresh(text: str) -> str:
    """An equal string that is a new object (as parsed per item from JSON)."""
    return "".join(list(text))


# -- every leaf and composite, every array route -------------------------------------------------


@settings(max_examples=examples(400), deadline=None)
@given(scorer=leaf_scorers, items=passes())
def test_leaf_batches_equal_per_item_scores(scorer: Any, items: list[ContextItem]) -> None:
    assert_same_floats(scorer.score_all(items), per_item(scorer, items))


@settings(max_examples=examples(200), deadline=None)
@given(scorer=scorers, items=passes(max_size=8))
def test_composites_equal_per_item_scores(scorer: Any, items: list[ContextItem]) -> None:
    assert_same_floats(scorer.score_all(items), per_item(scorer, items))


# -- rank_scores ----------------------------------------------------------------------------------

int_keys = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, 10**30, -(10**30)]),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(int_keys, max_size=30))
def test_rank_scores_of_ints_equal_the_per_item_algorithm(keys: list[int | None]) -> None:
    assert_same_floats(rank_scores(keys).tolist(), per_key(keys))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.none(), instants), max_size=30))
def test_rank_scores_of_instants_in_any_zone_equal_the_per_item_algorithm(
    keys: list[datetime | None],
) -> None:
    assert_same_floats(rank_scores(keys).tolist(), per_key(keys))


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.integers(0, 10**6), unique=True, max_size=25).map(sorted),
    st.lists(st.integers(0, 25), max_size=5),
    st.sampled_from(ZONES),
)
def test_rank_scores_of_increasing_instants_with_gaps_equal_the_per_item_algorithm(
    offsets: list[int], gaps: list[int], zone: timezone
) -> None:
    keys: list[datetime | None] = [
        (T0 + timedelta(microseconds=offset)).astimezone(zone) for offset in offsets
    ]
    for position in gaps:
        keys.insert(min(position, len(keys)), None)
    assert_same_floats(rank_scores(keys).tolist(), per_key(keys))


def _large_key_lists() -> dict[str, list[Any]]:
    rng = random.Random(15)
    n = 300
    increasing = [T0 + timedelta(seconds=30 * i) for i in range(n)]
    shuffled = list(increasing)
    rng.shuffle(shuffled)
    zoned = [t.astimezone(rng.choice(ZONES)) for t in increasing]
    tied = [T0 + timedelta(seconds=rng.randint(0, 40)) for _ in range(n)]
    return {
        "increasing instants": increasing,
        "increasing instants in several zones": zoned,
        "increasing with None gaps": [None if rng.random() < 0.2 else t for t in increasing],
        "None first, then increasing": [None, *increasing[1:]],
        "increasing then one tie": [*increasing[:-1], increasing[-2]],
        "shuffled instants": shuffled,
        "tied instants and None": [None if rng.random() < 0.1 else t for t in tied],
        "equal instants, other zone objects": [t.astimezone(ZONES[1]) for t in tied],
        "priorities, 90% None": [
            rng.randint(1, 10) if rng.random() < 0.1 else None for _ in range(n)
        ],
        "priorities everywhere": [rng.randint(-5, 5) for _ in range(n)],
        "increasing ints": list(range(-7, n - 7)),
        "ints beyond int64": [rng.choice([None, 1, 2**64, -(2**70), 5]) for _ in range(n)],
        "all None": [None] * n,
        "one keyed": [None] * 150 + [3] + [None] * 149,
        "one instant": [None] * 299 + [T0],
    }


@pytest.mark.parametrize("name", sorted(_large_key_lists()))
def test_rank_scores_of_large_passes_equal_the_per_item_algorithm(name: str) -> None:
    keys = _large_key_lists()[name]
    assert_same_floats(rank_scores(keys).tolist(), per_key(keys))


def test_recency_and_priority_of_a_large_pass_equal_per_item_scores() -> None:
    rng = random.Random(3)
    items = [
        ContextItem(
            content=str(i),
            tokens=1,
            timestamp=None if i % 7 == 0 else T0 + timedelta(seconds=rng.randint(0, 500)),
            priority=rng.randint(0, 9) if i % 4 == 0 else None,
        )
        for i in range(400)
    ]
    for scorer in (RecencyScorer(), PriorityScorer()):
        assert_same_floats(scorer.score_all(items), per_item(scorer, items))


def test_rank_scores_raise_for_keys_that_do_not_compare() -> None:
    naive, aware = datetime(2025, 1, 1), T0
    for keys in ([aware, naive] * 40, [None, aware, naive], [aware, None, naive] * 40):
        with pytest.raises(TypeError):
            rank_scores(keys)


# -- KindScorer -----------------------------------------------------------------------------------

SPELLINGS = ["Message", "message", "MESSAGE", "Document", "document", "ToolOutput", "Memory"]
CUSTOM = [f"Custom{i}" for i in range(20)] + [f"custom{i}" for i in range(5)]


@pytest.mark.parametrize(
    "weights",
    [None, {"message": 2.0, "Custom3": 0.5, "DOCUMENT": -0.0}, {"custom1": 1e308, "Memory": 0.0}],
)
def test_kind_batch_of_a_large_pass_with_many_kind_objects_equals_per_item(
    weights: dict[str, float] | None,
) -> None:
    rng = random.Random(5)
    for spellings in (SPELLINGS, SPELLINGS + CUSTOM):
        items = [
            ContextItem(content=str(i), tokens=1, kind=rng.choice(spellings)) for i in range(500)
        ]
        scorer = KindScorer(weights)
        assert_same_floats(scorer.score_all(items), per_item(scorer, items))


# -- TagScorer ------------------------------------------------------------------------------------

VOCABULARY = ["urgent", "URGENT", "Urgent", "billing", "ops", "é", "", "misc", "x", "y"]
TAG_WEIGHTS: list[dict[str, float]] = [
    {"urgent": 3.0, "billing": 1.0},
    {"urgent": 0.7, "ops": -0.0, "é": 0.2, "": 0.4},
    {"billing": 8e307, "misc": 8e307},  # sums overflow to inf, and clamp to 1.0
    {"urgent": 0.0},  # all weights zero
    {"nothing here": 2.0},
]


def _tag_items(rng: random.Random, n: int, make_tag: Any) -> list[ContextItem]:
    return [
        ContextItem(
            content=str(i),
            tokens=1,
            tags=tuple(make_tag(rng.choice(VOCABULARY)) for _ in range(rng.randint(0, 4))),
        )
        for i in range(n)
    ]


def _shared(tag: str) -> str:
    return tag


@pytest.mark.parametrize("weights", TAG_WEIGHTS)
@pytest.mark.parametrize("case_insensitive", [False, True])
def test_tag_batch_of_a_large_pass_equals_per_item(
    weights: dict[str, float], case_insensitive: bool
) -> None:
    rng = random.Random(7)
    shared = _tag_items(rng, 600, _shared)  # shared tag objects
    distinct = _tag_items(rng, 600, fresh)  # a new object per tag
    mixed = shared[:40] + distinct
    many = [  # many tags an item
        ContextItem(content=str(i), tokens=1, tags=tuple(rng.choices(VOCABULARY, k=9)))
        for i in range(200)
    ]
    scorer = TagScorer(weights, case_insensitive=case_insensitive)
    for items in (shared, distinct, mixed, many, shared[:3], []):
        assert_same_floats(scorer.score_all(items), per_item(scorer, items))


def test_tag_batch_counts_every_occurrence_of_a_duplicated_tag() -> None:
    items = [ContextItem(content=str(i), tokens=1, tags=("a", "b", "a")) for i in range(300)]
    items.append(ContextItem(content="none", tokens=1))
    scorer = TagScorer({"a": 1.0, "b": 1.0, "c": 2.0})
    batch = scorer.score_all(items)
    assert batch[:300] == [0.75] * 300 and batch[300] == 0.0
    assert_same_floats(batch, per_item(scorer, items))


def test_composite_of_the_w3_scorers_on_a_large_pass_equals_per_item() -> None:
    rng = random.Random(11)
    items = [
        ContextItem(
            content=str(i),
            tokens=1,
            kind=rng.choice(SPELLINGS),
            timestamp=T0 + timedelta(seconds=30 * i),
            tags=tuple(rng.sample(VOCABULARY, rng.randint(0, 3))),
        )
        for i in range(400)
    ]
    tag = TagScorer({"urgent": 1.0, "ops": 0.8, "é": 0.6})
    scorer = CompositeScorer([(RecencyScorer(), 1.0), (KindScorer(), 1.0), (tag, 1.0)])
    assert_same_floats(scorer.score_all(items), per_item(scorer, items))
