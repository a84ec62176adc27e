"""Property-based invariants of the whole pipeline (hypothesis), over every slicer/placer."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    OverflowEvent,
    OverflowStrategy,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    UShapedPlacer,
)
from cupel.diagnostics import InclusionReason

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
KINDS = ("Message", "Document", "ToolOutput", "Memory", "SystemPrompt")

SLICERS = [
    GreedySlice(),
    KnapsackSlice(bucket_size=7),
    QuotaSlice(
        GreedySlice(), [QuotaEntry("Message", require=20.0), QuotaEntry("Document", cap=40.0)]
    ),
    CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", require_count=1, cap_count=2)]),
    CountConstrainedKnapsackSlice(
        [CountQuotaEntry("Memory", require_count=1, cap_count=3)], KnapsackSlice(bucket_size=5)
    ),
]
SCORERS = [
    CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
    CompositeScorer([(PriorityScorer(), 1.0), (FrequencyScorer(), 1.0), (ReflexiveScorer(), 2.0)]),
    ReflexiveScorer(),
]

items_strategy = st.lists(
    st.builds(
        lambda content, tokens, kind, minute, priority, hint, pinned, tags: ContextItem(
            content=content,
            tokens=tokens,
            kind=kind,
            timestamp=None if minute is None else T0 + timedelta(minutes=minute),
            priority=priority,
            future_relevance_hint=hint,
            pinned=pinned,
            tags=tags,
        ),
        content=st.sampled_from([f"c{i}" for i in range(25)]),  # duplicates happen
        tokens=st.integers(min_value=-5, max_value=120),
        kind=st.sampled_from(KINDS),
        minute=st.none() | st.integers(0, 50),
        priority=st.none() | st.integers(-3, 10),
        hint=st.none() | st.floats(0.0, 1.0),
        pinned=st.sampled_from([False, False, False, True]),
        tags=st.lists(st.sampled_from(["a", "B", "c"]), max_size=2).map(tuple),
    ),
    max_size=30,
)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[Pipeline, list[ContextItem], ContextBudget]:
    items = draw(items_strategy)
    max_tokens = draw(st.integers(0, 600))
    target = draw(st.integers(0, max_tokens))
    reserve = draw(st.integers(0, max_tokens // 4))
    pipeline = Pipeline(
        draw(st.sampled_from(SCORERS)),
        draw(st.sampled_from(SLICERS)),
        draw(st.sampled_from([ChronologicalPlacer(), UShapedPlacer()])),
        deduplication=draw(st.booleans()),
        overflow_strategy=draw(st.sampled_from(list(OverflowStrategy))),
    )
    return (
        pipeline,
        items,
        ContextBudget(max_tokens=max_tokens, target_tokens=target, output_reserve=reserve),
    )


def run(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget):  # type: ignore[no-untyped-def]
    events: list[OverflowEvent] = []
    try:
        result = pipeline.dry_run(items, budget, on_overflow=events.append)
    except Exception as exc:  # only the documented, budget-driven errors are allowed
        assert type(exc).__name__ in {"PinnedBudgetError", "OverflowBudgetError"}, repr(exc)
        return None, events
    return result, events


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_pipeline_invariants(case: tuple[Pipeline, list[ContextItem], ContextBudget]) -> None:
    pipeline, items, budget = case
    snapshot = copy.deepcopy(items)
    result, events = run(pipeline, items, budget)
    assert items == snapshot  # never mutated
    if result is None:
        return
    report = result.report
    assert report is not None
    input_ids = {id(i) for i in items}
    out_ids = [id(i) for i in result.items]
    # output ⊆ input, by identity, no duplicates
    assert set(out_ids) <= input_ids and len(out_ids) == len(set(out_ids))
    # pinned (non-negative) items are always present
    pinned = [i for i in items if i.pinned and i.tokens >= 0]
    assert {id(i) for i in pinned} <= set(out_ids)
    # within target (and never above max - reserve) unless Proceed, which then says so
    limit = min(budget.target_tokens, budget.max_tokens - budget.output_reserve)
    assert result.total_tokens == sum(i.tokens for i in result.items)
    if result.total_tokens > limit:
        pinned_tokens = sum(i.tokens for i in pinned)
        allowed = pipeline.overflow_strategy is OverflowStrategy.PROCEED or (
            pipeline.overflow_strategy is OverflowStrategy.TRUNCATE and pinned_tokens > limit
        )
        assert allowed
        if pipeline.overflow_strategy is OverflowStrategy.PROCEED:
            assert len(events) == 1 and result.overflow is events[0]
            assert events[0].tokens_over_budget == result.total_tokens - limit
    else:
        assert events == [] and result.overflow is None
    # never more than max - reserve, except pinned alone (rejected earlier)
    assert result.total_tokens <= budget.max_tokens - budget.output_reserve or (
        pipeline.overflow_strategy is OverflowStrategy.PROCEED
    )
    # report: included in placed order, included + excluded = all candidates
    assert [e.item for e in report.included] == result.items
    assert report.total_candidates == len(items) == len(report.included) + len(report.excluded)
    assert report.total_tokens_considered == sum(i.tokens for i in items)
    every = [id(e.item) for e in report.included] + [id(e.item) for e in report.excluded]
    assert sorted(every) == sorted(id(i) for i in items)
    scores = [e.score for e in report.excluded]
    assert scores == sorted(scores, reverse=True)
    for entry in report.included:
        if entry.item.pinned:
            assert (entry.score, entry.reason) == (1.0, InclusionReason.PINNED)
        elif entry.item.tokens == 0:
            assert entry.reason is InclusionReason.ZERO_TOKEN
        else:
            assert entry.reason is InclusionReason.SCORED
    # deterministic: the same run again gives the same window
    again, _ = run(pipeline, items, budget)
    assert again is not None and [id(i) for i in again.items] == out_ids


@settings(max_examples=examples(150), deadline=None)
@given(scenario())
def test_run_and_dry_run_agree(case: tuple[Pipeline, list[ContextItem], ContextBudget]) -> None:
    pipeline, items, budget = case
    result, _ = run(pipeline, items, budget)
    if result is None:
        return
    plain = pipeline.run(items, budget, on_overflow=lambda e: None)
    assert [id(i) for i in plain.items] == [id(i) for i in result.items]
    assert plain.report is None
