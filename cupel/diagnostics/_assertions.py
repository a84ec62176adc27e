"""The Cupel.Testing vocabulary's implementation (public as :mod:`cupel.testing`).

:class:`SelectionReportAssertionChain` holds the 13 assertions; :class:`ReportAssertions`
gives a report its ``should()``. The chain reads only a report's ``included`` and
``excluded`` entries, so it sits below :mod:`cupel.diagnostics._report`, which builds on
it (the report never imports the testing module, and the testing module never imports
the report).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import NoReturn, TypeAlias

from cupel._errors import ConfigurationError, SelectionReportAssertionError, refusal
from cupel._model import ContextBudget, ContextItem, ContextKind, ascii_fold
from cupel.diagnostics._entries import ExcludedItem, IncludedItem
from cupel.diagnostics._reasons import (
    _VARIANTS,
    BudgetExceeded,
    ExclusionReason,
    UnknownExclusionReason,
)

__all__ = ["ReasonLike", "ReportAssertions", "SelectionReportAssertionChain"]

ReasonLike: TypeAlias = ExclusionReason | type[ExclusionReason] | str
"""An exclusion reason argument: a variant class, an instance, or a variant name."""

_SUMMARY_LIMIT = 5


class ReportAssertions:
    """What gives a :class:`~cupel.SelectionReport` its :meth:`should` (a report is
    anything with ``included`` and ``excluded`` entries)."""

    __slots__ = ()
    included: tuple[IncludedItem, ...]
    excluded: tuple[ExcludedItem, ...]

    def should(self) -> SelectionReportAssertionChain:
        """Assertions over this report (the Cupel.Testing vocabulary; see
        :mod:`cupel.testing`).

        >>> from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer
        >>> report = Pipeline(RecencyScorer()).dry_run([ContextItem(content="a", tokens=3)],
        ...     ContextBudget(max_tokens=10, target_tokens=10)).report
        >>> report.should().include_item_with_kind("Message").have_at_least_n_exclusions(0)
        SelectionReportAssertionChain(included=1, excluded=0)
        """
        return SelectionReportAssertionChain(self)


class SelectionReportAssertionChain:
    """The 13 assertions of the Cupel.Testing vocabulary over one report.

    Every assertion returns this chain unchanged when it passes and raises
    :class:`SelectionReportAssertionError` when it fails. Invalid arguments (a negative
    count, a non-callable predicate, an unknown reason name) raise
    :class:`~cupel.ConfigurationError` instead.
    """

    __slots__ = ("report",)

    def __init__(self, report: ReportAssertions) -> None:
        if not isinstance(report, ReportAssertions):
            hint = (
                " (run with a DiagnosticTraceCollector or use pipeline.dry_run() to get one)"
                if report is None
                else " (pass result.report)"
                if hasattr(report, "report")
                else ""
            )
            raise ConfigurationError(
                f"should() needs a SelectionReport, got {report!r}{hint}",
                field="report",
                value=report,
            )
        self.report = report

    def __repr__(self) -> str:
        return (
            f"SelectionReportAssertionChain(included={len(self.report.included)}, "
            f"excluded={len(self.report.excluded)})"
        )

    # -- Inclusion ---------------------------------------------------------------------
    def include_item_with_kind(self, kind: ContextKind | str) -> SelectionReportAssertionChain:
        """At least one included item has ``kind`` (IncludeItemWithKind)."""
        wanted = _kind("include_item_with_kind", kind)
        included = self.report.included
        if not any(e.item.kind == wanted for e in included):
            _fail(
                "IncludeItemWithKind",
                f"IncludeItemWithKind({kind}) failed: Included contained 0 items with "
                f"Kind={kind}. Included had {len(included)} items with kinds: "
                f"[{', '.join(_distinct_kinds(e.item for e in included))}].",
            )
        return self

    def include_item_matching(
        self, predicate: Callable[[IncludedItem], bool]
    ) -> SelectionReportAssertionChain:
        """At least one :class:`~cupel.IncludedItem` satisfies ``predicate``
        (IncludeItemMatching)."""
        _callable("include_item_matching", predicate)
        included = self.report.included
        if not any(predicate(e) for e in included):
            message = (
                f"IncludeItemMatching failed: no item in Included matched the predicate. "
                f"Included had {len(included)} items."
            )
            if included:
                shown = included[:_SUMMARY_LIMIT]
                summary = ", ".join(
                    f"(kind={e.item.kind}, score={e.score}, reason={e.reason.value})" for e in shown
                )
                message += f" First {len(shown)}: [{summary}]."
            _fail("IncludeItemMatching", message)
        return self

    def include_exactly_n_items_with_kind(
        self, kind: ContextKind | str, n: int
    ) -> SelectionReportAssertionChain:
        """Exactly ``n`` included items have ``kind`` (IncludeExactlyNItemsWithKind)."""
        wanted = _kind("include_exactly_n_items_with_kind", kind)
        _count("include_exactly_n_items_with_kind", n)
        included = self.report.included
        actual = sum(1 for e in included if e.item.kind == wanted)
        if actual != n:
            _fail(
                "IncludeExactlyNItemsWithKind",
                f"IncludeExactlyNItemsWithKind({kind}, {n}) failed: expected {n} items with "
                f"Kind={kind} in Included, but found {actual}. Included had {len(included)} "
                f"items total.",
            )
        return self

    # -- Exclusion ---------------------------------------------------------------------
    def exclude_item_with_reason(self, reason: ReasonLike) -> SelectionReportAssertionChain:
        """At least one excluded item has the ``reason`` variant (ExcludeItemWithReason)."""
        name = _reason_arg("exclude_item_with_reason", reason)
        excluded = self.report.excluded
        if not any(_name(e.reason) == name for e in excluded):
            _fail(
                "ExcludeItemWithReason",
                f"ExcludeItemWithReason({name}) failed: no excluded item had reason {name}. "
                f"Excluded had {len(excluded)} items with reasons: [{_reasons(excluded)}].",
            )
        return self

    def exclude_item_matching_with_reason(
        self, predicate: Callable[[ContextItem], bool], reason: ReasonLike
    ) -> SelectionReportAssertionChain:
        """An excluded item satisfies ``predicate`` (over the
        :class:`~cupel.ContextItem`) and has the ``reason`` variant
        (ExcludeItemMatchingWithReason)."""
        _callable("exclude_item_matching_with_reason", predicate)
        name = _reason_arg("exclude_item_matching_with_reason", reason)
        matched = [e for e in self.report.excluded if predicate(e.item)]
        if not any(_name(e.reason) == name for e in matched):
            _fail(
                "ExcludeItemMatchingWithReason",
                f"ExcludeItemMatchingWithReason(reason={name}) failed: predicate matched "
                f"{len(matched)} excluded item(s) but none had reason {name}. Matched items "
                f"had reasons: [{_reasons(matched)}].",
            )
        return self

    def exclude_item_with_budget_details(
        self,
        predicate: Callable[[ContextItem], bool],
        expected_item_tokens: int,
        expected_available_tokens: int,
    ) -> SelectionReportAssertionChain:
        """An excluded item satisfies ``predicate`` and has ``BudgetExceeded`` with exactly
        these ``item_tokens`` and ``available_tokens`` (ExcludeItemWithBudgetDetails)."""
        method = "exclude_item_with_budget_details"
        _callable(method, predicate)
        _integer(method, "expected_item_tokens", expected_item_tokens)
        _integer(method, "expected_available_tokens", expected_available_tokens)
        matched = [e for e in self.report.excluded if predicate(e.item)]
        budget_hits = [e.reason for e in matched if isinstance(e.reason, BudgetExceeded)]
        if any(
            r.item_tokens == expected_item_tokens
            and r.available_tokens == expected_available_tokens
            for r in budget_hits
        ):
            return self
        expected = (
            f"ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with "
            f"item_tokens={expected_item_tokens}, available_tokens={expected_available_tokens}"
        )
        if budget_hits:
            first = budget_hits[0]
            _fail(
                "ExcludeItemWithBudgetDetails",
                f"{expected}, but found item_tokens={first.item_tokens}, "
                f"available_tokens={first.available_tokens}.",
            )
        _fail(
            "ExcludeItemWithBudgetDetails",
            f"{expected}, but no matching item had reason BudgetExceeded. Predicate matched "
            f"{len(matched)} excluded item(s) with reasons: [{_reasons(matched)}].",
        )

    def have_no_exclusions_for_kind(self, kind: ContextKind | str) -> SelectionReportAssertionChain:
        """No excluded item has ``kind`` (HaveNoExclusionsForKind)."""
        wanted = _kind("have_no_exclusions_for_kind", kind)
        hits = [e for e in self.report.excluded if e.item.kind == wanted]
        if hits:
            first = hits[0]
            _fail(
                "HaveNoExclusionsForKind",
                f"HaveNoExclusionsForKind({kind}) failed: found {len(hits)} excluded item(s) "
                f"with Kind={kind}. First: score={first.score}, reason={_name(first.reason)}.",
            )
        return self

    # -- Aggregate -----------------------------------------------------------------------
    def have_at_least_n_exclusions(self, n: int) -> SelectionReportAssertionChain:
        """``len(excluded) >= n`` (HaveAtLeastNExclusions)."""
        _count("have_at_least_n_exclusions", n)
        actual = len(self.report.excluded)
        if actual < n:
            _fail(
                "HaveAtLeastNExclusions",
                f"HaveAtLeastNExclusions({n}) failed: expected at least {n} excluded items, "
                f"but Excluded had {actual}.",
            )
        return self

    def excluded_items_are_sorted_by_score_descending(self) -> SelectionReportAssertionChain:
        """Excluded scores never increase (ExcludedItemsAreSortedByScoreDescending)."""
        excluded = self.report.excluded
        for i in range(len(excluded) - 1):
            si, si1 = excluded[i].score, excluded[i + 1].score
            if not si >= si1:
                _fail(
                    "ExcludedItemsAreSortedByScoreDescending",
                    f"ExcludedItemsAreSortedByScoreDescending failed: item at index {i + 1} "
                    f"(score={si1}) is higher than item at index {i} (score={si}). Expected "
                    f"non-increasing scores.",
                )
        return self

    # -- Budget and coverage ------------------------------------------------------------
    def have_budget_utilization_above(
        self, threshold: float, budget: ContextBudget
    ) -> SelectionReportAssertionChain:
        """``sum(included tokens) / budget.max_tokens >= threshold``
        (HaveBudgetUtilizationAbove; exact comparison)."""
        method = "have_budget_utilization_above"
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or math.isnan(threshold)
        ):
            raise refusal(method, "threshold", "must be a number", threshold)
        if not isinstance(budget, ContextBudget):
            raise refusal(method, "budget", "must be a ContextBudget", budget)
        included_tokens = sum(e.item.tokens for e in self.report.included)
        # A zero max_tokens (allowed here, unlike in the spec) selects nothing: 0.0, as
        # cupel.analytics.budget_utilization reports it.
        actual = included_tokens / budget.max_tokens if budget.max_tokens else 0.0
        if not actual >= threshold:
            _fail(
                "HaveBudgetUtilizationAbove",
                f"HaveBudgetUtilizationAbove({threshold}) failed: computed utilization was "
                f"{actual:.6f} (includedTokens={included_tokens}, "
                f"budget.MaxTokens={budget.max_tokens}).",
            )
        return self

    def have_kind_coverage_count(self, n: int) -> SelectionReportAssertionChain:
        """At least ``n`` distinct kinds among included items (HaveKindCoverageCount)."""
        _count("have_kind_coverage_count", n)
        kinds = _distinct_kinds(e.item for e in self.report.included)
        if len(kinds) < n:
            _fail(
                "HaveKindCoverageCount",
                f"HaveKindCoverageCount({n}) failed: expected at least {n} distinct "
                f"ContextKind values in Included, but found {len(kinds)}: "
                f"[{', '.join(kinds)}].",
            )
        return self

    # -- Ordering ------------------------------------------------------------------------
    def place_item_at_edge(
        self, predicate: Callable[[IncludedItem], bool]
    ) -> SelectionReportAssertionChain:
        """The first or the last included item satisfies ``predicate`` (PlaceItemAtEdge).
        Meaningful only with a placer whose ordering you know."""
        _callable("place_item_at_edge", predicate)
        included = self.report.included
        if included and (predicate(included[0]) or predicate(included[-1])):
            return self
        index = next((i for i, e in enumerate(included) if predicate(e)), None)
        if index is None:
            _fail(
                "PlaceItemAtEdge",
                "PlaceItemAtEdge failed: no item in Included matched the predicate.",
            )
        _fail(
            "PlaceItemAtEdge",
            f"PlaceItemAtEdge failed: item matching predicate was at index {index} (not at "
            f"edge). Edge positions: 0 and {len(included) - 1}. Included had {len(included)} "
            f"items.",
        )

    def place_top_n_scored_at_edges(self, n: int) -> SelectionReportAssertionChain:
        """The ``n`` highest-scored included items occupy the ``n`` outermost positions
        (0, last, 1, last - 1, ...); an item tied with the n-th score may take its slot
        (PlaceTopNScoredAtEdges)."""
        _count("place_top_n_scored_at_edges", n)
        included = self.report.included
        count = len(included)
        if n == 0:
            return self
        if n > count:
            _fail(
                "PlaceTopNScoredAtEdges",
                f"PlaceTopNScoredAtEdges({n}) failed: {n} edge positions were expected, but "
                f"Included had only {count} items.",
            )
        # sorted() is stable: equal scores keep placed order.
        top = sorted(range(count), key=lambda i: -included[i].score)[:n]
        edges = [i // 2 if i % 2 == 0 else count - 1 - i // 2 for i in range(n)]
        edge_set = set(edges)
        floor = included[top[-1]].score
        # Every item scored above the n-th score must sit on an edge; the edges left over
        # may hold any item tied with the n-th score. A top item counts as misplaced when
        # it is above the floor and off the edges, or when the floor ties cannot fill the
        # remaining edges.
        above = [i for i in range(count) if included[i].score > floor]
        off_edge = sum(1 for i in above if i not in edge_set)
        tied_on_edges = sum(1 for i in edges if included[i].score == floor)
        fail_count = off_edge + max(0, (n - len(above)) - tied_on_edges)
        if fail_count:
            top_items = ", ".join(
                f"(kind={included[i].item.kind}, score={included[i].score}, idx={i})" for i in top
            )
            _fail(
                "PlaceTopNScoredAtEdges",
                f"PlaceTopNScoredAtEdges({n}) failed: {fail_count} of the top-{n} scored items "
                f"were not at expected edge positions. Top-{n} items (by score): "
                f"[{top_items}]. Expected edge positions: [{', '.join(map(str, edges))}].",
            )
        return self


# -- helpers ------------------------------------------------------------------------------
def _fail(assertion: str, message: str) -> NoReturn:
    __tracebackhide__ = True
    raise SelectionReportAssertionError(assertion, message)


def _kind(method: str, kind: object) -> ContextKind:
    if isinstance(kind, str) and kind.strip():
        return ContextKind(kind)
    raise refusal(method, "kind", "must be a non-empty ContextKind or string", kind)


def _count(method: str, n: object) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise refusal(method, "n", "must be a non-negative integer", n)


def _integer(method: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise refusal(method, name, "must be an integer", value)


def _callable(method: str, predicate: object) -> None:
    if not callable(predicate):
        raise refusal(method, "predicate", "must be callable", predicate)


_NAMES = {ascii_fold(name): name for name in _VARIANTS}


def _reason_arg(method: str, reason: object) -> str:
    """The variant name an exclusion-reason argument stands for."""
    if isinstance(reason, ExclusionReason):
        return _name(reason)
    if isinstance(reason, type) and issubclass(reason, ExclusionReason) and reason.name:
        return reason.name
    if isinstance(reason, str):
        name = _NAMES.get(ascii_fold(reason))
        if name is not None:
            return name
    allowed = ", ".join(_VARIANTS)
    raise refusal(
        method, "reason", f"must be an exclusion reason class, instance or name ({allowed})", reason
    )


def _name(reason: ExclusionReason) -> str:
    return reason.reason if isinstance(reason, UnknownExclusionReason) else reason.name


def _reasons(entries: Iterable[ExcludedItem]) -> str:
    return ", ".join(dict.fromkeys(_name(e.reason) for e in entries))


def _distinct_kinds(items: Iterable[ContextItem]) -> list[str]:
    """Distinct kinds (case-insensitively) in first-seen order and spelling."""
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.kind.key, str(item.kind))
    return list(seen.values())
