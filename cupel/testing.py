"""Assertions over a :class:`~cupel.SelectionReport`: the spec's Cupel.Testing vocabulary.

``should(report)`` (or ``report.should()``) wraps a report in a
:class:`SelectionReportAssertionChain`; each of its 13 assertions returns the chain, so
they compose, and a failure raises :class:`SelectionReportAssertionError` (an
``AssertionError``, so pytest shows it as a test failure) whose message follows the
spec's template: the assertion's name, what was expected and what the report holds.

===================================================  ====================================
assertion                                            passes when
===================================================  ====================================
``include_item_with_kind(kind)``                     an included item has ``kind``
``include_item_matching(pred)``                      ``pred(IncludedItem)`` for one
``include_exactly_n_items_with_kind(kind, n)``       exactly ``n`` included of ``kind``
``exclude_item_with_reason(reason)``                 an exclusion has that reason variant
``exclude_item_matching_with_reason(pred, reason)``  ``pred(ContextItem)`` and the reason
``exclude_item_with_budget_details(pred, it, at)``   BudgetExceeded with exactly those numbers
``have_no_exclusions_for_kind(kind)``                no excluded item has ``kind``
``have_at_least_n_exclusions(n)``                    ``len(excluded) >= n``
``excluded_items_are_sorted_by_score_descending()``  scores never increase
``have_budget_utilization_above(t, budget)``         included tokens / max_tokens ``>= t``
``have_kind_coverage_count(n)``                      ``>= n`` distinct included kinds
``place_item_at_edge(pred)``                         first or last included item matches
``place_top_n_scored_at_edges(n)``                   top-``n`` scores fill the outer slots
===================================================  ====================================

Kinds compare ASCII case-insensitively. A ``reason`` is an exclusion-reason class
(``BudgetExceeded``), an instance (only its variant counts) or a variant name
(``"BudgetExceeded"``, any case). Thresholds compare exactly, without an epsilon.

>>> from cupel import ContextBudget, ContextItem, Pipeline, PriorityScorer
>>> items = [ContextItem(content="rules", tokens=10, kind="SystemPrompt", pinned=True),
...          ContextItem(content="question", tokens=20, priority=2),
...          ContextItem(content="old log", tokens=90, kind="ToolOutput", priority=1)]
>>> budget = ContextBudget(max_tokens=60, target_tokens=50)
>>> report = Pipeline(PriorityScorer()).dry_run(items, budget).report
>>> _ = (should(report).include_item_with_kind("systemprompt")
...      .exclude_item_with_reason("BudgetExceeded")
...      .have_budget_utilization_above(0.5, budget))
>>> try:
...     should(report).have_no_exclusions_for_kind("ToolOutput")
... except AssertionError as failure:
...     print(failure)  # doctest: +NORMALIZE_WHITESPACE
HaveNoExclusionsForKind(ToolOutput) failed: found 1 excluded item(s) with Kind=ToolOutput.
First: score=0.0, reason=BudgetExceeded.
"""

from __future__ import annotations

from cupel._errors import SelectionReportAssertionError
from cupel._public import publish
from cupel.diagnostics._assertions import ReasonLike, SelectionReportAssertionChain
from cupel.diagnostics._report import SelectionReport

__all__ = [
    "ReasonLike",
    "SelectionReportAssertionChain",
    "SelectionReportAssertionError",
    "should",
]


def should(report: SelectionReport) -> SelectionReportAssertionChain:
    """Start an assertion chain over ``report``.

    >>> should(None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ConfigurationError: should() needs a SelectionReport, got None (run with ...)
    """
    return SelectionReportAssertionChain(report)


publish(__name__, globals(), ["SelectionReportAssertionChain"])
