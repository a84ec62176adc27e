"""The six-stage pipeline: stage order, budgets, pinned items, dedup, overflow, identity."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest

from cupel._errors import (
    ConfigurationError,
    CupelError,
    ItemError,
    OverflowBudgetError,
    PinnedBudgetError,
)
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem
from cupel._pipeline import Pipeline, effective_budget
from cupel.diagnostics import (
    BudgetExceeded,
    Deduplicated,
    DiagnosticTraceCollector,
    InclusionReason,
    NegativeTokens,
    OverflowEvent,
    PinnedOverride,
    PipelineStage,
    TraceDetailLevel,
)
from cupel.placers import ChronologicalPlacer, UShapedPlacer
from cupel.slicers.greedy import GreedySlice

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


class HintScorer:
    """A custom scorer (only ``score``): the item's future_relevance_hint."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return item.future_relevance_hint or 0.0


def item(
    content: str, tokens: int, hint: float = 0.5, minute: int | None = None, **kw: object
) -> ContextItem:
    ts = T0 + timedelta(minutes=minute) if minute is not None else None
    return ContextItem(
        content=content, tokens=tokens, future_relevance_hint=hint, timestamp=ts, **kw
    )  # type: ignore[arg-type]


def budget(max_tokens: int, target: int | None = None, **kw: object) -> ContextBudget:
    return ContextBudget(
        max_tokens=max_tokens, target_tokens=max_tokens if target is None else target, **kw
    )  # type: ignore[arg-type]


def pipeline(**kw: object) -> Pipeline:
    kw.setdefault("slicer", GreedySlice())
    kw.setdefault("placer", ChronologicalPlacer())
    return Pipeline(HintScorer(), **kw)  # type: ignore[arg-type]


def contents(items: Sequence[ContextItem]) -> list[str]:
    return [i.content for i in items]


class TestEffectiveBudget:
    def test_subtracts_reserve_pinned_and_reserved_slots(self) -> None:
        b = budget(1000, 800, output_reserve=100, reserved_slots={"Memory": 50, "Document": 30})
        eff = effective_budget(b, pinned_tokens=120)
        # max: 1000-100-120-80 = 700; target: 800-120-80 = 600
        assert (eff.max_tokens, eff.target_tokens) == (700, 600)

    def test_target_clamped_to_max(self) -> None:
        eff = effective_budget(budget(100, 100, output_reserve=60), 0)
        assert (eff.max_tokens, eff.target_tokens) == (40, 40)

    def test_floors_at_zero(self) -> None:
        eff = effective_budget(budget(100, 50, reserved_slots={"Message": 500}), 0)
        assert (eff.max_tokens, eff.target_tokens) == (0, 0)

    def test_safety_margin_floors_after_subtraction(self) -> None:
        eff = effective_budget(budget(1000, 999, estimation_safety_margin_percent=10.0), 1)
        # max: floor(999*0.9)=899; target: floor(998*0.9)=898
        assert (eff.max_tokens, eff.target_tokens) == (899, 898)

    def test_slicer_receives_only_max_and_target(self) -> None:
        seen: list[ContextBudget] = []

        class Spy(GreedySlice):
            def slice(self, scored: Sequence[ScoredItem], b: ContextBudget) -> list[ContextItem]:
                seen.append(b)
                return super().slice(scored, b)

        pipeline(slicer=Spy()).run(
            [item("a", 5)], budget(100, 90, output_reserve=5, estimation_safety_margin_percent=50.0)
        )
        assert seen[0] == ContextBudget(max_tokens=47, target_tokens=45)


class TestStages:
    def test_one_stage_event_per_stage_in_order(self) -> None:
        items = [item("a", 5), item("a", 5), item("b", 500), item("neg", -1)]
        report = pipeline().dry_run(items, budget(100)).report
        assert report is not None
        assert [e.stage for e in report.events] == [
            PipelineStage.CLASSIFY,
            PipelineStage.SCORE,
            PipelineStage.DEDUPLICATE,
            PipelineStage.SLICE,
            PipelineStage.PLACE,
        ]
        assert [e.item_count for e in report.events] == [4, 3, 3, 2, 1]
        assert all(e.duration_ms >= 0.0 for e in report.events)

    def test_item_events_precede_their_stage_event(self) -> None:
        items = [item("a", 5), item("a", 5), item("big", 500), item("neg", -1)]
        collector = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        pipeline().run(items, budget(100), collector=collector)
        stages = [(e.stage, e.item_count, e.duration_ms) for e in collector.events]
        # each stage's item events (count 1, 0.0 ms) come before that stage's own event
        for stage in PipelineStage:
            positions = [i for i, s in enumerate(stages) if s[0] == stage]
            assert positions, stage
            *item_positions, stage_position = positions
            assert all(stages[p][1:] == (1, 0.0) for p in item_positions)
            assert all(p < stage_position for p in item_positions)

    def test_stage_level_collector_discards_item_events(self) -> None:
        collector = DiagnosticTraceCollector()
        pipeline().run([item("a", 5), item("b", 500)], budget(100), collector=collector)
        assert len(collector.events) == 5

    def test_zero_items_still_emit_every_stage(self) -> None:
        report = pipeline().dry_run([], budget(10)).report
        assert report is not None
        assert [e.item_count for e in report.events] == [0, 0, 0, 0, 0]
        assert (report.total_candidates, report.included, report.excluded) == (0, (), ())

    def test_sort_is_stable_for_equal_scores(self) -> None:
        items = [item(c, 10, hint=0.5) for c in "abcd"]
        result = pipeline(placer=UShapedPlacer()).run(items, budget(1000))
        # all equal: rank order a, b, c, d → a left, b right, c left, d right
        assert contents(result.items) == ["a", "c", "d", "b"]


class TestPinned:
    def test_pinned_always_included_with_score_one(self) -> None:
        items = [
            item("sys", 50, hint=0.0, pinned=True),
            item("x", 40, hint=0.9),
            item("y", 40, hint=0.8),
        ]
        result = pipeline().dry_run(items, budget(100))
        assert contents(result.items) == ["sys", "x"]
        assert result.report is not None
        pinned = result.report.included[0]
        assert (pinned.score, pinned.reason) == (1.0, InclusionReason.PINNED)

    def test_pinned_budget_error_names_tokens(self) -> None:
        items = [item("sys", 60, pinned=True), item("sys2", 50, pinned=True)]
        with pytest.raises(
            PinnedBudgetError, match="Pinned items require 110 tokens, but only 90 are available"
        ) as e:
            pipeline().run(items, budget(100, 50, output_reserve=10))
        assert (e.value.pinned_tokens, e.value.available_tokens) == (110, 90)
        assert isinstance(e.value, ValueError)

    def test_pinned_check_uses_max_minus_reserve_not_target(self) -> None:
        items = [item("sys", 80, pinned=True)]
        result = pipeline(overflow_strategy="proceed").run(items, budget(100, 50))
        assert contents(result.items) == ["sys"]

    def test_negative_pinned_item_is_excluded_not_pinned(self) -> None:
        items = [item("bad", -3, pinned=True), item("ok", 5)]
        result = pipeline().dry_run(items, budget(10))
        assert contents(result.items) == ["ok"]
        assert result.report is not None
        (excluded,) = result.report.excluded
        assert excluded.reason == NegativeTokens(-3) and excluded.score == 0.0


class TestDeduplication:
    def test_highest_score_survives(self) -> None:
        low, high = item("dup", 5, hint=0.2, minute=1), item("dup", 5, hint=0.9, minute=2)
        result = pipeline().dry_run([low, high], budget(100))
        assert result.items == [high] and result.items[0] is high
        assert result.report is not None
        (excluded,) = result.report.excluded
        assert excluded.item is low and excluded.reason == Deduplicated("dup")

    def test_equal_scores_keep_the_earlier(self) -> None:
        first, second = item("dup", 5, minute=1), item("dup", 5, minute=2)
        assert pipeline().run([first, second], budget(100)).items[0] is first

    def test_comparison_is_byte_exact(self) -> None:
        items = [
            item("Dup", 5),
            item("dup", 5),
            item("dup ", 5),
            item("e\u0301", 5),
            item("\u00e9", 5),
        ]
        assert len(pipeline().run(items, budget(100)).items) == 5

    def test_disabled_keeps_duplicates(self) -> None:
        items = [item("dup", 5), item("dup", 5)]
        assert len(pipeline(deduplication=False).run(items, budget(100)).items) == 2


class TestOverflow:
    def overflowing(self) -> list[ContextItem]:
        # pinned 60 > target 50 but within max 100: the slicer gets effective target 0 and
        # selects nothing; merged = 60 > 50.
        return [
            item("sys", 60, pinned=True, minute=0),
            item("zero", 0, minute=1),
            item("x", 10, minute=2),
        ]

    def test_throw_is_the_default_and_names_tokens(self) -> None:
        with pytest.raises(
            OverflowBudgetError,
            match="Selected items require 60 tokens, exceeding target budget of 50",
        ) as e:
            pipeline().run(self.overflowing(), budget(100, 50))
        assert (e.value.merged_tokens, e.value.target_tokens) == (60, 50)

    def test_truncate_never_drops_pinned(self) -> None:
        result = pipeline(overflow_strategy=OverflowStrategy.TRUNCATE).run(
            self.overflowing(), budget(100, 50)
        )
        assert contents(result.items) == ["sys"]

    def test_truncate_drops_from_the_tail_and_reports_why(self) -> None:
        items = [
            item("sys", 30, pinned=True, minute=0),
            item("a", 15, hint=0.9, minute=1),
            item("b", 15, hint=0.8, minute=2),
        ]

        class TakeAll(GreedySlice):
            def slice(self, scored: Sequence[ScoredItem], b: ContextBudget) -> list[ContextItem]:
                return [s.item for s in scored]

        result = pipeline(slicer=TakeAll(), overflow_strategy="truncate").dry_run(
            items, budget(100, 50)
        )
        assert contents(result.items) == ["sys", "a"]
        assert result.report is not None
        (dropped,) = result.report.excluded
        # 15 would have fitted without the 30 pinned tokens: pinned forced it out
        assert dropped.item.content == "b" and dropped.reason == PinnedOverride("sys")

    def test_truncate_budget_exceeded_when_pinned_not_to_blame(self) -> None:
        items = [item("a", 30, hint=0.9, minute=1), item("b", 30, hint=0.8, minute=2)]

        class TakeAll(GreedySlice):
            def slice(self, scored: Sequence[ScoredItem], b: ContextBudget) -> list[ContextItem]:
                return [s.item for s in scored]

        result = pipeline(slicer=TakeAll(), overflow_strategy="truncate").dry_run(
            items, budget(100, 50)
        )
        assert result.report is not None
        assert result.report.excluded[0].reason == BudgetExceeded(30, 20)

    def test_proceed_delivers_an_overflow_event(self) -> None:
        events: list[OverflowEvent] = []
        result = pipeline(overflow_strategy="proceed").dry_run(
            self.overflowing(), budget(100, 50), on_overflow=events.append
        )
        (event,) = events
        assert event.tokens_over_budget == 10 and event.budget == budget(100, 50)
        assert [i.content for i in event.overflowing_items] == ["sys"]
        assert result.overflow is event
        assert result.report is not None and result.report.overflow is event
        assert contents(result.items) == ["sys"] and result.total_tokens == 60

    def test_proceed_uses_the_constructor_callback(self) -> None:
        events: list[OverflowEvent] = []
        pipeline(overflow_strategy="proceed", on_overflow=events.append).run(
            self.overflowing(), budget(100, 50)
        )
        assert len(events) == 1

    def test_no_event_for_other_strategies(self) -> None:
        events: list[OverflowEvent] = []
        pipeline(overflow_strategy="truncate").run(
            self.overflowing(), budget(100, 50), on_overflow=events.append
        )
        assert events == []


class TestDiagnostics:
    def test_excluded_sorted_by_score_with_stable_ties(self) -> None:
        items = [
            item("neg", -1, hint=0.99),
            item("a", 60, hint=0.5),
            item("b", 60, hint=0.5),
            item("c", 60, hint=0.7),
            item("dup", 5, hint=0.5),
            item("dup", 5, hint=0.5),
        ]
        report = pipeline().dry_run(items, budget(70)).report
        assert report is not None
        scores = [e.score for e in report.excluded]
        assert scores == sorted(scores, reverse=True)
        names = [(e.item.content, e.reason.name) for e in report.excluded]
        # among the 0.5 ties: Deduplicated (stage 3) precedes BudgetExceeded (stage 5)
        assert names == [
            ("dup", "Deduplicated"),
            ("a", "BudgetExceeded"),
            ("b", "BudgetExceeded"),
            ("neg", "NegativeTokens"),
        ]

    def test_budget_exceeded_available_tokens(self) -> None:
        items = [item("fits", 150, hint=1.0), item("too-big", 400, hint=0.0)]
        report = pipeline(deduplication=False).dry_run(items, budget(1000, 200)).report
        assert report is not None
        assert report.excluded[0].reason == BudgetExceeded(item_tokens=400, available_tokens=50)
        assert (report.total_candidates, report.total_tokens_considered) == (2, 550)

    def test_pinned_override_at_slice(self) -> None:
        items = [item("sys", 50, pinned=True), item("big", 60, hint=0.9)]
        report = pipeline().dry_run(items, budget(200, 100)).report
        assert report is not None
        # effective target 50 < 60 <= target - reserve (100): pinned items displaced it
        assert report.excluded[0].reason == PinnedOverride("sys")

    def test_zero_token_inclusion_reason_keeps_its_score(self) -> None:
        report = pipeline().dry_run([item("z", 0, hint=0.3)], budget(10)).report
        assert report is not None
        (inc,) = report.included
        assert (inc.score, inc.reason) == (0.3, InclusionReason.ZERO_TOKEN)

    def test_totals_count_every_input_including_negative(self) -> None:
        items = [item("a", 5), item("n", -7), item("b", 500)]
        report = pipeline().dry_run(items, budget(100)).report
        assert report is not None
        assert report.total_candidates == len(report.included) + len(report.excluded) == 3
        assert report.total_tokens_considered == 498

    def test_null_collector_builds_no_report(self) -> None:
        assert pipeline().run([item("a", 5)], budget(10)).report is None

    def test_collector_is_per_run(self) -> None:
        collector = DiagnosticTraceCollector()
        pipeline().run([item("a", 5)], budget(10), collector=collector)
        with pytest.raises(CupelError, match="use a new collector per run"):
            pipeline().run([item("a", 5)], budget(10), collector=collector)

    def test_report_json_wire_format(self) -> None:
        report = pipeline().dry_run([item("a", 5), item("b", 500)], budget(10)).report
        assert report is not None
        wire = report.to_dict()
        assert wire["excluded"][0]["reason"] == {
            "reason": "BudgetExceeded",
            "item_tokens": 500,
            "available_tokens": 5,
        }
        assert wire["included"][0]["reason"] == {"reason": "Scored"}
        assert "message" not in wire["events"][0]
        assert type(report).from_json(report.to_json()).to_dict() == wire


class TestIdentityAndInputs:
    def test_returns_the_same_objects(self) -> None:
        items = [item("a", 5, minute=1), item("b", 5, minute=0)]
        result = pipeline().run(items, budget(100))
        assert result.items[0] is items[1] and result.items[1] is items[0]

    def test_inputs_are_not_mutated(self) -> None:
        items = [item("a", 5, minute=1, metadata={"k": [1]}), item("b", 500), item("a", 5)]
        snapshot = copy.deepcopy(items)
        ids = [id(i) for i in items]
        pipeline().dry_run(items, budget(100))
        assert items == snapshot and [id(i) for i in items] == ids

    def test_total_tokens(self) -> None:
        assert pipeline().run([item("a", 5), item("b", 7)], budget(100)).total_tokens == 12


class TestBadInput:
    def test_non_item_in_items(self) -> None:
        with pytest.raises(ItemError, match=r"items\[1\] must be a ContextItem, got dict"):
            pipeline().run([item("a", 1), {"content": "x"}], budget(10))  # type: ignore[list-item]

    def test_budget_must_be_a_budget(self) -> None:
        with pytest.raises(ConfigurationError, match="budget must be a ContextBudget, got int"):
            pipeline().run([], 100)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("param", "value", "message"),
        [
            ("scorer", None, "scorer must be a scorer"),
            ("slicer", object(), "slicer must be a slicer"),
            ("placer", 3, "placer must be a placer"),
        ],
    )
    def test_stage_objects_validated_at_construction(
        self, param: str, value: object, message: str
    ) -> None:
        kwargs: dict[str, object] = {
            "scorer": HintScorer(),
            "slicer": GreedySlice(),
            "placer": ChronologicalPlacer(),
            param: value,
        }
        with pytest.raises(ConfigurationError, match=message):
            Pipeline(**kwargs)  # type: ignore[arg-type]

    def test_bad_overflow_strategy(self) -> None:
        with pytest.raises(ConfigurationError, match="overflow_strategy must be one of"):
            pipeline(overflow_strategy="explode")

    def test_bad_deduplication_flag(self) -> None:
        with pytest.raises(ConfigurationError, match="deduplication must be a bool, got 'yes'"):
            pipeline(deduplication="yes")

    def test_slicer_returning_foreign_items_is_caught(self) -> None:
        class Rogue(GreedySlice):
            def slice(self, scored: Sequence[ScoredItem], b: ContextBudget) -> list[ContextItem]:
                return [ContextItem(content="invented", tokens=1)]

        with pytest.raises(CupelError, match="not among its candidates"):
            pipeline(slicer=Rogue()).run([item("a", 1)], budget(10))

    def test_placer_dropping_items_is_caught(self) -> None:
        class Lossy(ChronologicalPlacer):
            def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
                return []

        with pytest.raises(CupelError, match="must return exactly the items"):
            pipeline(placer=Lossy()).run([item("a", 1)], budget(10))


class CountingNullCollector:
    """A disabled collector that records every call the pipeline makes to it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @property
    def is_enabled(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        def record(*args: object, **kwargs: object) -> None:
            self.calls.append(name)

        return record


def test_disabled_collector_receives_no_calls() -> None:
    collector = CountingNullCollector()
    items = [item("a", 5), item("a", 5), item("b", 500), item("n", -1), item("p", 1, pinned=True)]
    result = pipeline().run(items, budget(100), collector=collector)  # type: ignore[arg-type]
    assert collector.calls == []  # no events, decisions or reports are built for it
    assert result.report is None


def test_window_never_exceeds_max_minus_reserve_even_when_target_is_higher() -> None:
    # Count quotas commit required items regardless of the slicer's budget. With target above
    # max - reserve, overflow is checked against the lower ceiling, so the spec's "never more
    # than max_tokens - output_reserve" holds (found by the property test).
    from cupel.slicers import CountQuotaEntry, CountQuotaSlice

    items = [
        item("sys-a", 22, pinned=True, minute=0),
        item("sys-b", 59, pinned=True, minute=1),
        item("tool", 85, minute=2, kind="ToolOutput"),
    ]
    slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", require_count=1)])
    tight = ContextBudget(max_tokens=166, target_tokens=166, output_reserve=1)
    with pytest.raises(OverflowBudgetError, match="166 tokens, exceeding target budget of 165"):
        pipeline(slicer=slicer).run(items, tight)
    kept = pipeline(slicer=slicer, overflow_strategy="truncate").run(items, tight)
    assert contents(kept.items) == ["sys-a", "sys-b"] and kept.total_tokens == 81
