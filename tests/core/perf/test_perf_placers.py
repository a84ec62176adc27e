"""The placers' array fast paths agree exactly with the spec's pseudocode."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import context_items, scored_lists, spec_chronological, spec_u_shaped

import cupel.placers.chronological
from cupel import ChronologicalPlacer, ContextItem, ScoredItem, UShapedPlacer
from cupel._fastpath import SharedFields, increasing_column, known_increasing, sharing_fields
from cupel.placers._base import fast_orderer

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def ids(items: list[ContextItem]) -> list[int]:
    return [id(item) for item in items]


def with_repeats(scored: list[ScoredItem], data: st.DataObject) -> list[ScoredItem]:
    if scored:
        for index in data.draw(st.lists(st.integers(0, len(scored) - 1), max_size=2)):
            scored.insert(data.draw(st.integers(0, len(scored))), scored[index])
    return scored


@settings(max_examples=examples(400), deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_u_shaped_equals_the_spec_pseudocode(scored: list[ScoredItem], data: st.DataObject) -> None:
    scored = with_repeats(scored, data)
    assert ids(UShapedPlacer().place(scored)) == ids(spec_u_shaped(scored))
    items = [entry.item for entry in scored]
    order = UShapedPlacer()._order(items, np.array([e.score for e in scored]), None)
    assert ids([items[i] for i in order]) == ids(spec_u_shaped(scored))


@settings(max_examples=examples(400), deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_chronological_equals_the_spec_pseudocode(
    scored: list[ScoredItem], data: st.DataObject
) -> None:
    scored = with_repeats(scored, data)
    assert ids(ChronologicalPlacer().place(scored)) == ids(spec_chronological(scored))


@settings(max_examples=examples(400), deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_chronological_order_does_not_depend_on_the_origin_hint(
    scored: list[ScoredItem], data: st.DataObject
) -> None:
    scored = with_repeats(scored, data)
    items = [entry.item for entry in scored]
    size = len(items)
    origin = np.array(data.draw(st.lists(st.integers(-3, 30), min_size=size, max_size=size)))
    order = ChronologicalPlacer()._order(items, np.zeros(size), origin.astype(np.intp))
    assert ids([items[i] for i in order]) == ids(spec_chronological(scored))


@given(st.lists(st.one_of(st.integers(-2, 2), st.just(float("nan"))), max_size=8))
def test_u_shaped_with_nan_or_int_scores_uses_the_per_item_loop_and_agrees(
    values: list[float],
) -> None:
    scored = [ScoredItem(ContextItem(content=str(i), tokens=1), v) for i, v in enumerate(values)]
    assert ids(UShapedPlacer().place(scored)) == ids(spec_u_shaped(scored))


def test_only_exact_built_in_placers_have_a_fast_path() -> None:
    class Reversed(ChronologicalPlacer):
        def place(self, items: object) -> list[ContextItem]:
            return list(reversed(super().place(items)))  # type: ignore[arg-type]

    assert fast_orderer(Reversed()) is None
    assert fast_orderer(UShapedPlacer()) is not None


@settings(max_examples=examples(400), deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_u_shaped_over_descending_scores_equals_the_spec_pseudocode(
    scored: list[ScoredItem], data: st.DataObject
) -> None:
    """Scores already in descending order (the pipeline's usual input: its selection in
    the Sort stage's order) are their own ranking; ties and signed zeros included."""
    scored = with_repeats(scored, data)
    if data.draw(st.booleans()):
        scored = [ScoredItem(e.item, data.draw(st.sampled_from([0.0, -0.0, 1.0]))) for e in scored]
    scored.sort(key=lambda entry: -entry.score)  # stable: ties keep their order
    items = [entry.item for entry in scored]
    order = UShapedPlacer()._order(items, np.array([e.score for e in scored]), None)
    assert ids([items[i] for i in order]) == ids(spec_u_shaped(scored))


@settings(max_examples=examples(300), deadline=None)
@given(origin=st.lists(st.integers(-5, 40), max_size=30, unique=True), wide=st.booleans())
def test_positions_by_origin_are_the_stable_argsort(origin: list[int], wide: bool) -> None:
    values = np.array([v * 10_000 if wide else v for v in origin], dtype=np.intp)
    expected = np.argsort(values, kind="stable").tolist()
    assert cupel.placers.chronological._by_origin(values).tolist() == expected
    repeated = np.append(values, values[:2])  # equal values: the stable sort itself
    assert (
        cupel.placers.chronological._by_origin(repeated).tolist()
        == np.argsort(repeated, kind="stable").tolist()
    )


@settings(max_examples=examples(400), deadline=None)
@given(
    source=st.lists(context_items(), max_size=20),
    data=st.data(),
)
def test_chronological_reading_the_source_column_equals_the_spec_pseudocode(
    source: list[ContextItem], data: st.DataObject
) -> None:
    """With ``source`` (the Place stage's origin: pinned items numbered below zero, then
    distinct positions in ``source``), the timestamps come from ``source``'s shared
    column: same order as the spec, whatever the selection's order, with ties,
    untimestamped items and timestamps already in order."""
    if data.draw(st.booleans()):  # strictly increasing timestamps in source order
        source = [
            item.model_copy(update={"timestamp": T0 + timedelta(minutes=i)})
            for i, item in enumerate(source)
        ]
    chosen = data.draw(st.permutations(range(len(source)))) if source else []
    chosen = chosen[: data.draw(st.integers(0, len(chosen)))]
    pinned = data.draw(st.lists(context_items(), max_size=3))
    items = [*pinned, *(source[i] for i in chosen)]
    origin = np.array([*range(-len(pinned), 0), *chosen], dtype=np.intp)
    column = [item.timestamp for item in source]
    # the Recency scorer's check of the whole column, already made in the pass, or not
    checked = data.draw(st.booleans())
    fields = SharedFields(timestamp=column) if checked else {"timestamp": column}
    with sharing_fields(source, fields):
        if checked:
            assert increasing_column(source, "timestamp") == (column, _increases(column))
            assert known_increasing(source, "timestamp") is _increases(column)
        order = ChronologicalPlacer()._order(items, np.zeros(len(items)), origin, source)
    expected = spec_chronological([ScoredItem(item, 0.0) for item in items])
    assert ids([items[i] for i in np.asarray(order, dtype=np.intp).tolist()]) == ids(expected)


def _increases(values: list[datetime | None]) -> bool:
    """Strictly increasing and none ``None`` (written out: the helper's reference)."""
    if any(value is None for value in values):
        return False
    try:
        return all(values[i] < values[i + 1] for i in range(len(values) - 1))  # type: ignore[operator]
    except TypeError:
        return False
