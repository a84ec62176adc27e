"""Bad input to a run is one clear error, never a traceback from deep in a stage; and the
report accounts for every input position, the same object listed twice included."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from cupel import (
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    DiagnosticTraceCollector,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    Pipeline,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    ScoreError,
    TraceDetailLevel,
    UShapedPlacer,
    effective_budget,
)
from cupel.diagnostics import BudgetExceeded, InclusionReason

BUDGET = ContextBudget(max_tokens=100, target_tokens=100)


def items(count: int = 3, tokens: int = 10) -> list[ContextItem]:
    return [ContextItem(content=f"c{i}", tokens=tokens) for i in range(count)]


class Returns:
    """A custom scorer returning a fixed value for every item."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> Any:
        return self.value

    def __repr__(self) -> str:
        return "Returns()"


# -- items ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 42, "some text", b"bytes", {"content": "x"}])
def test_items_that_are_not_a_sequence_of_items_are_a_configuration_error(bad: Any) -> None:
    for run in (Pipeline(KindScorer()).run, Pipeline(KindScorer()).dry_run):
        with pytest.raises(ConfigurationError, match=r"^Pipeline\.run: items must be a sequence"):
            run(bad, BUDGET)


def test_a_single_item_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="got ContextItem"):
        Pipeline(KindScorer()).run(items(1)[0], BUDGET)  # type: ignore[arg-type]


def test_a_generator_works_with_every_collector() -> None:
    given = items(4)
    plain = Pipeline(KindScorer()).run(iter(given), BUDGET)
    traced = Pipeline(KindScorer()).dry_run((i for i in given), BUDGET)  # type: ignore[arg-type]
    assert [id(i) for i in plain.items] == [id(i) for i in given]
    assert traced.report is not None and traced.report.total_candidates == 4


# -- scores ---------------------------------------------------------------------------------

NOT_SCORES = [None, "0.5", 1j, 10**400, -(10**400), True, [0.5], Fraction(10**400, 1)]
NOT_SCORE_IDS = ["None", "str", "complex", "huge-int", "huge-negative-int", "bool", "list", "huge"]


@pytest.mark.parametrize("value", NOT_SCORES, ids=NOT_SCORE_IDS)
def test_a_custom_scorer_returning_a_non_score_is_a_score_error(value: Any) -> None:
    scorer = Returns(value)
    for pipeline in (
        Pipeline(scorer),
        Pipeline(CompositeScorer([(scorer, 1.0), (KindScorer(), 1.0)])),
        Pipeline(ScaledScorer(scorer), placer=UShapedPlacer()),
    ):
        for run in (pipeline.run, pipeline.dry_run):
            with pytest.raises(
                ScoreError, match=r"scorer Returns\(\) returned .* for item 'c0'"
            ) as info:
                run(items(), BUDGET)
            assert info.value.scorer is scorer and info.value.item is not None
            assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", NOT_SCORES, ids=NOT_SCORE_IDS)
def test_per_item_composite_and_scaled_scores_check_their_children_too(value: Any) -> None:
    pass_ = items()
    for scorer in (CompositeScorer([(Returns(value), 1.0)]), ScaledScorer(Returns(value))):
        with pytest.raises(ScoreError):
            scorer.score(pass_[0], pass_)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        (np.float32(0.25), 0.25),
        (np.int64(3), 3.0),
        (Fraction(1, 4), 0.25),
        (math.inf, math.inf),
    ],
    ids=repr,
)
def test_real_numbers_that_fit_a_double_are_scores(value: Any, expected: float) -> None:
    result = Pipeline(Returns(value)).dry_run(items(2), BUDGET)
    assert result.report is not None
    assert [e.score for e in result.report.included] == [expected, expected]
    assert all(type(e.score) is float for e in result.report.included)


def test_nan_scores_are_scores_and_take_the_list_route() -> None:
    result = Pipeline(Returns(math.nan)).dry_run(items(2), BUDGET)
    assert result.report is not None and all(math.isnan(e.score) for e in result.report.included)


def test_a_batch_of_the_wrong_length_is_a_score_error() -> None:
    class Short:
        def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
            return 0.0

        def score_all(self, all_items: Sequence[ContextItem]) -> list[float]:
            return [0.0]

    with pytest.raises(ScoreError, match=r"returned 1 scores for 3 items"):
        Pipeline(Short()).run(items(), BUDGET)


def test_a_built_in_subclass_overriding_score_is_scored_through_it() -> None:
    class Halves(KindScorer):
        def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
            return 0.5

    class Preset(KindScorer):  # overrides nothing the batch stands for
        def __init__(self) -> None:
            super().__init__({"Document": 2.0})

    pass_ = [ContextItem(content="d", tokens=1, kind="Document"), *items(1)]
    assert Halves().score_all(pass_) == [0.5, 0.5]
    result = Pipeline(Halves()).dry_run(pass_, BUDGET)
    assert result.report is not None and [e.score for e in result.report.included] == [0.5, 0.5]
    composite = CompositeScorer([(Halves(), 1.0), (Preset(), 1.0)])
    assert composite.score_all(pass_) == [1.25, 0.25] == [composite.score(i, pass_) for i in pass_]
    assert Preset().score_all(pass_) == [2.0, 0.0]


# -- budgets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slicer", [GreedySlice(), QuotaSlice(GreedySlice(), [QuotaEntry("Message", 10)])]
)
def test_budgets_beyond_the_float_range_with_a_safety_margin_run(slicer: Any) -> None:
    huge = 10**400
    budget = ContextBudget(
        max_tokens=huge, target_tokens=huge, estimation_safety_margin_percent=5.0
    )
    effective = effective_budget(budget, 7)
    # the spec's float multiplier, applied exactly (a float product cannot be formed)
    assert effective.target_tokens == math.floor((huge - 7) * Fraction(1.0 - 5.0 / 100.0))
    result = Pipeline(KindScorer(), slicer).run(items(), budget)
    assert result.total_tokens == 30


@pytest.mark.parametrize("tokens", [0, 1, 99, 10**6, 2**53 - 1, 2**53 + 1, 10**300])
@pytest.mark.parametrize("margin", [0.5, 5.0, 12.5, 33.3, 99.9])
def test_the_safety_margin_is_the_spec_float_product_wherever_a_float_holds(
    tokens: int, margin: float
) -> None:
    budget = ContextBudget(
        max_tokens=tokens, target_tokens=tokens, estimation_safety_margin_percent=margin
    )
    expected = math.floor(tokens * (1.0 - margin / 100.0))
    assert effective_budget(budget, 0).max_tokens == expected


def test_a_knapsack_over_a_budget_beyond_the_float_range_is_refused_clearly() -> None:
    huge = ContextBudget(max_tokens=10**400, target_tokens=10**400)
    with pytest.raises(Exception, match="KnapsackSlice DP table too large") as info:
        Pipeline(KindScorer(), KnapsackSlice()).run(items(), huge)
    assert type(info.value).__name__ == "TableTooLargeError"


# -- the same object listed more than once --------------------------------------------------


@pytest.mark.parametrize("target", [0, 7, 10, 15, 25, 100])
@pytest.mark.parametrize("placer", [None, UShapedPlacer()])
def test_an_object_listed_twice_is_reported_at_each_position(target: int, placer: Any) -> None:
    twice = ContextItem(content="same", tokens=10, future_relevance_hint=0.9)
    other = ContextItem(content="other", tokens=5, future_relevance_hint=0.1)
    given = [twice, other, twice]
    budget = ContextBudget(max_tokens=100, target_tokens=target)
    pipeline = Pipeline(ReflexiveScorer(), GreedySlice(), placer, deduplication=False)
    result = pipeline.dry_run(given, budget, detail_level=TraceDetailLevel.ITEM)
    report = result.report
    assert report is not None
    assert report.total_candidates == 3 == len(report.included) + len(report.excluded)
    assert sorted(map(id, (e.item for e in (*report.included, *report.excluded)))) == sorted(
        map(id, given)
    )
    assert [id(e.item) for e in report.included] == [id(i) for i in result.items]
    assert sum(i.tokens for i in result.items) == result.total_tokens <= target
    assert result.items.count(twice) == sum(1 for e in report.included if e.item is twice)
    assert [id(i) for i in pipeline.run(given, budget).items] == [id(i) for i in result.items]


def test_an_object_listed_twice_under_a_count_quota_is_reported_twice() -> None:
    twice = ContextItem(content="t", tokens=10, kind="ToolOutput", future_relevance_hint=0.9)
    slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", require_count=1)])
    report = (
        Pipeline(ReflexiveScorer(), slicer, deduplication=False)
        .dry_run([twice, twice], BUDGET)
        .report
    )
    assert report is not None
    assert [e.item for e in report.included] == [twice]
    assert [(e.item, e.reason) for e in report.excluded] == [(twice, BudgetExceeded(10, 90))]
    assert report.total_candidates == 2


def test_an_object_listed_twice_and_selected_twice_is_included_twice() -> None:
    twice = ContextItem(content="t", tokens=10)
    collector = DiagnosticTraceCollector()
    result = Pipeline(RecencyScorer(), deduplication=False).run(
        [twice, twice], BUDGET, collector=collector
    )
    report = collector.build_report()
    assert result.items == [twice, twice] and result.total_tokens == 20
    assert [e.reason for e in report.included] == [InclusionReason.SCORED] * 2
    assert report.excluded == ()
