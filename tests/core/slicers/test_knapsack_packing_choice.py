"""PackingChoice: an item that fits the tokens left but adds nothing to the knapsack's
total (it scores under 0.0001) has a reason of its own, not ``BudgetExceeded``."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    BudgetExceeded,
    ContextBudget,
    ContextItem,
    GreedySlice,
    KnapsackSlice,
    PackingChoice,
    Pipeline,
    ReflexiveScorer,
    SelectionReport,
)
from cupel.diagnostics import exclusion_reason_from_dict

BUDGET = ContextBudget(max_tokens=4000, target_tokens=4000)


def _conversation() -> list[ContextItem]:
    return [
        ContextItem(content="What region is the outage in?", tokens=7),  # no hint: score 0
        ContextItem(content="Runbook", tokens=100, future_relevance_hint=0.9),
        ContextItem(content="Tiny score", tokens=5, future_relevance_hint=0.00005),
    ]


def test_a_zero_scored_item_that_fits_is_a_packing_choice() -> None:
    report = Pipeline(ReflexiveScorer(), KnapsackSlice()).dry_run(_conversation(), BUDGET).report
    assert report is not None
    assert [e.item.content for e in report.included] == ["Runbook"]
    reasons = {e.item.content: e.reason for e in report.excluded}
    assert reasons == {
        "What region is the outage in?": PackingChoice(item_tokens=7, available_tokens=3900),
        "Tiny score": PackingChoice(item_tokens=5, available_tokens=3900),
    }
    assert report.excluded_by(PackingChoice) == list(report.excluded)
    assert reasons["Tiny score"].describe() == (
        "PackingChoice: needs 5 tokens, 3900 available, but its score adds nothing to the "
        "knapsack's total (under 0.0001 counts as 0), so the best-scoring packing leaves it out"
    )


def test_packing_choice_round_trips_through_json() -> None:
    report = Pipeline(ReflexiveScorer(), KnapsackSlice()).dry_run(_conversation(), BUDGET).report
    assert report is not None
    wire = json.loads(report.to_json())
    first = wire["excluded"][0]["reason"]  # "Tiny score" (0.00005) before the 0-scored one
    assert first == {"reason": "PackingChoice", "item_tokens": 5, "available_tokens": 3900}
    assert SelectionReport.from_json(report.to_json()).excluded == report.excluded
    assert exclusion_reason_from_dict(first) == PackingChoice(5, 3900)


def test_greedy_takes_what_the_knapsack_leaves_out() -> None:
    result = Pipeline(ReflexiveScorer(), GreedySlice()).dry_run(_conversation(), BUDGET)
    assert len(result.items) == 3


def test_items_that_do_not_fit_or_lose_to_rounding_stay_budget_exceeded() -> None:
    items = [
        ContextItem(content="a", tokens=60, future_relevance_hint=0.9),
        ContextItem(content="b", tokens=52, future_relevance_hint=0.5),  # rounding
        ContextItem(content="c", tokens=52),  # score 0: left out at any bucket size
        ContextItem(content="d", tokens=500, future_relevance_hint=0.7),  # too big
    ]
    budget = ContextBudget(max_tokens=199, target_tokens=199)
    report = Pipeline(ReflexiveScorer(), KnapsackSlice(100)).dry_run(items, budget).report
    assert report is not None
    reasons = {e.item.content: e.reason for e in report.excluded}
    assert reasons == {
        "b": BudgetExceeded(52, 139),
        "c": PackingChoice(52, 139),
        "d": BudgetExceeded(500, 139),
    }
    assert report.bucket_rounding is not None and report.bucket_rounding.items_left_out == 1


@settings(max_examples=examples(60), deadline=None)
@given(
    tokens=st.lists(st.integers(min_value=-5, max_value=300), min_size=1, max_size=20),
    hints=st.lists(
        st.one_of(st.none(), st.sampled_from([0.0, 0.00009, 0.0001]), st.floats(0, 1)),
        min_size=20,
        max_size=20,
    ),
    target=st.integers(min_value=1, max_value=2000),
    bucket=st.sampled_from([1, 7, 100]),
)
def test_packing_choice_is_exactly_a_fitting_item_of_no_value(
    tokens: list[int], hints: list[float | None], target: int, bucket: int
) -> None:
    items = [
        ContextItem(content=f"i{k}", tokens=t, future_relevance_hint=hints[k])
        for k, t in enumerate(tokens)
    ]
    budget = ContextBudget(max_tokens=target, target_tokens=target)
    report = Pipeline(ReflexiveScorer(), KnapsackSlice(bucket)).dry_run(items, budget).report
    assert report is not None
    available = target - sum(e.item.tokens for e in report.included)
    for entry in report.excluded:
        no_value = entry.score * 10_000 < 1
        fits = 0 < entry.item.tokens <= available
        assert isinstance(entry.reason, PackingChoice) == (fits and no_value), entry
        if isinstance(entry.reason, PackingChoice):
            assert entry.reason == PackingChoice(entry.item.tokens, available)
