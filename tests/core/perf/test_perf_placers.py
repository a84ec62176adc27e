"""The placers' array fast paths agree exactly with the spec's pseudocode."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from perf_testkit import scored_lists, spec_chronological, spec_u_shaped

from cupel import ChronologicalPlacer, ContextItem, ScoredItem, UShapedPlacer
from cupel.placers._base import fast_orderer


def ids(items: list[ContextItem]) -> list[int]:
    return [id(item) for item in items]


def with_repeats(scored: list[ScoredItem], data: st.DataObject) -> list[ScoredItem]:
    if scored:
        for index in data.draw(st.lists(st.integers(0, len(scored) - 1), max_size=2)):
            scored.insert(data.draw(st.integers(0, len(scored))), scored[index])
    return scored


@settings(max_examples=400, deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_u_shaped_equals_the_spec_pseudocode(scored: list[ScoredItem], data: st.DataObject) -> None:
    scored = with_repeats(scored, data)
    assert ids(UShapedPlacer().place(scored)) == ids(spec_u_shaped(scored))
    items = [entry.item for entry in scored]
    order = UShapedPlacer()._order(items, np.array([e.score for e in scored]), None)
    assert ids([items[i] for i in order]) == ids(spec_u_shaped(scored))


@settings(max_examples=400, deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_chronological_equals_the_spec_pseudocode(
    scored: list[ScoredItem], data: st.DataObject
) -> None:
    scored = with_repeats(scored, data)
    assert ids(ChronologicalPlacer().place(scored)) == ids(spec_chronological(scored))


@settings(max_examples=400, deadline=None)
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
