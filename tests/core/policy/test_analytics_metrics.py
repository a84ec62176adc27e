"""Report metrics and quota utilization computed on real pipeline reports."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from policy_testkit import BUDGET, T0, workload

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    effective_budget,
)
from cupel.analytics import (
    QuotaUtilization,
    budget_utilization,
    kind_diversity,
    quota_utilization,
    timestamp_coverage,
)
from cupel.policy import CountQuotaEntrySpec, CountQuotaSpec, KindSpec, Policy
from cupel.presets import preset


def run(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget = BUDGET):
    report = pipeline.dry_run(items, budget).report
    assert report is not None
    return report


def test_budget_utilization_divides_included_tokens_by_max_tokens() -> None:
    items = workload()
    report = run(preset("chat").build(), items)
    included = sum(e.item.tokens for e in report.included)
    assert included > 0
    assert budget_utilization(report, BUDGET) == included / 400
    # the denominator is max_tokens, not target_tokens
    assert budget_utilization(report, BUDGET) < included / BUDGET.target_tokens


def test_budget_utilization_of_a_zero_budget_is_zero() -> None:
    zero = ContextBudget(max_tokens=0, target_tokens=0)
    items = [ContextItem(content="a", tokens=0, pinned=True), ContextItem(content="b", tokens=1)]
    report = run(Pipeline(RecencyScorer()), items, zero)
    assert [e.item.content for e in report.included] == ["a"]
    assert budget_utilization(report, zero) == 0.0


def test_kind_diversity_counts_distinct_included_kinds_case_insensitively() -> None:
    items = [
        ContextItem(content="a", tokens=1, kind="document"),
        ContextItem(content="b", tokens=1, kind="Document"),
        ContextItem(content="c", tokens=1, kind="TOOLOUTPUT"),
        ContextItem(content="d", tokens=1, kind="ToolOutput"),
        ContextItem(content="e", tokens=500, kind="Memory"),  # excluded: too big
    ]
    report = run(Pipeline(RecencyScorer()), items)
    assert len(report.included) == 4
    assert kind_diversity(report) == 2
    report = run(preset("code_review").build(), workload())
    assert {str(e.item.kind) for e in report.included} == {
        "SystemPrompt",
        "Memory",
        "Message",
        "ToolOutput",
    }
    assert kind_diversity(report) == 4


def test_timestamp_coverage_is_the_dated_share_of_the_window() -> None:
    items = [
        ContextItem(content="dated 1", tokens=5, timestamp=T0),
        ContextItem(content="dated 2", tokens=5, timestamp=T0 - timedelta(hours=1)),
        ContextItem(content="undated", tokens=5),
        ContextItem(content="undated big", tokens=1000),
    ]
    report = run(Pipeline(RecencyScorer()), items)
    assert len(report.included) == 3
    assert timestamp_coverage(report) == 2 / 3


def test_timestamp_coverage_of_an_empty_window_is_zero() -> None:
    report = run(Pipeline(RecencyScorer()), [ContextItem(content="big", tokens=1000)])
    assert report.included == ()
    assert timestamp_coverage(report) == 0.0
    assert kind_diversity(report) == 0


def test_metrics_reject_non_reports() -> None:
    with pytest.raises(ConfigurationError, match="report must be a SelectionReport, got NoneType"):
        budget_utilization(None, BUDGET)  # type: ignore[arg-type]
    report = run(Pipeline(RecencyScorer()), workload())
    with pytest.raises(ConfigurationError, match="budget must be a ContextBudget, got int"):
        budget_utilization(report, 400)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="kind_diversity: report must be"):
        kind_diversity([])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="timestamp_coverage: report must be"):
        timestamp_coverage("x")  # type: ignore[arg-type]


# -- quota utilization --------------------------------------------------------------------
def test_percent_quotas_report_the_share_of_the_slice_target() -> None:
    items = workload()
    items.insert(0, ContextItem(content="pinned rules", tokens=20, pinned=True, kind="Document"))
    slicer = QuotaSlice(
        GreedySlice(),
        [QuotaEntry("document", require=30, cap=40), QuotaEntry("ToolOutput", cap=10)],
    )
    pipeline = Pipeline(KindScorer(), slicer)
    report = run(pipeline, items)
    usage = quota_utilization(report, slicer, BUDGET)
    assert list(usage) == ["document", "ToolOutput"]  # configured spelling and order
    target = effective_budget(BUDGET, 20).target_tokens
    assert target == 280
    doc_tokens = sum(
        e.item.tokens for e in report.included if e.item.kind == "Document" and not e.item.pinned
    )
    tool_tokens = sum(e.item.tokens for e in report.included if e.item.kind == "ToolOutput")
    assert doc_tokens > 0
    assert usage["document"] == QuotaUtilization(
        kind="document",
        mode="percent",
        require=30.0,
        cap=40.0,
        actual=100.0 * doc_tokens / 280,
        tokens=doc_tokens,
        count=sum(1 for e in report.included if e.item.kind == "Document" and not e.item.pinned),
        target_tokens=280,
    )
    assert usage["document"].within_cap
    assert usage["document"].cap_utilization == pytest.approx(usage["document"].actual / 40)
    assert usage["ToolOutput"].actual == 100.0 * tool_tokens / 280
    assert usage["ToolOutput"].actual <= 10.0
    assert usage["ToolOutput"].satisfied  # require 0
    # the same through the pipeline
    assert quota_utilization(report, pipeline, BUDGET) == usage


def test_count_quotas_report_counts_against_require_and_cap() -> None:
    items = workload()
    slicer = CountQuotaSlice(
        GreedySlice(),
        [CountQuotaEntry("Document", require_count=2, cap_count=2), CountQuotaEntry("Memory", 0)],
    )
    report = run(Pipeline(PriorityScorer(), slicer), items)
    usage = quota_utilization(report, slicer, BUDGET)
    docs = [e for e in report.included if e.item.kind == "Document"]
    assert len(docs) == 2
    assert usage["Document"].mode == "count"
    assert (usage["Document"].require, usage["Document"].cap, usage["Document"].actual) == (
        2.0,
        2.0,
        2.0,
    )
    assert usage["Document"].tokens == sum(e.item.tokens for e in docs)
    assert usage["Document"].satisfied and usage["Document"].within_cap
    assert usage["Document"].cap_utilization == 1.0
    memory = usage["Memory"]
    assert memory.cap is None and memory.cap_utilization is None and memory.within_cap


def test_count_quota_shortfall_shows_as_unsatisfied() -> None:
    items = [ContextItem(content=f"doc {i}", tokens=10, kind="Document") for i in range(2)]
    slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", require_count=3)])
    report = run(Pipeline(PriorityScorer(), slicer), items)
    usage = quota_utilization(report, slicer, BUDGET)["Document"]
    assert usage.actual == 2.0 and not usage.satisfied
    assert report.count_requirement_shortfalls[0].satisfied_count == 2


def test_zero_cap_utilization() -> None:
    zero = QuotaUtilization("x", "count", 0.0, 0.0, 0.0, 0, 0, 100)
    over = QuotaUtilization("x", "count", 0.0, 0.0, 1.0, 5, 1, 100)
    assert zero.cap_utilization == 0.0
    assert over.cap_utilization == math.inf and not over.within_cap


def test_policies_and_count_constrained_knapsack_are_accepted() -> None:
    items = workload()
    policy = Policy(
        scorer=KindSpec(),
        slicer=CountQuotaSpec(
            entries=[CountQuotaEntrySpec(kind="ToolOutput", require_count=1, cap_count=2)]
        ),
    )
    report = run(policy.build(), items)
    usage = quota_utilization(report, policy, BUDGET)["ToolOutput"]
    assert usage.actual == sum(1 for e in report.included if e.item.kind == "ToolOutput") == 2
    cck = CountConstrainedKnapsackSlice([CountQuotaEntry("Message", 1, 3)], KnapsackSlice(10))
    report = run(Pipeline(KindScorer(), cck), items)
    messages = sum(1 for e in report.included if e.item.kind == "Message")
    assert 1 <= messages <= 3
    assert quota_utilization(report, cck, BUDGET)["Message"].actual == float(messages)


def test_other_slicers_are_refused_clearly() -> None:
    report = run(Pipeline(RecencyScorer()), workload())
    with pytest.raises(ConfigurationError) as caught:
        quota_utilization(report, GreedySlice(), BUDGET)
    assert str(caught.value) == (
        "quota_utilization: needs a QuotaSlice, CountQuotaSlice or "
        "CountConstrainedKnapsackSlice (or a Pipeline or Policy using one), got GreedySlice()"
    )
    with pytest.raises(ConfigurationError, match="needs a QuotaSlice"):
        quota_utilization(report, preset("chat"), BUDGET)
