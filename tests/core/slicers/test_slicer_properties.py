"""Properties every slicer must keep (spec: Slicers > Slicer Interface > Contract)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel._model import ContextBudget, ContextItem, ScoredItem, ascii_fold
from cupel.slicers import (
    BaseSlicer,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KnapsackSlice,
    QuotaEntry,
    QuotaSlice,
    slice_detailed,
)

_KINDS = ["Message", "tool", "TOOL", "memory", "Document"]
_COUNT_ENTRIES = [CountQuotaEntry("Tool", 1, 2), CountQuotaEntry("memory", 2, None)]

BUDGETED: list[BaseSlicer] = [
    GreedySlice(),
    KnapsackSlice(bucket_size=1),
    KnapsackSlice(bucket_size=7),
    KnapsackSlice(),
    QuotaSlice(GreedySlice(), [QuotaEntry("tool", 20, 50), QuotaEntry("Document", cap=30)]),
    QuotaSlice(KnapsackSlice(bucket_size=5), [QuotaEntry("memory", require=40)]),
]
"""Slicers that never exceed ``target_tokens`` (given non-negative token counts)."""

COUNT_QUOTA: list[BaseSlicer] = [
    CountQuotaSlice(GreedySlice(), _COUNT_ENTRIES),
    CountConstrainedKnapsackSlice(_COUNT_ENTRIES, KnapsackSlice(bucket_size=3)),
]
ALL = BUDGETED + COUNT_QUOTA


def _items(rows: list[tuple[int, float, str]]) -> list[ScoredItem]:
    return [
        ScoredItem(ContextItem(content=f"i{n}", tokens=tokens, kind=kind), score)
        for n, (tokens, score, kind) in enumerate(rows)
    ]


_rows = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=150),
        st.floats(min_value=0.0, max_value=1.0),
        st.sampled_from(_KINDS),
    ),
    max_size=25,
)
_targets = st.integers(min_value=0, max_value=1500)


def _budget(target: int, extra: int) -> ContextBudget:
    return ContextBudget(max_tokens=target + extra, target_tokens=target)


@settings(max_examples=examples(150), deadline=None)
@given(
    slicer=st.sampled_from(ALL),
    rows=_rows,
    target=_targets,
    extra=st.integers(min_value=0, max_value=200),
)
def test_output_is_a_deterministic_subset_and_the_input_is_untouched(slicer, rows, target, extra):
    scored = _items(rows)
    snapshot = [(id(s.item), s.score) for s in scored]
    budget = _budget(target, extra)
    first = slicer.slice(scored, budget)
    second = slicer.slice(scored, budget)

    input_ids = {id(s.item) for s in scored}
    assert {id(i) for i in first} <= input_ids
    assert len({id(i) for i in first}) == len(first)  # nothing duplicated
    assert [id(i) for i in second] == [id(i) for i in first]
    assert [id(i) for i in slice_detailed(slicer, scored, budget).selected] == [
        id(i) for i in first
    ]
    assert [(id(s.item), s.score) for s in scored] == snapshot
    if not scored or target == 0:
        assert first == []


@settings(max_examples=examples(150), deadline=None)
@given(slicer=st.sampled_from(BUDGETED), rows=_rows, target=_targets)
def test_selection_fits_the_target(slicer, rows, target):
    scored = _items(rows)
    result = slicer.slice(scored, _budget(target, 0))
    assert sum(i.tokens for i in result) <= target


@settings(max_examples=examples(150), deadline=None)
@given(
    slicer=st.sampled_from([GreedySlice(), KnapsackSlice(bucket_size=1), KnapsackSlice()]),
    rows=_rows,
    target=st.integers(min_value=1, max_value=1500),
)
def test_every_zero_token_item_is_selected(slicer, rows, target):
    scored = _items(rows)
    selected = {id(i) for i in slicer.slice(scored, _budget(target, 0))}
    assert {id(s.item) for s in scored if s.item.tokens == 0} <= selected


@settings(max_examples=examples(150), deadline=None)
@given(
    slicer=st.sampled_from([GreedySlice(), KnapsackSlice(bucket_size=1)]),
    rows=st.lists(
        st.tuples(
            st.integers(min_value=-50, max_value=150),
            st.floats(min_value=0.0, max_value=1.0),
            st.sampled_from(_KINDS),
        ),
        max_size=20,
    ),
    target=_targets,
)
def test_negative_token_items_are_never_selected(slicer, rows, target):
    result = slicer.slice(_items(rows), _budget(target, 0))
    assert all(i.tokens >= 0 for i in result)
    assert sum(i.tokens for i in result) <= target


@settings(max_examples=examples(200), deadline=None)
@given(
    slicer=st.sampled_from(COUNT_QUOTA),
    rows=_rows.filter(bool),  # empty input returns before phase 1: nothing to report
    target=st.integers(min_value=1, max_value=1500),
)
def test_count_quotas_hold_and_the_reports_are_consistent(slicer, rows, target):
    scored = _items(rows)
    outcome = slicer.slice_detailed(scored, _budget(target, 0))
    available = Counter(s.item.kind.key for s in scored)
    selected = Counter(i.kind.key for i in outcome.selected)
    selected_ids = {id(i) for i in outcome.selected}
    short = {ascii_fold(s.kind): s for s in outcome.shortfalls}
    for entry in slicer.entries:
        key = entry.kind.key
        if entry.cap_count is not None:
            assert selected[key] <= entry.cap_count
        satisfied = min(entry.require_count, available[key])
        assert selected[key] >= satisfied
        if available[key] < entry.require_count:
            assert short[key].satisfied_count == available[key]
            assert short[key].required_count == entry.require_count
        else:
            assert key not in short
    for exclusion in outcome.cap_exclusions:
        assert id(exclusion.item) not in selected_ids
        assert exclusion.item.kind.key == ascii_fold(exclusion.kind)
        assert exclusion.count >= exclusion.cap
