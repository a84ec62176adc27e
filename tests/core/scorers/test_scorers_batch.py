"""Every built-in's ``score_all`` agrees with per-item ``score``, and is not quadratic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from scorers_testkit import (
    T0,
    CountingScorer,
    assert_same_scores,
    leaf_scorers,
    make,
    passes,
    per_item,
    scorers,
)

import cupel.scorers
from cupel._model import ContextItem
from cupel.scorers import (
    CompositeScorer,
    FrequencyScorer,
    KindScorer,
    PriorityScorer,
    RecencyScorer,
    ScaledScorer,
    score_all,
)

N = 20_000


@settings(max_examples=examples(300), deadline=None)
@given(scorer=leaf_scorers, items=passes())
def test_leaf_batch_matches_per_item_score(scorer: Any, items: list[ContextItem]) -> None:
    assert_same_scores(scorer.score_all(items), per_item(scorer, items))


@settings(max_examples=examples(300), deadline=None)
@given(scorer=scorers, items=passes(max_size=8))
def test_composite_and_scaled_batch_matches_per_item_score(
    scorer: Any, items: list[ContextItem]
) -> None:
    assert_same_scores(scorer.score_all(items), per_item(scorer, items))


@settings(max_examples=examples(100), deadline=None)
@given(scorer=scorers, items=passes(max_size=8))
def test_module_score_all_uses_the_batch_method(scorer: Any, items: list[ContextItem]) -> None:
    assert_same_scores(score_all(scorer, items), scorer.score_all(items))


@settings(max_examples=examples(100), deadline=None)
@given(items=passes(max_size=8), inner=scorers)
def test_scaled_batch_stays_in_unit_interval(items: list[ContextItem], inner: Any) -> None:
    for value in ScaledScorer(inner).score_all(items):
        assert 0.0 <= value <= 1.0


@given(items=passes(), data=st.data())
def test_batch_ignores_how_the_pass_was_built(
    items: list[ContextItem], data: st.DataObject
) -> None:
    scorer = data.draw(leaf_scorers)
    assert_same_scores(scorer.score_all(tuple(items)), scorer.score_all(items))


# -- not quadratic ------------------------------------------------------------------------

Calls = Counter[tuple[str, str]]


@pytest.fixture(scope="module")
def big_pass() -> list[ContextItem]:
    tags = [f"t{i}" for i in range(50)]
    return [
        ContextItem(
            content=f"item {i}",
            tokens=1,
            priority=i % 1000,
            timestamp=T0 - timedelta(seconds=i),
            tags=(tags[i % 50], tags[(i * 7) % 50].upper()) if i % 3 else (),
        )
        for i in range(N)
    ]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Counts each built-in scorer's per-item ``score`` and batch ``_scores`` calls, by
    wrapping the methods on the classes themselves (a user's subclass overriding
    ``score`` is scored through that ``score``, so counting through a subclass would
    change what is measured)."""
    counted: Calls = Counter()
    classes = (RecencyScorer, PriorityScorer, FrequencyScorer, KindScorer, ScaledScorer)
    for cls in (*classes, CompositeScorer):
        # the batch is computed within a pass by _scores_in (counted as _scores)
        for name in ("score", "_scores_in"):
            original = getattr(cls, name)
            key = name.removesuffix("_in")

            def wrapper(self: Any, *args: Any, _f: Any = original, _k: Any = (cls, key)) -> Any:
                counted[(_k[0].__name__, _k[1])] += 1
                return _f(self, *args)

            monkeypatch.setattr(cls, name, wrapper)
    return counted


def test_recency_batch_never_scores_per_item(big_pass: list[ContextItem], calls: Calls) -> None:
    result = RecencyScorer().score_all(big_pass)
    assert calls == {("RecencyScorer", "_scores"): 1}
    assert result[0] == 1.0 and result[-1] == 0.0
    assert result[1] == (N - 2) / (N - 1)


def test_priority_batch_never_scores_per_item(big_pass: list[ContextItem], calls: Calls) -> None:
    result = PriorityScorer().score_all(big_pass)
    assert calls == {("PriorityScorer", "_scores"): 1}
    assert result[0] == 0.0 and result[999] == 999 * 20 / (N - 1)


def test_frequency_batch_never_scores_per_item(big_pass: list[ContextItem], calls: Calls) -> None:
    result = FrequencyScorer().score_all(big_pass)
    assert calls == {("FrequencyScorer", "_scores"): 1}
    assert result[0] == 0.0
    for i in (1, 2, 4, 12_345, N - 1):
        assert result[i] == FrequencyScorer().score(big_pass[i], big_pass)


def test_scaled_batch_runs_the_inner_batch_once(big_pass: list[ContextItem], calls: Calls) -> None:
    result = ScaledScorer(RecencyScorer()).score_all(big_pass)
    assert calls == {("ScaledScorer", "_scores"): 1, ("RecencyScorer", "_scores"): 1}
    assert result[0] == 1.0 and result[-1] == 0.0


def test_scaled_batch_scores_a_custom_inner_once_per_item(big_pass: list[ContextItem]) -> None:
    inner = CountingScorer()
    ScaledScorer(inner).score_all(big_pass)
    assert inner.calls == N


def test_composite_of_relative_scorers_batches_each_child_once(
    big_pass: list[ContextItem], calls: Calls
) -> None:
    scorer = CompositeScorer(
        [(RecencyScorer(), 1.0), (ScaledScorer(PriorityScorer()), 1.0), (KindScorer(), 1.0)]
    )
    scorer.score_all(big_pass)
    assert calls == {
        ("CompositeScorer", "_scores"): 1,
        ("RecencyScorer", "_scores"): 1,
        ("ScaledScorer", "_scores"): 1,
        ("PriorityScorer", "_scores"): 1,
        ("KindScorer", "_scores"): 1,
    }


def test_a_child_shared_at_every_level_is_scored_once_per_pass(calls: Calls) -> None:
    items = [make(tags=("a", "b")[: i % 3], priority=i % 5) for i in range(40)]
    shared = ScaledScorer(FrequencyScorer())
    scorer: Any = shared
    for _ in range(20):  # 2^20 paths from the root to the shared child
        scorer = CompositeScorer([(scorer, 1.0), (shared, 2.0), (scorer, 3.0)])
    result = scorer.score_all(items)
    assert calls[("FrequencyScorer", "_scores")] == 1
    assert calls[("ScaledScorer", "_scores")] == 1
    assert calls[("CompositeScorer", "_scores")] == 20
    assert_same_scores(result, per_item(PerItemComposite(scorer), items))


class PerItemComposite:
    """The per-item definition of a composite tree, memoized per (scorer, item) so a
    shared child costs one evaluation per item here too."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        memo: dict[int, float] = {}

        def value(node: Any) -> float:
            if id(node) not in memo:
                if isinstance(node, CompositeScorer):
                    total = 0.0
                    for child, weight in node.entries:
                        total += value(child) * weight
                    memo[id(node)] = total
                else:
                    memo[id(node)] = node.score(item, all_items)
            return memo[id(node)]

        return value(self.root)


def test_frequency_batch_with_one_object_repeated_many_times() -> None:
    shared = make(tags=("a",))
    items = [shared] * 5000 + [make(tags=("A",))]
    result = FrequencyScorer().score_all(items)
    assert result[:3] == [1 / 5000] * 3 and result[-1] == 1.0
    assert result[0] == FrequencyScorer().score(shared, items)


def test_package_exports_every_scorer() -> None:
    assert set(cupel.scorers.__all__) == {
        "MAX_SCORER_DEPTH",
        "BaseScorer",
        "CompositeScorer",
        "DecayCurve",
        "DecayScorer",
        "ExponentialDecay",
        "FixedTimeProvider",
        "FrequencyScorer",
        "KindScorer",
        "MetadataKeyScorer",
        "MetadataTrustScorer",
        "PriorityScorer",
        "RecencyScorer",
        "ReflexiveScorer",
        "RelevanceScorer",
        "ScaledScorer",
        "Scorer",
        "StepDecay",
        "SystemTimeProvider",
        "TagScorer",
        "TimeProvider",
        "WindowDecay",
        "score_all",
    }
    for name in cupel.scorers.__all__:
        assert getattr(cupel.scorers, name) is not None
