"""The placers' one route agrees exactly with the spec's pseudocode (the oracle in
perf_testkit), and the descending order they share with the Sort stage with Python's
stable sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import MAX_FLOAT, scored_lists, spec_chronological, spec_u_shaped

from cupel import (
    ChronologicalPlacer,
    ContextBudget,
    ContextItem,
    Pipeline,
    RecencyScorer,
    ScoredItem,
    UShapedPlacer,
)
from cupel._fastpath import descending_order


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
    if data.draw(st.booleans()):  # descending already (the pipeline's usual input), ties
        scored = [ScoredItem(e.item, data.draw(st.sampled_from([0.0, -0.0, 1.0]))) for e in scored]
        scored.sort(key=lambda entry: -entry.score)
    assert ids(UShapedPlacer().place(scored)) == ids(spec_u_shaped(scored))


@given(st.lists(st.one_of(st.integers(-2, 2), st.just(float("nan"))), max_size=8))
def test_u_shaped_with_nan_or_int_scores_agrees(values: list[float]) -> None:
    scored = [ScoredItem(ContextItem(content=str(i), tokens=1), v) for i, v in enumerate(values)]
    assert ids(UShapedPlacer().place(scored)) == ids(spec_u_shaped(scored))


@settings(max_examples=examples(400), deadline=None)
@given(scored=scored_lists(max_size=20), data=st.data())
def test_chronological_equals_the_spec_pseudocode(
    scored: list[ScoredItem], data: st.DataObject
) -> None:
    scored = with_repeats(scored, data)
    assert ids(ChronologicalPlacer().place(scored)) == ids(spec_chronological(scored))


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, MAX_FLOAT, float("nan")]),
    st.integers(-3, 3),
)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(values, max_size=40))
def test_descending_order_is_pythons_stable_sort(scores: list[float]) -> None:
    expected = sorted(range(len(scores)), key=lambda i: -scores[i])
    assert descending_order(scores).tolist() == expected
    floats = [float(v) for v in scores]
    assert descending_order(np.array(floats)).tolist() == sorted(
        range(len(floats)), key=lambda i: -floats[i]
    )


def test_a_subclass_overriding_place_is_run_through_its_override() -> None:
    class Reversed(ChronologicalPlacer):
        def place(self, items: object) -> list[ContextItem]:
            return list(reversed(super().place(items)))  # type: ignore[arg-type]

    items = [ContextItem(content=c, tokens=1) for c in "abc"]
    budget = ContextBudget(max_tokens=10, target_tokens=10)
    window = Pipeline(RecencyScorer(), placer=Reversed()).run(items, budget).items
    assert [i.content for i in window] == ["c", "b", "a"]
