"""Reference (per-item, spec pseudocode) implementations and hypothesis strategies for the
fast-path agreement tests of tests/core/perf."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from cupel import ContextBudget, ContextItem, CupelError, Pipeline, ScoredItem
from cupel.diagnostics import SelectionReport
from cupel.scorers import (
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    KindScorer,
    MetadataKeyScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    TagScorer,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
MAX_FLOAT = sys.float_info.max

# -- exact comparisons ------------------------------------------------------------------------


def same_float(a: Any, b: Any) -> bool:
    """Bit-for-bit agreement of two scores: NaN matches NaN, and 0.0 does not match -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return type(a) is type(b) and a == b


def assert_same_floats(actual: Sequence[Any], expected: Sequence[Any]) -> None:
    assert len(actual) == len(expected)
    for i, (a, b) in enumerate(zip(actual, expected, strict=True)):
        assert same_float(a, b), f"position {i}: {a!r} != {b!r}"
        assert type(a) is float, f"position {i}: {type(a).__name__} is not a Python float"


def report_key(report: SelectionReport | None) -> tuple[Any, ...]:
    """Everything in a report except stage durations, items compared by identity."""
    assert report is not None
    return (
        [(id(e.item), _score_key(e.score), e.reason) for e in report.included],
        [(id(e.item), _score_key(e.score), e.reason) for e in report.excluded],
        [(e.stage, e.item_count) for e in report.events],
        report.total_candidates,
        report.total_tokens_considered,
        report.count_requirement_shortfalls,
        None
        if report.overflow is None
        else (
            report.overflow.tokens_over_budget,
            [id(i) for i in report.overflow.overflowing_items],
        ),
    )


def outcome(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget) -> Any:
    """What a run and a dry run give, items by identity; or the error they raise."""
    try:
        plain = pipeline.run(items, budget)
        traced = pipeline.dry_run(items, budget)
    except CupelError as error:
        return (type(error), str(error))
    assert [id(i) for i in plain.items] == [id(i) for i in traced.items]
    assert plain.total_tokens == sum(i.tokens for i in plain.items)
    return (
        [id(i) for i in plain.items],
        plain.total_tokens,
        None if plain.overflow is None else plain.overflow.tokens_over_budget,
        report_key(traced.report),
    )


def _score_key(score: Any) -> Any:
    if isinstance(score, float):
        assert type(score) is float, f"report score {score!r} is a {type(score).__name__}"
        return ("nan",) if math.isnan(score) else (score, math.copysign(1.0, score))
    return score


# -- the spec's per-item definitions -----------------------------------------------------------


class PerItemScorer:
    """A custom scorer whose pass is ``inner.score(item, items)`` for each item: the spec's
    per-item definition, with none of the built-in batch code."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        result: float = self.inner.score(item, all_items)
        return result


def spec_greedy(scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
    """GREEDY-SLICE, transcribed from the spec."""
    if len(scored) == 0 or budget.target_tokens <= 0:
        return []
    densities = []
    for i, entry in enumerate(scored):
        tokens = entry.item.tokens
        densities.append((MAX_FLOAT if tokens == 0 else entry.score / tokens, i))
    densities.sort(key=lambda pair: -pair[0])  # stable: index ascending on ties
    remaining = budget.target_tokens
    selected = []
    for _, index in densities:
        item = scored[index].item
        tokens = item.tokens
        if tokens == 0:
            selected.append(item)
        elif tokens <= remaining:
            selected.append(item)
            remaining -= tokens
    return selected


class SpecGreedy:
    """A custom slicer running :func:`spec_greedy`."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return spec_greedy(scored, budget)


def spec_u_shaped(items: Sequence[ScoredItem]) -> list[ContextItem]:
    """U-SHAPED-PLACE, transcribed from the spec."""
    if len(items) <= 1:
        return [entry.item for entry in items]
    scored = sorted(((entry.score, i) for i, entry in enumerate(items)), key=lambda p: -p[0])
    result: list[Any] = [None] * len(items)
    left, right = 0, len(items) - 1
    for rank, (_, index) in enumerate(scored):
        if rank % 2 == 0:
            result[left] = items[index].item
            left += 1
        else:
            result[right] = items[index].item
            right -= 1
    return result


def spec_chronological(items: Sequence[ScoredItem]) -> list[ContextItem]:
    """CHRONOLOGICAL-PLACE, transcribed from the spec (timestamped first, stable)."""
    timed = [
        (entry.item.timestamp, i)
        for i, entry in enumerate(items)
        if entry.item.timestamp is not None
    ]
    untimed = [i for i, entry in enumerate(items) if entry.item.timestamp is None]
    timed.sort(key=lambda pair: pair[0])
    return [items[i].item for _, i in timed] + [items[i].item for i in untimed]


class SpecPlacer:
    """A custom placer running one of the transcribed placement algorithms."""

    def __init__(self, algorithm: Any) -> None:
        self.algorithm = algorithm

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        result: list[ContextItem] = self.algorithm(items)
        return result


# -- strategies -------------------------------------------------------------------------------

TAGS = ["a", "A", "b", "db", "DB", "ops", "Ops", "é", ""]
KINDS = ["Message", "message", "Document", "ToolOutput", "Memory", "Custom"]
ZONES = [timezone.utc, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))]

# A few instants, microseconds apart or equal, written in different zones: equal instants
# must tie, and one microsecond must order.
instants = st.builds(
    lambda minute, micro, zone: (T0 + timedelta(minutes=minute, microseconds=micro)).astimezone(
        zone
    ),
    st.integers(0, 3),
    st.sampled_from([0, 1, 2, 999_999]),
    st.sampled_from(ZONES),
)
hints = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0]),
)


@st.composite
def context_items(
    draw: st.DrawFn, allow_pinned: bool = False, allow_negative: bool = False
) -> ContextItem:
    tokens = st.one_of(st.integers(0, 40), st.sampled_from([0, 1, 200]))
    if allow_negative:
        tokens = st.one_of(tokens, st.just(-3))
    return ContextItem(
        content=draw(st.sampled_from(["x", "y", "z", "w", "long text", "ü"])),
        tokens=draw(tokens),
        kind=draw(st.sampled_from(KINDS)),
        priority=draw(st.one_of(st.none(), st.integers(-2, 3))),
        tags=tuple(draw(st.lists(st.sampled_from(TAGS), max_size=4))),
        timestamp=draw(st.one_of(st.none(), instants)),
        future_relevance_hint=draw(hints),
        pinned=draw(st.booleans()) if allow_pinned else False,
        metadata=draw(st.sampled_from([{}, {"tier": "gold"}])),
    )


@st.composite
def passes(
    draw: st.DrawFn,
    max_size: int = 14,
    allow_pinned: bool = False,
    allow_negative: bool = False,
    min_size: int = 0,
) -> list[ContextItem]:
    """A pass of items, with duplicate contents, tied keys, ``None`` keys, and sometimes
    the very same object listed more than once."""
    items = draw(
        st.lists(context_items(allow_pinned, allow_negative), min_size=min_size, max_size=max_size)
    )
    if items:
        for index in draw(st.lists(st.integers(0, len(items) - 1), max_size=3)):
            items.insert(draw(st.integers(0, len(items))), items[index])
    return items


leaf_scorers: st.SearchStrategy[Any] = st.one_of(
    st.just(RecencyScorer()),
    st.just(PriorityScorer()),
    st.just(FrequencyScorer()),
    st.just(ReflexiveScorer()),
    st.builds(KindScorer),
    st.builds(KindScorer, st.dictionaries(st.sampled_from(["Message", "custom"]), st.floats(0, 3))),
    st.builds(
        TagScorer,
        st.dictionaries(st.sampled_from(["a", "db", "ops", "é", ""]), st.floats(0, 3)),
        case_insensitive=st.booleans(),
    ),
    st.just(MetadataKeyScorer("tier", "gold", 2.0)),
    st.just(DecayScorer(FixedTimeProvider(T0), ExponentialDecay(timedelta(minutes=2)))),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(ScaledScorer, children),
        st.builds(
            CompositeScorer,
            st.lists(st.tuples(children, st.floats(0.01, 5.0)), min_size=1, max_size=3),
        ),
    )


scorers: st.SearchStrategy[Any] = st.recursive(leaf_scorers, _extend, max_leaves=4)

scores = st.one_of(
    st.floats(allow_nan=False, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, MAX_FLOAT]),
)


@st.composite
def scored_lists(draw: st.DrawFn, max_size: int = 16) -> list[ScoredItem]:
    """Score-descending-or-not ScoredItems with ties, zero-token items and infinities."""
    items = draw(st.lists(context_items(), max_size=max_size))
    return [ScoredItem(item, draw(scores)) for item in items]


budgets = st.integers(0, 120).map(lambda t: ContextBudget(max_tokens=t + 10, target_tokens=t))
