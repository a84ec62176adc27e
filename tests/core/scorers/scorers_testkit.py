"""Shared helpers and hypothesis strategies for the scorer tests."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from cupel._model import ContextItem
from cupel.scorers import (
    BaseScorer,
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    KindScorer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    RelevanceScorer,
    ScaledScorer,
    StepDecay,
    TagScorer,
    WindowDecay,
)

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)

_counter = 0


def make(**fields: Any) -> ContextItem:
    """An item with unique content (unless given) and 1 token."""
    global _counter
    _counter += 1
    fields.setdefault("content", f"item-{_counter}")
    fields.setdefault("tokens", 1)
    return ContextItem(**fields)


def same(a: float, b: float) -> bool:
    """Equal within 1e-12, with NaN equal to NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def assert_same_scores(actual: Sequence[float], expected: Sequence[float]) -> None:
    assert len(actual) == len(expected)
    for i, (a, b) in enumerate(zip(actual, expected, strict=True)):
        assert same(a, b), f"position {i}: {a!r} != {b!r}"


def per_item(scorer: Any, items: Sequence[ContextItem]) -> list[float]:
    """The reference: ``score`` called for each item against the whole pass."""
    return [scorer.score(item, items) for item in items]


class CountingScorer(BaseScorer):
    """A custom scorer without a batch method of its own; counts ``score`` calls."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value
        self.calls = 0

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        self.calls += 1
        return self.value if item.priority is None else float(item.priority)

    def __repr__(self) -> str:
        return "CountingScorer()"


# -- hypothesis strategies --------------------------------------------------------------

TAGS = ["a", "A", "b", "B", "db", "DB", "Ops", "ops", "é", "É", ""]
KINDS = ["Message", "message", "Memory", "SYSTEMPROMPT", "ToolOutput", "document", "Custom"]
TRUST_VALUES: list[Any] = ["0.85", "1.5", "-0.1", "nan", "Infinity", "high", " 0.5", "1_0", ""]

timestamps = st.one_of(
    st.none(),
    st.integers(min_value=-72, max_value=6).map(lambda h: T0 + timedelta(hours=h)),
)
trust = st.one_of(
    st.sampled_from(TRUST_VALUES),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-3, max_value=3),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
)
metadata = st.fixed_dictionaries(
    {},
    optional={
        "cupel:trust": trust,
        "tier": st.sampled_from(["gold", "Gold", "silver", 1, None]),
    },
)


@st.composite
def context_items(draw: st.DrawFn) -> ContextItem:
    return ContextItem(
        content=draw(st.text(min_size=1, max_size=3)),
        tokens=draw(st.integers(min_value=0, max_value=50)),
        kind=draw(st.sampled_from(KINDS)),
        priority=draw(st.one_of(st.none(), st.integers(min_value=-3, max_value=3))),
        tags=tuple(draw(st.lists(st.sampled_from(TAGS), max_size=4))),
        timestamp=draw(timestamps),
        future_relevance_hint=draw(st.one_of(st.none(), st.floats())),
        metadata=draw(metadata),
    )


@st.composite
def passes(draw: st.DrawFn, max_size: int = 10) -> list[ContextItem]:
    """A pass of items, sometimes listing the same object more than once."""
    items = draw(st.lists(context_items(), max_size=max_size))
    if items:
        repeats = draw(st.lists(st.integers(min_value=0, max_value=len(items) - 1), max_size=3))
        for index in repeats:
            items.insert(draw(st.integers(0, len(items))), items[index])
    return items


weights = st.floats(min_value=0.0, max_value=10.0)

leaf_scorers: st.SearchStrategy[Any] = st.one_of(
    st.just(RecencyScorer()),
    st.just(PriorityScorer()),
    st.just(FrequencyScorer()),
    st.just(ReflexiveScorer()),
    st.builds(RelevanceScorer, st.text(max_size=6)),
    st.builds(KindScorer),
    st.builds(
        KindScorer, st.dictionaries(st.sampled_from(["Message", "Memory", "Custom"]), weights)
    ),
    st.builds(
        TagScorer,
        st.dictionaries(st.sampled_from(["a", "b", "db", "Ops", "é"]), weights),
        case_insensitive=st.booleans(),
    ),
    st.builds(MetadataTrustScorer, st.floats(min_value=0.0, max_value=1.0)),
    st.builds(
        MetadataKeyScorer,
        st.just("tier"),
        st.sampled_from(["gold", "silver"]),
        st.floats(min_value=0.1, max_value=5.0),
    ),
    st.sampled_from(
        [
            ExponentialDecay(timedelta(hours=24)),
            StepDecay([(timedelta(hours=1), 0.9), (timedelta(hours=24), 0.5)]),
            WindowDecay(timedelta(hours=6)),
        ]
    ).map(lambda curve: DecayScorer(FixedTimeProvider(T0), curve, null_timestamp_score=0.3)),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(ScaledScorer, children),
        st.builds(
            CompositeScorer,
            st.lists(
                st.tuples(children, st.floats(min_value=0.01, max_value=10.0)),
                min_size=1,
                max_size=3,
            ),
        ),
    )


scorers: st.SearchStrategy[Any] = st.recursive(leaf_scorers, _extend, max_leaves=5)
