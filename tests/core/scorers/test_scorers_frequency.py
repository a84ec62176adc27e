"""FrequencyScorer: share of peers sharing a tag; self skipped by identity."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from scorers_testkit import make

import cupel.scorers._tag_counts as tag_counts
import cupel.scorers.frequency as frequency
from cupel._model import ContextItem
from cupel.scorers import FrequencyScorer
from cupel.scorers._tag_counts import Ints, by_postings, by_shared_subsets


def both_paths(items: list[ContextItem]) -> list[float]:
    scorer = FrequencyScorer()
    batch = scorer.score_all(items)
    assert batch == [scorer.score(item, items) for item in items]
    return batch


def test_item_without_tags_scores_zero() -> None:
    items = [make(), make(tags=("a",)), make(tags=("a",))]
    assert both_paths(items) == [0.0, 0.5, 0.5]


def test_single_item_pass_scores_zero() -> None:
    assert both_paths([make(tags=("a",))]) == [0.0]


def test_empty_pass_scores_nothing() -> None:
    assert FrequencyScorer().score_all([]) == []


def test_no_peer_sharing_a_tag_scores_zero() -> None:
    assert both_paths([make(tags=("a",)), make(tags=("b",))]) == [0.0, 0.0]


def test_all_peers_sharing_a_tag_scores_one() -> None:
    items = [make(tags=("a", "b")), make(tags=("a",)), make(tags=("b",))]
    assert both_paths(items)[0] == 1.0


def test_tagless_peer_does_not_count_but_stays_in_the_denominator() -> None:
    items = [make(tags=("a",)), make(tags=("a",)), make(), make()]
    assert both_paths(items) == [1 / 3, 1 / 3, 0.0, 0.0]


def test_peer_sharing_several_tags_counts_once() -> None:
    items = [make(tags=("a", "b")), make(tags=("a", "b", "c")), make(tags=("z",))]
    assert both_paths(items) == [0.5, 0.5, 0.0]


def test_tags_match_case_insensitively() -> None:
    items = [make(tags=("Important",)), make(tags=("important",)), make(tags=("IMPORTANT",))]
    assert both_paths(items) == [1.0, 1.0, 1.0]


def test_case_folding_is_ascii_only() -> None:
    assert both_paths([make(tags=("é",)), make(tags=("É",))]) == [0.0, 0.0]


def test_equal_copy_counts_as_a_peer() -> None:
    original = make(content="same", tags=("a",))
    copy = ContextItem(content="same", tokens=1, tags=("a",))
    assert original == copy and original is not copy
    assert both_paths([original, copy]) == [1.0, 1.0]


def test_same_object_listed_twice_skips_every_position_holding_it() -> None:
    shared = make(tags=("a",))
    peer = make(tags=("a",))
    items = [shared, peer, shared]
    # shared: peer matches, both of its own positions are skipped, denominator 3 - 1.
    # peer: both positions of shared match.
    assert both_paths(items) == [0.5, 1.0, 0.5]


def test_item_outside_the_pass_counts_every_sharing_item() -> None:
    items = [make(tags=("a",)), make(tags=("A",)), make(tags=("b",))]
    assert FrequencyScorer().score(make(tags=("a",)), items) == 1.0


def test_empty_string_tags_match_each_other() -> None:
    assert both_paths([make(tags=("",)), make(tags=("",))]) == [1.0, 1.0]


def test_repr() -> None:
    assert repr(FrequencyScorer()) == "FrequencyScorer()"


# -- the literal definition as the oracle, and both exact counting methods -----------------


def oracle(items: list[ContextItem]) -> list[float]:
    """The spec's per-item definition, literally: for each item, the peers (every position
    not holding that very object) with a tag equal to one of its own under ASCII case
    folding, over ``len(items) - 1``."""

    def fold(tag: str) -> str:
        return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in tag)

    scores = []
    for item in items:
        own = {fold(tag) for tag in item.tags}
        if not own or len(items) <= 1:
            scores.append(0.0)
            continue
        peers = sum(
            1
            for other in items
            if other is not item and any(fold(tag) in own for tag in other.tags)
        )
        scores.append(peers / (len(items) - 1))
    return scores


@contextmanager
def routes(dense: bool, chunk: int) -> Iterator[pytest.MonkeyPatch]:
    """Shared-subset counting forced (``dense``) or posting-list merging, with posting-list
    pairs sorted ``chunk`` at a time."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tag_counts, "_DENSE_RATIO", 0 if dense else 2**62)
        patch.setattr(tag_counts, "_CHUNK_PAIRS", chunk)
        yield patch


ROUTES = [(False, 2**21), (False, 1), (False, 7), (True, 2**21)]
ROUTE_IDS = ["postings", "postings-one-pair-chunks", "postings-small-chunks", "shared-subsets"]

TAG_LISTS = st.lists(
    st.lists(st.sampled_from(["a", "A", "b", "DB", "db", "é", "É", "x1", "X1", ""]), max_size=6),
    max_size=14,
)


@pytest.mark.parametrize(("dense", "chunk"), ROUTES, ids=ROUTE_IDS)
@settings(max_examples=examples(200), deadline=None)
@given(TAG_LISTS, st.lists(st.integers(0, 13), max_size=3))
def test_batch_scores_equal_the_literal_definition(
    dense: bool, chunk: int, tags: list[list[str]], repeats: list[int]
) -> None:
    """Duplicates, the same object listed twice, case folding, tagless items, one item."""
    items = [make(tags=tuple(t)) for t in tags]
    for index in repeats:  # the very same object at several positions
        if items:
            items.append(items[index % len(items)])
    with routes(dense, chunk):
        assert FrequencyScorer().score_all(items) == oracle(items)


@pytest.mark.parametrize(("dense", "chunk"), ROUTES, ids=ROUTE_IDS)
@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([f"t{i}" for i in range(16)]), min_size=1, max_size=14),
        min_size=2,
        max_size=12,
    )
)
def test_many_tags_per_item_equal_the_literal_definition(
    dense: bool, chunk: int, tags: list[list[str]]
) -> None:
    """Sets of more than ``_COMBINATION_TAGS`` tags always merge posting lists."""
    items = [make(tags=tuple(t)) for t in tags]
    with routes(dense, chunk):
        assert FrequencyScorer().score_all(items) == oracle(items)


def naive_touching(sets: list[frozenset[int]], mult: list[int]) -> list[int]:
    return [sum(m for other, m in zip(sets, mult, strict=True) if s & other) for s in sets]


def touching_inputs(pairs: list[tuple[frozenset[int], int]]) -> tuple[Ints, Ints, Ints, int]:
    rows = [sorted(s) for s, _ in pairs]
    starts = np.cumsum([0, *map(len, rows)]).astype(np.int64)
    tags = np.array([t for row in rows for t in row], dtype=np.int64)
    mult = np.array([m for _, m in pairs], dtype=np.int64)
    return starts, tags, mult, int(tags.max()) + 1


TAG_SETS = st.lists(
    st.tuples(st.frozensets(st.integers(0, 13), min_size=1, max_size=9), st.integers(1, 4)),
    min_size=1,
    max_size=25,
    unique_by=lambda pair: pair[0],
)


@settings(max_examples=examples(300), deadline=None)
@given(TAG_SETS, st.integers(1, 40))
def test_both_methods_count_exactly_what_the_definition_counts(
    pairs: list[tuple[frozenset[int], int]], chunk: int
) -> None:
    """Posting lists over one set per position (a set held ``m`` times listed ``m``
    times), in chunks of any size; shared subsets over the distinct sets, weighted."""
    starts, tags, mult, vocabulary = touching_inputs(pairs)
    expected = naive_touching([s for s, _ in pairs], mult.tolist())
    assert by_shared_subsets(starts, tags, mult, vocabulary).tolist() == expected
    unit = [(s, 1) for s, m in pairs for _ in range(m)]
    unit_starts, unit_tags, _, _ = touching_inputs(unit)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tag_counts, "_CHUNK_PAIRS", chunk)
        counted = by_postings(unit_starts, unit_tags).tolist()
    assert counted == naive_touching([s for s, _ in unit], [1] * len(unit))


def test_posting_pairs_of_a_chunk_past_32_bit_keys_are_sorted_as_64_bit() -> None:
    """A chunk of 2^16 + 5 sets (keys past 2^31) keeps 64-bit keys: the first and the
    last set share a tag, every other set has a tag of its own."""
    count = 2**16 + 5
    tags = np.arange(count, dtype=np.int64)
    tags[-1] = 0
    starts = np.arange(count + 1, dtype=np.int64)
    expected = np.ones(count, dtype=np.int64)
    expected[[0, -1]] = 2
    assert np.array_equal(by_postings(starts, tags), expected)


@pytest.mark.parametrize(
    ("direct_keys", "ranked", "narrow_keys"),
    [
        (0, 2**62, 2**31),
        (0, 2**62, 0),
        (0, 1, 2**31),
        (0, 1, 0),
        (64, 1, 2**31),
        (0, 3_000, 2**31),
        (2_000, 2**62, 2**31),
        (2_000, 2**62, 0),
    ],
    ids=[
        "sorted-32",
        "sorted-64",
        "sorted-ids-32",
        "sorted-ids-64",
        "direct-ids",
        "ranks-then-ids",
        "direct-then-sorted-32",
        "direct-then-sorted-64",
    ],
)
@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(st.frozensets(st.integers(0, 11), min_size=1, max_size=12), st.integers(1, 3)),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
def test_shared_subsets_agree_whichever_way_keys_are_counted(
    direct_keys: int,
    ranked: int,
    narrow_keys: int,
    pairs: list[tuple[frozenset[int], int]],
    unit: bool,
) -> None:
    """Sort-based counting (32- or 64-bit keys), dense ids past the rank limit and sparse
    candidates, forced on small inputs by lowering the limits; repeated sets (not merged)
    and unit weights."""
    if unit:
        pairs = [(s, 1) for s, _ in pairs]
    starts, tags, mult, vocabulary = touching_inputs(pairs)
    expected = naive_touching([s for s, _ in pairs], mult.tolist())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tag_counts, "_DIRECT_KEYS", direct_keys)
        patch.setattr(tag_counts, "_RANKED", ranked)
        patch.setattr(tag_counts, "_NARROW_KEYS", narrow_keys)
        patch.setattr(tag_counts, "_NARROW_RECORDS", 0)
        assert by_shared_subsets(starts, tags, mult, vocabulary).tolist() == expected


@settings(max_examples=examples(150), deadline=None)
@given(TAG_SETS)
def test_repeated_sets_split_into_unit_copies_count_the_same(
    pairs: list[tuple[frozenset[int], int]],
) -> None:
    """Shared subsets on one unit set per position (used when few sets repeat)."""
    from cupel.scorers._tag_counts import _unit_sets

    starts, tags, mult, vocabulary = touching_inputs(pairs)
    expected = naive_touching([s for s, _ in pairs], mult.tolist())
    assert _unit_sets(starts, tags, mult, vocabulary).tolist() == expected


@settings(max_examples=examples(100), deadline=None)
@given(TAG_SETS)
def test_ranks_computed_without_the_binomial_table_agree(
    pairs: list[tuple[frozenset[int], int]],
) -> None:
    """Vocabularies past the table's size compute ``comb(tag, k)`` per tag instead."""
    starts, tags, mult, vocabulary = touching_inputs(pairs)
    expected = naive_touching([s for s, _ in pairs], mult.tolist())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tag_counts, "_BINOMIAL_TAGS", 0)
        assert by_shared_subsets(starts, tags, mult, vocabulary).tolist() == expected


@settings(max_examples=examples(100), deadline=None)
@given(TAG_SETS)
def test_a_hash_hitting_every_shared_key_is_checked(
    pairs: list[tuple[frozenset[int], int]],
) -> None:
    """32-bit sorted keys whose hash is 0 for every key: each record is a candidate and
    only the binary search decides which keys are shared."""
    starts, tags, mult, vocabulary = touching_inputs(pairs)
    expected = naive_touching([s for s, _ in pairs], mult.tolist())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tag_counts, "_DIRECT_KEYS", 0)
        patch.setattr(tag_counts, "_MIX32", np.uint32(0))
        patch.setattr(tag_counts, "_NARROW_RECORDS", 0)
        assert by_shared_subsets(starts, tags, mult, vocabulary).tolist() == expected


@pytest.mark.parametrize(
    ("vocabulary", "per_item", "dense"),
    [
        (16, 8, True),  # long posting lists, few tag pairs per item
        (1_000, 8, True),
        (100_000, 8, False),  # posting lists of about 8
        (1_000, 2, True),
        (50, 14, False),  # sets of more than 12 tags
    ],
)
def test_shared_subsets_are_counted_only_for_dense_small_vocabularies(
    vocabulary: int, per_item: int, dense: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: list[str] = []
    for name in ("by_postings", "by_shared_subsets"):
        original = getattr(frequency, name)

        def record(*args: object, _f: object = original, _m: str = name) -> object:
            chosen.append(_m)
            return _f(*args)  # type: ignore[operator]

        monkeypatch.setattr(frequency, name, record)
    rng = random.Random(vocabulary)
    items = [
        make(tags=tuple(f"t{rng.randrange(vocabulary)}" for _ in range(per_item)))
        for _ in range(20_000)
    ]
    result = FrequencyScorer().score_all(items)
    assert chosen == ["by_shared_subsets" if dense else "by_postings"]
    assert result[:30] == [FrequencyScorer().score(item, items) for item in items[:30]]


def test_tags_differing_only_in_ascii_case_are_one_tag_but_unicode_case_is_not() -> None:
    items = [make(tags=("Ops",)), make(tags=("OPS", "x")), make(tags=("É",)), make(tags=("é",))]
    assert both_paths(items) == [1 / 3, 1 / 3, 0.0, 0.0]


def test_a_tag_repeated_within_an_item_counts_once() -> None:
    items = [make(tags=("a", "A", "a")), make(tags=("a",)), make(tags=("b",))]
    assert both_paths(items) == [0.5, 0.5, 0.0]


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "B", "b", "c", "DB", "db", "x1", ""]), max_size=5),
        min_size=2,
        max_size=14,
    )
)
def test_equal_rows_are_merged_into_one_set_by_their_bytes(tags: list[list[str]]) -> None:
    """Rows of equal (folded) tags, and rows of one length that differ, on the dense route."""
    items = [make(tags=tuple(t)) for t in tags]
    with routes(True, 2**21):
        assert FrequencyScorer().score_all(items) == oracle(items)


@pytest.mark.parametrize("dense", [False, True], ids=["postings", "shared-subsets"])
def test_skewed_vocabulary_agrees_with_the_definition(dense: bool) -> None:
    """A Zipf-like vocabulary: a few tags held by most items, a long tail held by few."""
    rng = random.Random(7)
    items = [
        make(tags=tuple(f"t{int(rng.paretovariate(1.1))}" for _ in range(rng.randrange(9))))
        for _ in range(400)
    ]
    with routes(dense, 2**21):
        assert FrequencyScorer().score_all(items) == oracle(items)
