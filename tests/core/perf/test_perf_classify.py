"""The Classify stage's int64 token column and Deduplicate's two distinctness routes agree
exactly with the plain definitions (Python sums and checks, a set of the contents)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import budgets, outcome, passes, scorers

import cupel._pipeline.deduplicate as dedup
from cupel import ContextBudget, ContextItem, GreedySlice, Pipeline, RecencyScorer
from cupel._fastpath import MAX_EXACT_TOKENS
from cupel._pipeline.classify import _token_array, classify

UNLIMITED = ContextBudget(max_tokens=2**62, target_tokens=2**62)


@contextmanager
def set_limit(limit: int) -> Iterator[None]:
    """Deduplicate with ``SET_LIMIT = limit`` (0: every pass takes the hash route)."""
    saved = dedup.SET_LIMIT
    dedup.SET_LIMIT = limit
    try:
        yield
    finally:
        dedup.SET_LIMIT = saved


token_lists = st.lists(
    st.one_of(
        st.integers(0, 50),
        st.sampled_from([0, 2**31, 2**52, MAX_EXACT_TOKENS // 2, MAX_EXACT_TOKENS - 1]),
        st.sampled_from([MAX_EXACT_TOKENS, 2**63 - 1, 2**63, 2**70, -1]),
    ),
    max_size=8,
)


@settings(max_examples=examples(500), deadline=None)
@given(tokens=token_lists)
def test_token_array_only_when_counts_are_non_negative_and_the_sum_is_exact(
    tokens: list[int],
) -> None:
    array, total = _token_array(tokens)
    if array is None:
        assert total is None
        exact = bool(tokens) and min(tokens) >= 0 and sum(tokens) < MAX_EXACT_TOKENS
        # refused only when the plain checks refuse too, or a count is beyond the bound
        # that keeps the int64 sum exact (the columns are then built the plain way)
        assert not exact or max(tokens) > MAX_EXACT_TOKENS // len(tokens)
    else:
        assert array.dtype == np.int64
        assert array.tolist() == tokens
        assert total == sum(tokens) < MAX_EXACT_TOKENS
        assert min(tokens) >= 0


@settings(max_examples=examples(300), deadline=None)
@given(tokens=token_lists, pinned=st.lists(st.booleans(), min_size=8, max_size=8))
def test_classify_totals_and_columns_match_the_per_item_split(
    tokens: list[int], pinned: list[bool]
) -> None:
    items = [
        ContextItem(content=f"c{i}", tokens=t, pinned=p and t >= 0 and t < 2**40)
        for i, (t, p) in enumerate(zip(tokens, pinned, strict=False))
    ]
    budget = ContextBudget(max_tokens=2**62, target_tokens=2**62)
    try:
        classified = classify(items, budget, ("content",))
    except Exception as error:  # pinned over the budget: never with these sizes
        pytest.fail(f"unexpected {error!r}")
    assert classified.total_tokens == sum(tokens)
    negative = [i for i in items if i.tokens < 0]
    assert classified.negative == negative
    assert classified.pinned == [i for i in items if i.tokens >= 0 and i.pinned]
    scoreable = [i for i in items if i.tokens >= 0 and not i.pinned]
    assert classified.scoreable == scoreable
    assert classified.tokens == [i.tokens for i in scoreable]
    if classified.token_array is not None:
        assert not negative
        assert classified.token_array.tolist() == classified.tokens
        assert sum(tokens) < MAX_EXACT_TOKENS
        assert classified.fields["content"] == [i.content for i in scoreable]


class _Colliding(str):
    """A string whose hash is the same for every value (the hash route must fall back)."""

    def __hash__(self) -> int:
        return 7


@pytest.mark.parametrize("limit", [0, 16_384])
@pytest.mark.parametrize(
    "contents",
    [
        [],
        ["a"],
        ["a", "b", "c"],
        ["a", "b", "a"],
        ["", "", "x"],
        [_Colliding("a"), _Colliding("b")],
        [_Colliding("a"), _Colliding("a")],
        [str(i) for i in range(3000)],
        [str(i % 2999) for i in range(3000)],
    ],
)
def test_distinct_is_whether_the_set_has_every_content(limit: int, contents: list[str]) -> None:
    with set_limit(limit):
        assert dedup._distinct(contents) == (len(set(contents)) == len(contents))


@settings(max_examples=examples(300), deadline=None)
@given(
    scorer=scorers,
    items=passes(max_size=16, allow_pinned=True, allow_negative=True),
    budget=budgets,
)
def test_both_distinctness_routes_give_the_same_runs_and_reports(
    scorer: Any, items: list[ContextItem], budget: ContextBudget
) -> None:
    pipeline = Pipeline(scorer, GreedySlice())
    with set_limit(0):
        by_hashes = outcome(pipeline, items, budget)
    with set_limit(10**9):
        by_set = outcome(pipeline, items, budget)
    assert by_hashes == by_set


def test_duplicates_past_the_set_limit_keep_the_best_scored_copy() -> None:
    items = [ContextItem(content=f"doc {i % 20_000}", tokens=1) for i in range(20_010)]
    pipeline = Pipeline(RecencyScorer(), GreedySlice())
    report = pipeline.dry_run(items, UNLIMITED).report
    assert report is not None
    dropped = [entry.item for entry in report.excluded]
    # no timestamps: every score is 0.0, so the first copy of each content survives
    assert dropped == items[20_000:]


FIELDS = tuple(ContextItem.model_fields)


def test_context_item_defines_no_class_attribute_named_after_a_field() -> None:
    # what lets read_fields(from_dicts=True) read the instance dicts: an attribute read
    # of a field name finds nothing on the class and so returns the __dict__ value
    assert [name for name in FIELDS if hasattr(ContextItem, name)] == []
    assert [name for name in FIELDS if any(name in vars(c) for c in ContextItem.__mro__)] == []


@settings(max_examples=examples(200), deadline=None)
@given(
    items=passes(max_size=12, allow_pinned=True, allow_negative=True),
    chunk=st.sampled_from([1, 3, 512]),
)
def test_fields_from_dicts_are_the_attribute_values(items: list[ContextItem], chunk: int) -> None:
    import cupel._fastpath as fastpath

    saved = fastpath.FIELD_CHUNK
    fastpath.FIELD_CHUNK = chunk
    try:
        from_dicts = fastpath.read_item_fields(items, FIELDS, ContextItem, dict_class=ContextItem)
        by_attribute = fastpath.read_fields(items, FIELDS)
        assert from_dicts is not None
    finally:
        fastpath.FIELD_CHUNK = saved
    assert len(from_dicts) == len(by_attribute) == len(FIELDS)
    for got, expected in zip(from_dicts, by_attribute, strict=True):
        assert [id(value) for value in got] == [id(value) for value in expected]


def test_an_item_built_without_a_field_fails_as_an_attribute_read_does() -> None:
    from cupel._fastpath import read_fields, read_item_fields

    items = [ContextItem(content="a", tokens=1), ContextItem.model_construct(content="b")]
    with pytest.raises(AttributeError, match="tokens"):
        read_fields(items, ("tokens",))
    with pytest.raises(AttributeError, match="tokens"):
        read_item_fields(items, ("tokens",), ContextItem, dict_class=ContextItem)
    with pytest.raises(AttributeError, match="tokens"):
        Pipeline(RecencyScorer()).run(items, UNLIMITED)


class _Sub(ContextItem):
    """A user's subclass (which could shadow a field with something of its own)."""


@pytest.mark.parametrize(
    ("items", "from_dicts"),
    [
        ([ContextItem(content="a", tokens=1)], 1),
        ([ContextItem(content="a", tokens=1), _Sub(content="b", tokens=1)], 0),
        ([_Sub(content="b", tokens=1)], 0),
    ],
)
def test_only_exact_context_items_are_read_from_their_dicts(
    monkeypatch: pytest.MonkeyPatch, items: list[ContextItem], from_dicts: int
) -> None:
    import cupel._fastpath as module

    seen: list[Any] = []
    real = module._DICT

    def spy(item: Any) -> Any:
        seen.append(item)
        return real(item)

    monkeypatch.setattr(module, "_DICT", spy)
    classified = classify(items, UNLIMITED, ("content",))
    assert len(seen) == from_dicts * len(items)
    assert classified.fields["content"] == [item.content for item in items]


@pytest.mark.parametrize("chunk", [1, 2, 512])
def test_a_stranger_in_any_chunk_makes_the_read_give_up(chunk: int) -> None:
    import cupel._fastpath as fastpath

    items: list[Any] = [ContextItem(content=str(i), tokens=i) for i in range(5)]
    saved = fastpath.FIELD_CHUNK
    fastpath.FIELD_CHUNK = chunk
    try:
        assert fastpath.read_item_fields(items, ("tokens",), ContextItem) == [[0, 1, 2, 3, 4]]
        for at in range(5):
            mixed = [*items[:at], {"tokens": 1}, *items[at:]]
            assert fastpath.read_item_fields(mixed, ("tokens",), ContextItem) is None
            assert (
                fastpath.read_item_fields(mixed, ("tokens",), ContextItem, dict_class=ContextItem)
                is None
            )
        # a chunk with an item missing a field falls back to attribute reads, and only it
        built = ContextItem.model_construct(content="m", tokens=9, kind="Message")
        del built.__dict__["pinned"]
        mixed = [*items, built]
        with pytest.raises(AttributeError, match="pinned"):
            fastpath.read_item_fields(
                mixed, ("tokens", "pinned"), ContextItem, dict_class=ContextItem
            )
        assert fastpath.read_item_fields(
            mixed, ("tokens",), ContextItem, dict_class=ContextItem
        ) == [[0, 1, 2, 3, 4, 9]]
    finally:
        fastpath.FIELD_CHUNK = saved
