"""SelectionReport's wire form round-trips everything a run records, including the
extensions beyond the spec's five fields (count-quota shortfalls, the overflow record)."""

from __future__ import annotations

from diag_scenarios import BUDGET, every_decision_items, every_decision_pipeline, hinted

from cupel import (
    ContextBudget,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    OverflowEvent,
    Pipeline,
    ReflexiveScorer,
    SelectionReport,
    TraceDetailLevel,
)


def test_every_decision_report_round_trips() -> None:
    report = (
        every_decision_pipeline()
        .dry_run(every_decision_items(), BUDGET, detail_level=TraceDetailLevel.ITEM)
        .report
    )
    assert report is not None
    assert SelectionReport.from_json(report.to_json()) == report


def test_overflow_record_round_trips() -> None:
    items = [hinted("pinned", 30, pinned=True), hinted("a", 5)]
    budget = ContextBudget(max_tokens=100, target_tokens=20)
    report = Pipeline(ReflexiveScorer(), overflow_strategy="proceed").dry_run(items, budget).report
    assert report is not None and report.overflow is not None
    parsed = SelectionReport.from_json(report.to_json())
    assert parsed.overflow == report.overflow
    assert isinstance(parsed.overflow, OverflowEvent)
    assert parsed.overflow.tokens_over_budget == 10
    assert parsed == report


def test_shortfalls_round_trip() -> None:
    slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", require_count=2)])
    report = Pipeline(ReflexiveScorer(), slicer).dry_run([hinted("a", 5)], BUDGET).report
    assert report is not None and report.count_requirement_shortfalls
    assert SelectionReport.from_json(report.to_json()) == report
