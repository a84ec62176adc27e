"""KnapsackSlice(bucket_size="auto") and the report's ``bucket_rounding``: buckets scale
with the budget (``document_qa`` fills small budgets), and rounding that leaves out an
item fitting the tokens left is reported."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from test_knapsack_slice import reference_knapsack  # the spec's pseudocode

from cupel import (
    BucketRounding,
    ContextBudget,
    ContextItem,
    KnapsackSlice,
    Pipeline,
    ReflexiveScorer,
    SelectionReport,
    SlicerConfigError,
)
from cupel._model import ScoredItem
from cupel.policy import Policy, PolicyError
from cupel.presets import preset
from cupel.slicers.knapsack import AUTO_BUCKETS


def _documents(count: int = 20) -> list[ContextItem]:
    return [
        ContextItem(
            content=f"document {i}",
            tokens=15 + (i * 37) % 40,
            kind="Document",
            future_relevance_hint=1.0 - i / count,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("target", "bucket"),
    [(1, 1), (300, 1), (1000, 1), (1001, 2), (8000, 8), (100_000, 100), (2_000_000, 2000)],
)
def test_auto_bucket_is_the_target_in_at_most_a_thousand_buckets(target: int, bucket: int) -> None:
    slicer = KnapsackSlice("auto")
    assert slicer.bucket_size == "auto"
    assert slicer.bucket_for(ContextBudget(max_tokens=target, target_tokens=target)) == bucket
    assert target // bucket <= AUTO_BUCKETS
    assert KnapsackSlice(7).bucket_for(ContextBudget(max_tokens=target, target_tokens=target)) == 7


@settings(max_examples=examples(60), deadline=None)
@given(
    tokens=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=25),
    scores=st.lists(st.floats(min_value=0, max_value=1), min_size=25, max_size=25),
    target=st.integers(min_value=1, max_value=3000),
)
def test_auto_selects_what_the_spec_selects_with_the_scaled_bucket(
    tokens: list[int], scores: list[float], target: int
) -> None:
    scored = [
        ScoredItem(ContextItem(content=f"i{k}", tokens=t), scores[k]) for k, t in enumerate(tokens)
    ]
    budget = ContextBudget(max_tokens=target, target_tokens=target)
    bucket = max(1, -(-target // AUTO_BUCKETS))
    assert KnapsackSlice("auto").slice(scored, budget) == reference_knapsack(scored, budget, bucket)


def test_document_qa_fills_a_small_budget() -> None:
    # With 100-token buckets a 300-token budget was 3 buckets: every 26-54 token document
    # took a whole bucket, and 48 of 300 tokens were used.
    budget = ContextBudget(max_tokens=300, target_tokens=300)
    result = preset("document_qa").build().dry_run(_documents(), budget)
    assert result.total_tokens >= 280
    assert result.report is not None and result.report.bucket_rounding is None
    coarse = Pipeline.from_policy(
        preset("document_qa").replace(slicer={"type": "knapsack", "bucket_size": 100})
    ).dry_run(_documents(), budget)
    assert coarse.total_tokens < 150  # what the fixed bucket did


def test_the_report_says_when_rounding_left_tokens_unused() -> None:
    items = [
        ContextItem(content="a", tokens=60, future_relevance_hint=0.9),
        ContextItem(content="b", tokens=52, future_relevance_hint=0.5),
    ]
    budget = ContextBudget(max_tokens=199, target_tokens=199)
    report = Pipeline(ReflexiveScorer(), KnapsackSlice(100)).dry_run(items, budget).report
    assert report is not None
    assert [e.item.content for e in report.included] == ["a"]
    # 199 tokens are 1 bucket; "a" takes it: "b" (52 tokens) fits the 139 left, not a bucket
    assert report.bucket_rounding == BucketRounding(
        bucket_size=100, unused_tokens=139, items_left_out=1
    )
    assert "left 139 tokens unused and 1 item out" in report.bucket_rounding.describe()
    wire = json.loads(report.to_json())
    assert wire["bucket_rounding"] == {
        "bucket_size": 100,
        "unused_tokens": 139,
        "items_left_out": 1,
    }
    assert SelectionReport.from_dict(wire).bucket_rounding == report.bucket_rounding
    auto = Pipeline(ReflexiveScorer(), KnapsackSlice("auto")).dry_run(items, budget).report
    assert auto is not None and auto.bucket_rounding is None
    assert "bucket_rounding" not in auto.to_dict()
    assert sorted(e.item.content for e in auto.included) == ["a", "b"]


def test_no_rounding_note_when_nothing_fitting_was_left_out() -> None:
    items = [ContextItem(content="a", tokens=90), ContextItem(content="b", tokens=150)]
    budget = ContextBudget(max_tokens=200, target_tokens=200)
    report = Pipeline(ReflexiveScorer(), KnapsackSlice(100)).dry_run(items, budget).report
    assert report is not None and report.bucket_rounding is None  # "b" does not fit 110


def test_policy_round_trips_auto_and_refuses_other_words() -> None:
    policy = preset("document_qa")
    assert policy.to_dict()["slicer"] == {"type": "knapsack", "bucket_size": "auto"}
    assert Policy.from_toml(policy.to_toml()) == policy
    slicer = policy.build().slicer
    assert isinstance(slicer, KnapsackSlice) and slicer.bucket_size == "auto"
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict({"scorer": "kind", "slicer": {"type": "knapsack", "bucket_size": "big"}})
    assert (
        str(caught.value) == "slicer.bucket_size: must be a positive integer or 'auto', got 'big'"
    )
    with pytest.raises(SlicerConfigError, match="bucket_size must be a positive integer"):
        KnapsackSlice("Auto")  # type: ignore[arg-type]
