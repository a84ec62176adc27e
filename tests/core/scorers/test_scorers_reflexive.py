"""ReflexiveScorer: the future relevance hint, clamped; non-finite → 0.0."""

from __future__ import annotations

import math

import pytest
from scorers_testkit import make

from cupel.scorers import ReflexiveScorer


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (None, 0.0),
        (math.nan, 0.0),
        (math.inf, 0.0),
        (-math.inf, 0.0),
        (0.5, 0.5),
        (-0.3, 0.0),
        (1.7, 1.0),
        (0.0, 0.0),
        (1.0, 1.0),
    ],
)
def test_spec_edge_cases(hint: float | None, expected: float) -> None:
    item = make(future_relevance_hint=hint)
    assert ReflexiveScorer().score(item, [item]) == expected


def test_integer_hint_is_used_as_a_float() -> None:
    item = make(future_relevance_hint=1)
    assert ReflexiveScorer().score(item, []) == 1.0


def test_all_items_is_ignored() -> None:
    item = make(future_relevance_hint=0.25)
    assert ReflexiveScorer().score_all([item, make()]) == [0.25, 0.0]


def test_repr() -> None:
    assert repr(ReflexiveScorer()) == "ReflexiveScorer()"
