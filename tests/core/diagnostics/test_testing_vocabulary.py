"""cupel.testing: the 13 assertions of the Cupel.Testing vocabulary, each passing and failing
with the spec's exact message, over reports of real pipeline runs."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from diag_scenarios import BUDGET, every_decision_items, every_decision_pipeline, hinted
from hypothesis import given
from hypothesis import strategies as st

from cupel import (
    BudgetExceeded,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountCapExceeded,
    CupelError,
    Deduplicated,
    ExclusionReason,
    GreedySlice,
    IncludedItem,
    InclusionReason,
    KindScorer,
    Pipeline,
    ReflexiveScorer,
    ScoredTooLow,
    SelectionReport,
    UShapedPlacer,
)
from cupel.diagnostics import UnknownExclusionReason
from cupel.testing import SelectionReportAssertionChain, SelectionReportAssertionError, should


def every_decision_report() -> SelectionReport:
    """Included (placed order): sys (SystemPrompt, 1.0, Pinned), zero (Message, 0.1,
    ZeroToken), dup (Message, 0.6), tool1 (ToolOutput, 0.8) = 25 tokens of max 100.
    Excluded: big (Document, 0.9, PinnedOverride), tool2 (ToolOutput, 0.7, CountCapExceeded),
    note (Message, 0.5, BudgetExceeded 40/35), dup (Message, 0.4, Deduplicated),
    neg (Message, 0.0, NegativeTokens)."""
    report = every_decision_pipeline().dry_run(every_decision_items(), BUDGET).report
    assert report is not None
    return report


def empty_report() -> SelectionReport:
    report = Pipeline(ReflexiveScorer()).dry_run([], BUDGET).report
    assert report is not None
    return report


def u_shaped_report() -> SelectionReport:
    """UShapedPlacer over scores 0.9, 0.5 (a), 0.5 (b), 0.1 places t, b, low, a."""
    items = [hinted("t", 10, 0.9), hinted("a", 10, 0.5), hinted("b", 10, 0.5)]
    items.append(hinted("low", 10, 0.1))
    report = (
        Pipeline(ReflexiveScorer(), GreedySlice(), UShapedPlacer())
        .dry_run(items, ContextBudget(max_tokens=100, target_tokens=100))
        .report
    )
    assert report is not None
    assert [e.item.content for e in report.included] == ["t", "b", "low", "a"]
    return report


def failure(assertion: Callable[[], object]) -> SelectionReportAssertionError:
    with pytest.raises(SelectionReportAssertionError) as err:
        assertion()
    return err.value


def message(assertion: Callable[[], object]) -> str:
    return str(failure(assertion))


@pytest.fixture(scope="module")
def report() -> SelectionReport:
    return every_decision_report()


def content_is(text: str) -> Callable[[ContextItem], bool]:
    return lambda item: item.content == text


class TestChain:
    def test_should_and_report_should_return_chains_over_the_report(
        self, report: SelectionReport
    ) -> None:
        chain = should(report)
        assert isinstance(chain, SelectionReportAssertionChain) and chain.report is report
        assert report.should().report is report

    def test_passing_assertions_return_the_same_chain(self, report: SelectionReport) -> None:
        chain = should(report)
        assert (
            chain.include_item_with_kind("Message")
            .have_at_least_n_exclusions(5)
            .excluded_items_are_sorted_by_score_descending()
            .have_kind_coverage_count(3)
        ) is chain

    def test_failure_is_an_assertion_error_naming_the_assertion(
        self, report: SelectionReport
    ) -> None:
        error = failure(lambda: should(report).have_at_least_n_exclusions(9))
        assert isinstance(error, AssertionError) and isinstance(error, CupelError)
        assert error.assertion == "HaveAtLeastNExclusions"

    def test_a_chain_stops_at_its_first_failing_assertion(self, report: SelectionReport) -> None:
        error = failure(
            lambda: should(report).include_item_with_kind("Nope").have_at_least_n_exclusions(99)
        )
        assert error.assertion == "IncludeItemWithKind"

    def test_should_needs_a_report(self) -> None:
        result = Pipeline(ReflexiveScorer()).run([hinted("a", 1)], BUDGET)
        with pytest.raises(ConfigurationError, match=r"got None \(run with a Diagnostic"):
            should(result.report)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=r"\(pass result\.report\)"):
            should(result)  # type: ignore[arg-type]


class TestIncludeItemWithKind:
    def test_passes_with_any_case_of_an_included_kind(self, report: SelectionReport) -> None:
        should(report).include_item_with_kind("toolOUTPUT").include_item_with_kind("SystemPrompt")

    def test_fails_listing_the_included_kinds(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).include_item_with_kind("Document")) == (
            "IncludeItemWithKind(Document) failed: Included contained 0 items with "
            "Kind=Document. Included had 4 items with kinds: [SystemPrompt, ToolOutput, Message]."
        )

    def test_fails_on_an_empty_window(self) -> None:
        assert message(lambda: should(empty_report()).include_item_with_kind("Message")) == (
            "IncludeItemWithKind(Message) failed: Included contained 0 items with "
            "Kind=Message. Included had 0 items with kinds: []."
        )


class TestIncludeItemMatching:
    def test_passes_when_an_included_item_matches(self, report: SelectionReport) -> None:
        should(report).include_item_matching(lambda e: e.reason is InclusionReason.ZERO_TOKEN)

    def test_fails_with_a_summary_of_the_included_items(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).include_item_matching(
                lambda e: e.score > 0.9 and (e.reason is InclusionReason.SCORED)
            )
        ) == (
            "IncludeItemMatching failed: no item in Included matched the predicate. Included "
            "had 4 items. First 4: [(kind=SystemPrompt, score=1.0, reason=Pinned), "
            "(kind=ToolOutput, score=0.8, reason=Scored), (kind=Message, score=0.6, "
            "reason=Scored), (kind=Message, score=0.1, reason=ZeroToken)]."
        )

    def test_summary_shows_at_most_five_items(self) -> None:
        items = [hinted(f"m{i}", 1, i / 10) for i in range(7)]  # placed best first
        report = Pipeline(ReflexiveScorer()).dry_run(items, BUDGET).report
        assert report is not None
        assert message(lambda: should(report).include_item_matching(lambda e: False)) == (
            "IncludeItemMatching failed: no item in Included matched the predicate. Included "
            "had 7 items. First 5: [(kind=Message, score=0.6, reason=Scored), (kind=Message, "
            "score=0.5, reason=Scored), (kind=Message, score=0.4, reason=Scored), "
            "(kind=Message, score=0.3, reason=Scored), (kind=Message, score=0.2, "
            "reason=Scored)]."
        )

    def test_fails_on_an_empty_window_without_a_summary(self) -> None:
        assert message(lambda: should(empty_report()).include_item_matching(lambda e: True)) == (
            "IncludeItemMatching failed: no item in Included matched the predicate. Included "
            "had 0 items."
        )


class TestIncludeExactlyNItemsWithKind:
    def test_passes_on_the_exact_count_including_zero(self, report: SelectionReport) -> None:
        should(report).include_exactly_n_items_with_kind("message", 2)
        should(report).include_exactly_n_items_with_kind("Document", 0)
        should(empty_report()).include_exactly_n_items_with_kind("Message", 0)

    def test_fails_showing_expected_and_actual(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).include_exactly_n_items_with_kind("ToolOutput", 2)
        ) == (
            "IncludeExactlyNItemsWithKind(ToolOutput, 2) failed: expected 2 items with "
            "Kind=ToolOutput in Included, but found 1. Included had 4 items total."
        )


class TestExcludeItemWithReason:
    @pytest.mark.parametrize(
        "reason",
        [CountCapExceeded, "pinnedoverride", BudgetExceeded(item_tokens=1, available_tokens=2)],
        ids=["class", "name-any-case", "instance-matches-variant-only"],
    )
    def test_passes_for_a_reason_given_as_class_name_or_instance(
        self, report: SelectionReport, reason: ExclusionReason | type[ExclusionReason] | str
    ) -> None:
        should(report).exclude_item_with_reason(reason)

    def test_fails_listing_the_reasons_present(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).exclude_item_with_reason(ScoredTooLow)) == (
            "ExcludeItemWithReason(ScoredTooLow) failed: no excluded item had reason "
            "ScoredTooLow. Excluded had 5 items with reasons: [PinnedOverride, "
            "CountCapExceeded, BudgetExceeded, Deduplicated, NegativeTokens]."
        )

    def test_fails_on_a_report_without_exclusions(self) -> None:
        assert message(lambda: should(empty_report()).exclude_item_with_reason("Deduplicated")) == (
            "ExcludeItemWithReason(Deduplicated) failed: no excluded item had reason "
            "Deduplicated. Excluded had 0 items with reasons: []."
        )

    def test_unknown_reasons_read_from_another_implementation_can_be_asserted(
        self, report: SelectionReport
    ) -> None:
        # A real report, serialized, with one reason renamed as a future version might.
        data = json.loads(report.to_json())
        data["excluded"][0]["reason"] = {"reason": "SemanticDuplicate", "similarity": 0.97}
        parsed = SelectionReport.from_dict(data)
        should(parsed).exclude_item_with_reason(UnknownExclusionReason("SemanticDuplicate"))
        assert message(lambda: should(parsed).exclude_item_with_reason("PinnedOverride")) == (
            "ExcludeItemWithReason(PinnedOverride) failed: no excluded item had reason "
            "PinnedOverride. Excluded had 5 items with reasons: [SemanticDuplicate, "
            "CountCapExceeded, BudgetExceeded, Deduplicated, NegativeTokens]."
        )


class TestExcludeItemMatchingWithReason:
    def test_passes_when_the_matched_item_has_the_reason(self, report: SelectionReport) -> None:
        should(report).exclude_item_matching_with_reason(content_is("note"), BudgetExceeded)
        should(report).exclude_item_matching_with_reason(content_is("dup"), Deduplicated)

    def test_fails_with_the_reasons_of_the_matched_items(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).exclude_item_matching_with_reason(
                lambda item: item.kind == "message", "PinnedOverride"
            )
        ) == (
            "ExcludeItemMatchingWithReason(reason=PinnedOverride) failed: predicate matched 3 "
            "excluded item(s) but none had reason PinnedOverride. Matched items had reasons: "
            "[BudgetExceeded, Deduplicated, NegativeTokens]."
        )

    def test_fails_when_the_predicate_matches_nothing(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).exclude_item_matching_with_reason(
                content_is("sys"), Deduplicated
            )
        ) == (
            "ExcludeItemMatchingWithReason(reason=Deduplicated) failed: predicate matched 0 "
            "excluded item(s) but none had reason Deduplicated. Matched items had reasons: []."
        )


class TestExcludeItemWithBudgetDetails:
    def test_passes_on_exact_token_numbers(self, report: SelectionReport) -> None:
        should(report).exclude_item_with_budget_details(content_is("note"), 40, 35)

    def test_fails_showing_expected_and_found_numbers(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).exclude_item_with_budget_details(content_is("note"), 40, 30)
        ) == (
            "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with item_tokens=40, "
            "available_tokens=30, but found item_tokens=40, available_tokens=35."
        )

    def test_fails_when_the_matched_item_has_another_reason(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).exclude_item_with_budget_details(content_is("big"), 55, 50)
        ) == (
            "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with item_tokens=55, "
            "available_tokens=50, but no matching item had reason BudgetExceeded. Predicate "
            "matched 1 excluded item(s) with reasons: [PinnedOverride]."
        )


class TestHaveNoExclusionsForKind:
    def test_passes_when_no_excluded_item_has_the_kind(self, report: SelectionReport) -> None:
        should(report).have_no_exclusions_for_kind("SystemPrompt")
        should(empty_report()).have_no_exclusions_for_kind("Message")

    def test_fails_describing_the_highest_scored_one(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).have_no_exclusions_for_kind("MESSAGE")) == (
            "HaveNoExclusionsForKind(MESSAGE) failed: found 3 excluded item(s) with "
            "Kind=MESSAGE. First: score=0.5, reason=BudgetExceeded."
        )


class TestHaveAtLeastNExclusions:
    def test_passes_at_and_below_the_count(self, report: SelectionReport) -> None:
        should(report).have_at_least_n_exclusions(5).have_at_least_n_exclusions(0)
        should(empty_report()).have_at_least_n_exclusions(0)

    def test_fails_above_the_count(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).have_at_least_n_exclusions(6)) == (
            "HaveAtLeastNExclusions(6) failed: expected at least 6 excluded items, but "
            "Excluded had 5."
        )


class TestExcludedItemsAreSortedByScoreDescending:
    def test_passes_on_every_pipeline_report(self, report: SelectionReport) -> None:
        should(report).excluded_items_are_sorted_by_score_descending()
        should(empty_report()).excluded_items_are_sorted_by_score_descending()

    def test_fails_at_the_first_increase(self, report: SelectionReport) -> None:
        # The pipeline always sorts, so an unsorted report cannot come from a run:
        # reverse a real report's exclusions (a hand-edited fixture, as the spec allows).
        unsorted = dataclasses.replace(report, excluded=tuple(reversed(report.excluded)))
        assert message(
            lambda: should(unsorted).excluded_items_are_sorted_by_score_descending()
        ) == (
            "ExcludedItemsAreSortedByScoreDescending failed: item at index 1 (score=0.4) is "
            "higher than item at index 0 (score=0.0). Expected non-increasing scores."
        )


class TestHaveBudgetUtilizationAbove:
    def test_passes_at_the_exact_threshold(self, report: SelectionReport) -> None:
        should(report).have_budget_utilization_above(0.25, BUDGET)  # 25 / 100, exact >=
        should(empty_report()).have_budget_utilization_above(0.0, BUDGET)

    def test_fails_just_above_it(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).have_budget_utilization_above(0.3, BUDGET)) == (
            "HaveBudgetUtilizationAbove(0.3) failed: computed utilization was 0.250000 "
            "(includedTokens=25, budget.MaxTokens=100)."
        )

    def test_denominator_is_max_tokens_not_target(self, report: SelectionReport) -> None:
        # 25 / target 60 would be 0.4167 and pass
        assert message(lambda: should(report).have_budget_utilization_above(0.4, BUDGET)) == (
            "HaveBudgetUtilizationAbove(0.4) failed: computed utilization was 0.250000 "
            "(includedTokens=25, budget.MaxTokens=100)."
        )

    def test_a_zero_max_tokens_budget_has_zero_utilization(self) -> None:
        zero = ContextBudget(max_tokens=0, target_tokens=0)
        report = Pipeline(ReflexiveScorer()).dry_run([hinted("a", 5)], zero).report
        assert report is not None
        should(report).have_budget_utilization_above(0.0, zero)
        assert message(lambda: should(report).have_budget_utilization_above(0.1, zero)) == (
            "HaveBudgetUtilizationAbove(0.1) failed: computed utilization was 0.000000 "
            "(includedTokens=0, budget.MaxTokens=0)."
        )


class TestHaveKindCoverageCount:
    def test_passes_at_the_distinct_kind_count(self, report: SelectionReport) -> None:
        should(report).have_kind_coverage_count(3).have_kind_coverage_count(0)

    def test_fails_listing_the_distinct_kinds(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).have_kind_coverage_count(4)) == (
            "HaveKindCoverageCount(4) failed: expected at least 4 distinct ContextKind values "
            "in Included, but found 3: [SystemPrompt, ToolOutput, Message]."
        )

    def test_kinds_differing_only_in_case_count_once(self) -> None:
        items = [hinted("a", 1, kind="message"), hinted("b", 1, kind="MESSAGE")]
        report = Pipeline(KindScorer()).dry_run(items, BUDGET).report
        assert report is not None
        assert message(lambda: should(report).have_kind_coverage_count(2)) == (
            "HaveKindCoverageCount(2) failed: expected at least 2 distinct ContextKind values "
            "in Included, but found 1: [message]."
        )


class TestPlaceItemAtEdge:
    def test_passes_for_the_first_or_the_last_item(self, report: SelectionReport) -> None:
        should(report).place_item_at_edge(lambda e: e.item.content == "sys")
        should(report).place_item_at_edge(lambda e: e.item.content == "zero")
        should(u_shaped_report()).place_item_at_edge(lambda e: e.score == 0.9)

    def test_fails_with_the_index_of_an_inner_match(self, report: SelectionReport) -> None:
        assert message(
            lambda: should(report).place_item_at_edge(lambda e: e.item.content == "dup")
        ) == (
            "PlaceItemAtEdge failed: item matching predicate was at index 2 (not at edge). "
            "Edge positions: 0 and 3. Included had 4 items."
        )

    def test_fails_when_nothing_matches(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).place_item_at_edge(lambda e: e.score > 1.0)) == (
            "PlaceItemAtEdge failed: no item in Included matched the predicate."
        )
        assert message(lambda: should(empty_report()).place_item_at_edge(lambda e: True)) == (
            "PlaceItemAtEdge failed: no item in Included matched the predicate."
        )


class TestPlaceTopNScoredAtEdges:
    def test_u_shaped_placement_passes_for_every_n(self) -> None:
        chain = should(u_shaped_report())
        for n in range(5):
            chain.place_top_n_scored_at_edges(n)

    def test_an_item_tied_with_the_nth_score_may_take_its_edge(self) -> None:
        # top-2 by score are t (idx 0) and b (idx 1, tied 0.5 with a); a holds the edge idx 3
        should(u_shaped_report()).place_top_n_scored_at_edges(2)

    def test_fails_listing_top_items_and_edge_positions(self, report: SelectionReport) -> None:
        # chronological placement of untimestamped items (merge order): 1.0, 0.8, 0.6, 0.1
        should(report).place_top_n_scored_at_edges(1)
        assert message(lambda: should(report).place_top_n_scored_at_edges(2)) == (
            "PlaceTopNScoredAtEdges(2) failed: 1 of the top-2 scored items were not at "
            "expected edge positions. Top-2 items (by score): [(kind=SystemPrompt, score=1.0, "
            "idx=0), (kind=ToolOutput, score=0.8, idx=1)]. Expected edge positions: [0, 3]."
        )

    def test_ties_on_the_edges_do_not_excuse_a_higher_item_in_the_middle(self) -> None:
        # chronological: a 0.5, best 0.9, b 0.5, c 0.5 -> edges 0 and 3 hold 0.5 ties,
        # which may stand in for the 2nd-best item, but "best" itself is at index 1
        t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
        hints = [("a", 0.5), ("best", 0.9), ("b", 0.5), ("c", 0.5)]
        items = [
            hinted(content, 10, hint, timestamp=t0 + timedelta(minutes=i))
            for i, (content, hint) in enumerate(hints)
        ]
        report = Pipeline(ReflexiveScorer()).dry_run(items, BUDGET).report
        assert report is not None
        assert [e.item.content for e in report.included] == ["a", "best", "b", "c"]
        assert message(lambda: should(report).place_top_n_scored_at_edges(2)) == (
            "PlaceTopNScoredAtEdges(2) failed: 1 of the top-2 scored items were not at "
            "expected edge positions. Top-2 items (by score): [(kind=Message, score=0.9, "
            "idx=1), (kind=Message, score=0.5, idx=0)]. Expected edge positions: [0, 3]."
        )
        should(report).place_top_n_scored_at_edges(0)

    @given(
        scores=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), max_size=7),
        n=st.integers(0, 7),
    )
    def test_passes_exactly_when_the_edges_hold_the_top_n_scores(
        self, scores: list[float], n: int
    ) -> None:
        # A hand-built fixture (as the spec allows): the assertion passes iff the scores at
        # positions 0, last, 1, last - 1, ... are, as a multiset, the n highest scores.
        report = SelectionReport(
            events=(),
            included=tuple(
                IncludedItem(hinted(f"i{i}", 1), s, InclusionReason.SCORED)
                for i, s in enumerate(scores)
            ),
            excluded=(),
            total_candidates=len(scores),
            total_tokens_considered=len(scores),
        )
        count = len(scores)
        edges = [i // 2 if i % 2 == 0 else count - 1 - i // 2 for i in range(min(n, count))]
        expected = n <= count and sorted(scores[i] for i in edges) == sorted(scores)[count - n :]
        try:
            should(report).place_top_n_scored_at_edges(n)
        except SelectionReportAssertionError:
            assert not expected
        else:
            assert expected

    def test_fails_when_n_exceeds_the_window(self, report: SelectionReport) -> None:
        assert message(lambda: should(report).place_top_n_scored_at_edges(5)) == (
            "PlaceTopNScoredAtEdges(5) failed: 5 edge positions were expected, but Included "
            "had only 4 items."
        )
        should(empty_report()).place_top_n_scored_at_edges(0)


class TestArguments:
    def test_unknown_reason_name_is_rejected_listing_the_variants(
        self, report: SelectionReport
    ) -> None:
        with pytest.raises(ConfigurationError) as err:
            should(report).exclude_item_with_reason("BudgetExceded")
        assert str(err.value).startswith(
            "exclude_item_with_reason: reason must be an exclusion reason class, instance or "
            "name (BudgetExceeded, ScoredTooLow, Deduplicated, "
        )
        assert err.value.field == "reason" and err.value.value == "BudgetExceded"

    @pytest.mark.parametrize(
        ("call", "field"),
        [
            (lambda c: c.have_at_least_n_exclusions(-1), "n"),
            (lambda c: c.have_kind_coverage_count(True), "n"),
            (lambda c: c.include_exactly_n_items_with_kind("Message", 1.5), "n"),
            (lambda c: c.include_item_with_kind(""), "kind"),
            (lambda c: c.include_item_matching("Message"), "predicate"),
            (
                lambda c: c.exclude_item_with_budget_details(lambda i: True, "40", 35),
                "expected_item_tokens",
            ),
            (lambda c: c.have_budget_utilization_above(math.nan, BUDGET), "threshold"),
            (lambda c: c.have_budget_utilization_above(0.5, 100), "budget"),
        ],
    )
    def test_invalid_arguments_name_the_field(
        self,
        report: SelectionReport,
        call: Callable[[SelectionReportAssertionChain], object],
        field: str,
    ) -> None:
        with pytest.raises(ConfigurationError) as err:
            call(should(report))
        assert err.value.field == field
