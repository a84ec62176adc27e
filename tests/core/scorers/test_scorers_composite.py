"""CompositeScorer: normalized weighted average, validation and cycle detection."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from scorers_testkit import T0, CountingScorer, make, per_item

from cupel._errors import CycleError, ScorerConfigError
from cupel._model import ContextItem
from cupel.scorers import (
    MAX_SCORER_DEPTH,
    BaseScorer,
    CompositeScorer,
    KindScorer,
    MetadataKeyScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
)


class Constant(BaseScorer):
    def __init__(self, value: float) -> None:
        self.value = value

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self.value


class Loop(BaseScorer):
    """A custom scorer whose children() can point anywhere (here: back at an ancestor)."""

    def __init__(self) -> None:
        self.target: Any = None

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return 0.0

    def children(self) -> tuple[Any, ...]:
        return () if self.target is None else (self.target,)


class Duck:
    """A scorer that only has score(), no base class, no children()."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return 0.5


class TestScoring:
    def test_weights_are_normalized(self) -> None:
        scorer = CompositeScorer([(Constant(1.0), 3.0), (Constant(0.0), 1.0)])
        assert [w for _, w in scorer.entries] == [0.75, 0.25]
        assert scorer.score(make(), []) == 0.75

    def test_only_weight_ratios_matter(self) -> None:
        items = [make(priority=p, future_relevance_hint=p / 10) for p in range(5)]
        a = CompositeScorer([(PriorityScorer(), 3.0), (ReflexiveScorer(), 1.0)])
        b = CompositeScorer([(PriorityScorer(), 0.75), (ReflexiveScorer(), 0.25)])
        assert a.score_all(items) == b.score_all(items)

    def test_single_entry_delegates_to_its_child(self) -> None:
        items = [make(priority=p) for p in (3, 1, 2)]
        scorer = CompositeScorer([(PriorityScorer(), 0.2)])
        assert scorer.entries[0][1] == 1.0
        assert scorer.score_all(items) == PriorityScorer().score_all(items)

    def test_all_children_zero_gives_zero(self) -> None:
        scorer = CompositeScorer([(Constant(0.0), 1.0), (Constant(0.0), 2.0)])
        assert scorer.score(make(), []) == 0.0

    def test_all_children_one_gives_one(self) -> None:
        scorer = CompositeScorer([(Constant(1.0), 1.0), (Constant(1.0), 2.0), (Constant(1.0), 4.0)])
        assert scorer.score(make(), []) == pytest.approx(1.0, abs=1e-12)

    def test_nested_composites_are_scored_recursively(self) -> None:
        inner = CompositeScorer([(Constant(1.0), 1.0), (Constant(0.0), 1.0)])
        outer = CompositeScorer([(inner, 1.0), (Constant(1.0), 1.0)])
        assert outer.score(make(), []) == 0.75
        assert outer.score_all([make(), make()]) == [0.75, 0.75]

    def test_children_are_invoked_in_entry_order(self) -> None:
        calls: list[str] = []

        class Recording(BaseScorer):
            def __init__(self, name: str) -> None:
                self.name = name

            def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
                calls.append(self.name)
                return 0.0

        scorer = CompositeScorer(
            [(Recording("a"), 1.0), (Recording("b"), 1.0), (Recording("c"), 1.0)]
        )
        scorer.score(make(), [])
        assert calls == ["a", "b", "c"]

    def test_metadata_key_child_is_just_a_value_in_the_average(self) -> None:
        scorer = CompositeScorer(
            [(ReflexiveScorer(), 1.0), (MetadataKeyScorer("tier", "gold", 1.5), 1.0)]
        )
        gold = make(future_relevance_hint=0.4, metadata={"tier": "gold"})
        plain = make(future_relevance_hint=0.4)
        assert scorer.score_all([gold, plain]) == [pytest.approx(0.95), pytest.approx(0.7)]

    def test_child_batches_are_computed_once_per_pass(self) -> None:
        class CountingRecency(RecencyScorer):
            batches = 0

            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                CountingRecency.batches += 1
                return super().score_all(items)

        items = [make() for _ in range(50)]
        CompositeScorer([(CountingRecency(), 1.0), (KindScorer(), 1.0)]).score_all(items)
        assert CountingRecency.batches == 1

    def test_a_child_subclass_overriding_score_is_scored_through_it(self) -> None:
        class Halves(KindScorer):
            def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
                return 0.5

        items = [make(kind="SystemPrompt"), make(kind="Memory")]
        scorer = CompositeScorer([(Halves(), 1.0), (RecencyScorer(), 1.0)])
        assert scorer.score_all(items) == [0.25, 0.25] == per_item(scorer, items)

    def test_custom_child_without_batch_method_is_scored_per_item(self) -> None:
        counting = CountingScorer(0.5)
        items = [make() for _ in range(7)]
        assert CompositeScorer([(counting, 1.0)]).score_all(items) == [0.5] * 7
        assert counting.calls == 7

    def test_duck_typed_child_is_accepted(self) -> None:
        assert CompositeScorer([(Duck(), 1.0)]).score_all([make()]) == [0.5]

    def test_child_batch_of_wrong_length_is_an_error(self) -> None:
        class Short(BaseScorer):
            def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
                return 0.0

            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                return []

        with pytest.raises(
            ScorerConfigError, match=r"Short.score_all returned 0 scores for 2 items"
        ):
            CompositeScorer([(Short(), 1.0)]).score_all([make(), make()])

    def test_empty_pass_scores_nothing(self) -> None:
        assert CompositeScorer([(RecencyScorer(), 1.0)]).score_all([]) == []


class TestConstruction:
    def test_empty_entries_are_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^CompositeScorer: entries must hold at least one scorer entry",
        ):
            CompositeScorer([])

    def test_none_scorer_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: scorer of entry 1 must not be None$"
        ):
            CompositeScorer([(RecencyScorer(), 1.0), (None, 1.0)])  # type: ignore[list-item]

    @pytest.mark.parametrize("scorer", [42, "recency", object()])
    def test_object_without_score_method_is_rejected(self, scorer: Any) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^CompositeScorer: scorer of entry 0 must have a callable "
            r"score\(item, all_items\) method, got",
        ):
            CompositeScorer([(scorer, 1.0)])

    def test_non_callable_score_attribute_is_rejected(self) -> None:
        class NotAScorer:
            score = 0.5

        with pytest.raises(
            ScorerConfigError, match=r"scorer of entry 0 must have a callable score"
        ):
            CompositeScorer([(NotAScorer(), 1.0)])  # type: ignore[list-item]

    @pytest.mark.parametrize("weight", [0.0, 0, -1.0, -math.inf])
    def test_non_positive_weight_is_rejected(self, weight: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: weight of entry 1 must be > 0, got"
        ) as info:
            CompositeScorer([(RecencyScorer(), 1.0), (PriorityScorer(), weight)])
        assert info.value.field == "weight of entry 1"
        assert info.value.value == weight

    def test_message_names_the_offending_value(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: weight of entry 1 must be > 0, got -1\.0$"
        ):
            CompositeScorer([(RecencyScorer(), 1.0), (PriorityScorer(), -1.0)])

    @pytest.mark.parametrize("weight", [math.nan, math.inf])
    def test_non_finite_weight_is_rejected(self, weight: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: weight of entry 0 must be finite, got"
        ):
            CompositeScorer([(RecencyScorer(), weight)])

    @pytest.mark.parametrize("weight", [True, False, "1.0", None])
    def test_non_number_weight_is_rejected(self, weight: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: weight of entry 0 must be a number, got"
        ):
            CompositeScorer([(RecencyScorer(), weight)])

    def test_overflowing_weight_sum_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^CompositeScorer: the sum of the entry weights must be finite, got inf$",
        ):
            CompositeScorer([(RecencyScorer(), 1e308), (PriorityScorer(), 1e308)])

    @pytest.mark.parametrize(
        "entry", [RecencyScorer(), (RecencyScorer(),), (RecencyScorer(), 1, 2)]
    )
    def test_entry_must_be_a_pair(self, entry: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: entry 0 must be a \(scorer, weight\) pair"
        ):
            CompositeScorer([entry])

    def test_entries_must_be_a_sequence(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^CompositeScorer: entries must be a sequence"
        ):
            CompositeScorer({RecencyScorer(): 1.0})  # type: ignore[arg-type]

    def test_integer_weights_are_accepted(self) -> None:
        assert [
            w for _, w in CompositeScorer([(RecencyScorer(), 1), (KindScorer(), 3)]).entries
        ] == [
            0.25,
            0.75,
        ]

    def test_entries_are_read_only(self) -> None:
        scorer = CompositeScorer([(RecencyScorer(), 1.0)])
        assert isinstance(scorer.entries, tuple)
        with pytest.raises(AttributeError):
            scorer.entries = ()  # type: ignore[misc]

    def test_children_are_the_entry_scorers(self) -> None:
        a, b = RecencyScorer(), KindScorer()
        assert CompositeScorer([(a, 1.0), (b, 2.0)]).children() == (a, b)


class TestCycleDetection:
    def test_cycle_through_a_custom_child_is_rejected(self) -> None:
        loop = Loop()
        inner = CompositeScorer([(loop, 1.0)])
        loop.target = inner  # mutation after construction closes the loop
        with pytest.raises(
            CycleError,
            match=r"^CompositeScorer: cycle detected: scorer CompositeScorer@0x[0-9a-f]+ appears "
            r"in its own dependency graph \(CompositeScorer@.* -> Loop@.* -> CompositeScorer@",
        ) as info:
            CompositeScorer([(inner, 1.0)])
        assert info.value.value is inner
        assert isinstance(info.value, ScorerConfigError)

    def test_cycle_through_a_scaled_scorer_is_rejected(self) -> None:
        loop = Loop()
        scaled = ScaledScorer(loop)
        loop.target = scaled
        with pytest.raises(CycleError, match=r"scorer ScaledScorer@0x[0-9a-f]+ appears"):
            CompositeScorer([(RecencyScorer(), 1.0), (scaled, 1.0)])

    def test_custom_scorer_listing_itself_is_rejected(self) -> None:
        loop = Loop()
        loop.target = loop
        with pytest.raises(CycleError, match=r"scorer Loop@0x[0-9a-f]+ appears"):
            CompositeScorer([(loop, 1.0)])

    def test_shared_child_is_not_a_cycle(self) -> None:
        shared = RecencyScorer()
        left = CompositeScorer([(shared, 1.0)])
        right = ScaledScorer(shared)
        scorer = CompositeScorer([(left, 1.0), (right, 1.0), (shared, 1.0), (left, 2.0)])
        assert len(scorer.entries) == 4

    def test_structurally_equal_composites_are_not_a_cycle(self) -> None:
        a = CompositeScorer([(RecencyScorer(), 1.0)])
        b = CompositeScorer([(RecencyScorer(), 1.0)])
        CompositeScorer([(a, 1.0), (CompositeScorer([(b, 1.0)]), 1.0)])

    def test_nesting_up_to_the_limit_builds_and_scores(self) -> None:
        scorer: Any = RecencyScorer()
        for _ in range(MAX_SCORER_DEPTH - 2):
            scorer = ScaledScorer(scorer)
        scorer = CompositeScorer([(scorer, 1.0)])
        items = [make(timestamp=T0 + timedelta(hours=h)) for h in range(3)]
        assert scorer.score_all(items) == [0.0, 0.5, 1.0]  # min-max scaling is idempotent

    @pytest.mark.parametrize("wrap", ["scaled", "composite"])
    def test_nesting_past_the_limit_is_refused_before_it_can_exhaust_the_stack(
        self, wrap: str
    ) -> None:
        scorer: Any = RecencyScorer()
        for _ in range(MAX_SCORER_DEPTH - 1):
            scorer = ScaledScorer(scorer)
        with pytest.raises(
            ScorerConfigError, match=rf"scorers nest 65 levels deep, .*limit of {MAX_SCORER_DEPTH}"
        ) as info:
            ScaledScorer(scorer) if wrap == "scaled" else CompositeScorer([(scorer, 1.0)])
        assert not isinstance(info.value, CycleError)

    def test_deep_duck_typed_children_are_walked_without_recursion(self) -> None:
        class Node:
            def __init__(self, child: Any) -> None:
                self.child = child

            def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
                return 0.0

            def children(self) -> tuple[Any, ...]:
                return () if self.child is None else (self.child,)

        chain: Any = None
        for _ in range(5000):
            chain = Node(chain)
        with pytest.raises(ScorerConfigError, match="scorers nest 5001 levels deep"):
            CompositeScorer([(chain, 1.0)])

    def test_duck_typed_children_without_children_method_are_leaves(self) -> None:
        CompositeScorer([(Duck(), 1.0), (Duck(), 1.0)])


def test_repr_shows_children_and_normalized_weights() -> None:
    scorer = CompositeScorer([(RecencyScorer(), 1.0), (ScaledScorer(PriorityScorer()), 3.0)])
    assert repr(scorer) == (
        "CompositeScorer([(RecencyScorer(), 0.25), (ScaledScorer(PriorityScorer()), 0.75)])"
    )
