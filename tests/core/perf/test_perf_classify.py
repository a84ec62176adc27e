"""The Classify stage agrees exactly with the spec's per-item split (the oracle here), and
its int64 token column exists exactly when the counts' sum is exact in it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import ContextBudget, ContextItem
from cupel._errors import ItemError
from cupel._fastpath import MAX_EXACT_TOKENS
from cupel._pipeline.classify import classify
from cupel._pipeline.deduplicate import deduplicate
from cupel._pipeline.sort import sort

UNLIMITED = ContextBudget(max_tokens=2**62, target_tokens=2**62)

token_lists = st.lists(
    st.one_of(
        st.integers(0, 50),
        st.sampled_from([0, 2**31, 2**52, MAX_EXACT_TOKENS // 2, MAX_EXACT_TOKENS - 1]),
        st.sampled_from([MAX_EXACT_TOKENS, 2**63 - 1, 2**63, 2**70, -1]),
    ),
    max_size=8,
)


def spec_split(items: list[ContextItem]) -> tuple[list[ContextItem], ...]:
    """The spec's CLASSIFY, item by item: negative tokens first, then pinned."""
    pinned, scoreable, negative = [], [], []
    for item in items:
        if item.tokens < 0:
            negative.append(item)
        elif item.pinned:
            pinned.append(item)
        else:
            scoreable.append(item)
    return pinned, scoreable, negative


@settings(max_examples=examples(300), deadline=None)
@given(tokens=token_lists, pinned=st.lists(st.booleans(), min_size=8, max_size=8))
def test_classify_equals_the_per_item_split(tokens: list[int], pinned: list[bool]) -> None:
    items = [
        ContextItem(content=f"c{i}", tokens=t, pinned=p and t < 2**40)
        for i, (t, p) in enumerate(zip(tokens, pinned, strict=False))
    ]
    classified = classify(items, UNLIMITED)
    spec_pinned, scoreable, negative = spec_split(items)
    assert classified.total_tokens == sum(tokens)
    assert classified.negative == negative
    assert classified.pinned == spec_pinned
    assert classified.pinned_tokens == sum(i.tokens for i in spec_pinned)
    assert classified.scoreable == scoreable
    assert classified.tokens == [i.tokens for i in scoreable]
    exact = sum(classified.tokens) < MAX_EXACT_TOKENS
    unscored = np.zeros(len(scoreable))
    found = sort(classified, unscored, deduplicate(classified, unscored, False)).columns
    if found is None:
        assert not exact
    else:
        assert exact
        assert found.tokens.dtype.name == "int64"
        assert found.tokens.tolist() == classified.tokens


@pytest.mark.parametrize("position", [0, 1, 2])
def test_classify_names_the_first_element_that_is_not_an_item(position: int) -> None:
    items: list[object] = [ContextItem(content=str(i), tokens=1) for i in range(3)]
    items[position] = "not an item"
    items.append(42)
    with pytest.raises(ItemError, match=rf"items\[{position}\] must be a ContextItem, got str"):
        classify(items, UNLIMITED)  # type: ignore[arg-type]
