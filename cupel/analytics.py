"""Analytics over selection reports, and budget simulation over a pipeline.

Report metrics: :func:`budget_utilization`, :func:`kind_diversity`,
:func:`timestamp_coverage` and :func:`quota_utilization`. Budget simulation (built on
``Pipeline.dry_run``): :func:`get_marginal_items` (which items the last ``slack_tokens``
of a budget buy) and :func:`find_min_budget_for` (the smallest budget that selects an
item). Both match items by identity and are deterministic.

>>> from cupel import ContextBudget, ContextItem, Pipeline, PriorityScorer
>>> items = [ContextItem(content=f"p{p}", tokens=30, priority=p) for p in (1, 2, 3)]
>>> pipeline = Pipeline(PriorityScorer())
>>> budget = ContextBudget(max_tokens=100, target_tokens=90)
>>> report = pipeline.dry_run(items, budget).report
>>> budget_utilization(report, budget), kind_diversity(report), timestamp_coverage(report)
(0.9, 1, 0.0)
>>> [i.content for i in get_marginal_items(pipeline, items, budget, slack_tokens=30)]
['p1']
>>> find_min_budget_for(pipeline, items, items[0], search_ceiling=200)
90
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cupel._errors import ConfigurationError, InvalidOperationError, refusal
from cupel._model import ContextBudget, ContextItem, ContextKind
from cupel._pipeline import Pipeline, effective_budget
from cupel._pipeline.probe import BudgetProbe
from cupel.diagnostics._reasons import InclusionReason
from cupel.diagnostics._report import SelectionReport, require_report
from cupel.policy import Policy, resolve_pipeline
from cupel.slicers import QuotaSlice

__all__ = [
    "FIND_MIN_BUDGET_GUARD_MESSAGE",
    "MARGINAL_ITEMS_GUARD_MESSAGE",
    "QuotaUtilization",
    "budget_utilization",
    "find_min_budget_for",
    "get_marginal_items",
    "kind_diversity",
    "quota_utilization",
    "timestamp_coverage",
]

MARGINAL_ITEMS_GUARD_MESSAGE = (
    "GetMarginalItems requires monotonic item inclusion. QuotaSlice produces non-monotonic "
    "inclusion as budget changes shift percentage allocations."
)
"""The spec's exact message for :func:`get_marginal_items` over a QuotaSlice."""

FIND_MIN_BUDGET_GUARD_MESSAGE = (
    "FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and CountQuotaSlice "
    "produce non-monotonic inclusion as budget changes shift allocations. Use a GreedySlice "
    "or KnapsackSlice inner slicer for budget simulation."
)
"""The spec's exact message for :func:`find_min_budget_for` over a quota slicer."""


# ---------------------------------------------------------------------------------------
# Report metrics
# ---------------------------------------------------------------------------------------
def _check_type(owner: str, name: str, value: object, expected: type) -> None:
    if not isinstance(value, expected):
        hint = " (use pipeline.dry_run(...).report)" if expected is SelectionReport else ""
        raise ConfigurationError(
            f"{owner}: {name} must be a {expected.__name__}, got {type(value).__name__}{hint}",
            field=name,
            value=value,
        )


def budget_utilization(report: SelectionReport, budget: ContextBudget) -> float:
    """``sum(included tokens) / budget.max_tokens`` (the spec's denominator: the hard
    ceiling, not the target). A budget with ``max_tokens == 0`` gives 0.0.

    >>> from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer
    >>> report = Pipeline(RecencyScorer()).dry_run(
    ...     [ContextItem(content="a", tokens=25)], ContextBudget(max_tokens=100,
    ...                                                          target_tokens=50)).report
    >>> budget_utilization(report, ContextBudget(max_tokens=100, target_tokens=50))
    0.25
    """
    _check_type("budget_utilization", "report", report, SelectionReport)
    _check_type("budget_utilization", "budget", budget, ContextBudget)
    if budget.max_tokens == 0:
        return 0.0
    return report.included_tokens / budget.max_tokens


def kind_diversity(report: SelectionReport) -> int:
    """The number of distinct kinds among the included items (case-insensitive)."""
    _check_type("kind_diversity", "report", report, SelectionReport)
    return len({entry.item.kind.key for entry in report.included})


def timestamp_coverage(report: SelectionReport) -> float:
    """The fraction of included items that have a timestamp (0.0 for an empty window)."""
    _check_type("timestamp_coverage", "report", report, SelectionReport)
    if not report.included:
        return 0.0
    dated = sum(1 for entry in report.included if entry.item.timestamp is not None)
    return dated / len(report.included)


@dataclass(frozen=True, slots=True)
class QuotaUtilization:
    """How one configured kind fared against its quota.

    ``mode`` is ``"percent"`` (QuotaSlice: ``require``, ``cap`` and ``actual`` are
    percentages of ``target_tokens``, the slice-stage target) or ``"count"`` (count-quota
    slicers: item counts; ``cap`` is ``None`` without a cap). ``tokens`` and ``count``
    describe the included, non-pinned items of the kind (pinned items bypass the slicer
    and its quotas).
    """

    kind: str
    mode: Literal["percent", "count"]
    require: float
    cap: float | None
    actual: float
    tokens: int
    count: int
    target_tokens: int

    @property
    def satisfied(self) -> bool:
        """``actual >= require``."""
        return self.actual >= self.require

    @property
    def within_cap(self) -> bool:
        """``actual <= cap`` (always true without a cap)."""
        return self.cap is None or self.actual <= self.cap

    @property
    def cap_utilization(self) -> float | None:
        """``actual / cap``: ``None`` without a cap; a cap of 0 gives 0.0 when nothing of
        the kind was selected, else infinity."""
        if self.cap is None:
            return None
        if self.cap == 0:
            return 0.0 if self.actual == 0 else math.inf
        return self.actual / self.cap


def _quota_slicer(source: object) -> object:
    slicer: object = source
    if isinstance(source, Pipeline):
        slicer = source.slicer
    elif isinstance(source, Policy):
        slicer = source.build_slicer()
    if isinstance(slicer, QuotaSlice) or getattr(slicer, "is_count_quota", False):
        return slicer
    raise ConfigurationError(
        f"quota_utilization: needs a QuotaSlice, CountQuotaSlice or "
        f"CountConstrainedKnapsackSlice (or a Pipeline or Policy using one), got {source!r}",
        field="slicer_or_policy",
        value=source,
    )


def quota_utilization(
    report: SelectionReport,
    slicer_or_policy: object,
    budget: ContextBudget,
) -> dict[str, QuotaUtilization]:
    """Per configured kind (in configuration order, keyed by its configured spelling), how
    the included items compare with the slicer's quota.

    ``slicer_or_policy`` is a :class:`~cupel.QuotaSlice`, :class:`~cupel.CountQuotaSlice`
    or :class:`~cupel.CountConstrainedKnapsackSlice`, or a Pipeline or Policy using one;
    other slicers raise :class:`~cupel.ConfigurationError`. Only the outermost slicer's
    entries are reported. Pinned items are left out (they bypass the slicer). For percent
    quotas the denominator is the target the slicer saw: ``effective_budget(budget,
    <pinned tokens of the report>).target_tokens`` (0 → ``actual`` 0.0).

    >>> from cupel import (ContextBudget, ContextItem, CountQuotaEntry, CountQuotaSlice,
    ...                    GreedySlice, Pipeline, PriorityScorer)
    >>> slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", 1, cap_count=2)])
    >>> items = [ContextItem(content=f"t{i}", tokens=10, kind="ToolOutput") for i in range(4)]
    >>> budget = ContextBudget(max_tokens=100, target_tokens=100)
    >>> report = Pipeline(PriorityScorer(), slicer).dry_run(items, budget).report
    >>> usage = quota_utilization(report, slicer, budget)["ToolOutput"]
    >>> usage.mode, usage.actual, usage.cap, usage.satisfied, usage.cap_utilization
    ('count', 2.0, 2.0, True, 1.0)
    """
    _check_type("quota_utilization", "report", report, SelectionReport)
    _check_type("quota_utilization", "budget", budget, ContextBudget)
    slicer = _quota_slicer(slicer_or_policy)
    pinned_tokens = 0
    tokens: dict[str, int] = {}
    counts: dict[str, int] = {}
    for included in report.included:
        if included.reason is InclusionReason.PINNED:
            pinned_tokens += included.item.tokens
            continue
        key = included.item.kind.key
        tokens[key] = tokens.get(key, 0) + included.item.tokens
        counts[key] = counts.get(key, 0) + 1
    target = effective_budget(budget, pinned_tokens).target_tokens

    percent = isinstance(slicer, QuotaSlice)
    quotas: list[tuple[ContextKind, float, float | None]]
    if isinstance(slicer, QuotaSlice):
        quotas = [(quota.kind, quota.require, quota.cap) for quota in slicer.quotas]
    else:
        entries: Sequence[Any] = getattr(slicer, "entries", ())
        quotas = [
            (e.kind, float(e.require_count), None if e.cap_count is None else float(e.cap_count))
            for e in entries
        ]
    out: dict[str, QuotaUtilization] = {}
    for kind, require, cap in quotas:
        used, count = tokens.get(kind.key, 0), counts.get(kind.key, 0)
        out[str(kind)] = QuotaUtilization(
            kind=str(kind),
            mode="percent" if percent else "count",
            require=require,
            cap=cap,
            actual=(100.0 * used / target if target > 0 else 0.0) if percent else float(count),
            tokens=used,
            count=count,
            target_tokens=target,
        )
    return out


# ---------------------------------------------------------------------------------------
# Budget simulation
# ---------------------------------------------------------------------------------------
def _check_int(owner: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise refusal(owner, name, "must be an integer", value, typed=True)
    return value


def _slicer_chain(slicer: object) -> list[object]:
    """``slicer`` and the slicers it decorates (``inner``, ``inner.inner``, ...)."""
    chain: list[object] = []
    while slicer is not None and all(slicer is not seen for seen in chain):
        chain.append(slicer)
        slicer = getattr(slicer, "inner", None)
    return chain


def get_marginal_items(
    pipeline: Pipeline | Policy | str,
    items: Sequence[ContextItem],
    budget: ContextBudget,
    slack_tokens: int,
) -> list[ContextItem]:
    """The items selected at ``budget`` but not at a budget ``slack_tokens`` smaller.

    The reduced budget has ``max_tokens`` and ``target_tokens`` lowered by
    ``slack_tokens`` and keeps ``output_reserve``, ``reserved_slots`` and the safety margin.
    Items are compared by identity; the result is in the full run's placed order and holds
    the caller's item objects. ``slack_tokens`` must be an integer in
    ``[0, budget.target_tokens]`` and leave ``max_tokens >= output_reserve``
    (:class:`~cupel.ConfigurationError`). A pipeline whose slicer is a
    :class:`~cupel.QuotaSlice`, or decorates one (a ``CountQuotaSlice`` whose ``inner`` is
    a QuotaSlice, say), raises :class:`~cupel.InvalidOperationError` with the spec's
    message (:data:`MARGINAL_ITEMS_GUARD_MESSAGE`). Errors of the runs (e.g.
    :class:`~cupel.PinnedBudgetError` at the reduced budget) propagate.
    """
    owner = "get_marginal_items"
    runner = resolve_pipeline(pipeline, owner=owner, field="pipeline")
    if any(isinstance(s, QuotaSlice) for s in _slicer_chain(runner.slicer)):
        raise InvalidOperationError(MARGINAL_ITEMS_GUARD_MESSAGE)
    _check_type(owner, "budget", budget, ContextBudget)
    slack = _check_int(owner, "slack_tokens", slack_tokens)
    if slack < 0:
        raise refusal(owner, "slack_tokens", "must be >= 0", slack)
    if slack > budget.target_tokens:
        rule = f"must be <= budget.target_tokens ({budget.target_tokens})"
        raise refusal(owner, "slack_tokens", rule, slack)
    if budget.max_tokens - slack < budget.output_reserve:
        raise ConfigurationError(
            f"{owner}: slack_tokens must leave max_tokens >= output_reserve "
            f"({budget.output_reserve}); max_tokens {budget.max_tokens} - {slack} is "
            f"{budget.max_tokens - slack}",
            field="slack_tokens",
            value=slack,
        )
    reduced = ContextBudget(
        max_tokens=budget.max_tokens - slack,
        target_tokens=budget.target_tokens - slack,
        output_reserve=budget.output_reserve,
        reserved_slots=dict(budget.reserved_slots),
        estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
    )
    primary = require_report(runner.dry_run(items, budget).report)
    margin = require_report(runner.dry_run(items, reduced).report)
    kept = {id(entry.item) for entry in margin.included}
    return [entry.item for entry in primary.included if id(entry.item) not in kept]


def find_min_budget_for(
    pipeline: Pipeline | Policy | str,
    items: Sequence[ContextItem],
    target_item: ContextItem,
    search_ceiling: int,
    *,
    on_probe: Callable[[int], object] | None = None,
) -> int | None:
    """The smallest budget in ``[target_item.tokens, search_ceiling]`` whose dry run
    includes ``target_item``, or ``None``.

    Each probe budget is ``ContextBudget(max_tokens=b, target_tokens=b)`` (no output
    reserve, reserved slots or safety margin): add your output reserve to the answer.
    A binary search: ``None`` when the item is not selected at ``search_ceiling``, else it
    narrows ``[low, search_ceiling]``, ``low`` being ``max(target_item.tokens, tokens of
    the pinned items)``. The answer ``b`` selects the item and ``b - 1`` does not (or is
    below ``low``): the global minimum whenever inclusion is monotonic in the budget, as the
    spec assumes of GreedySlice and KnapsackSlice (true in most cases, not all: a greedy
    fill can drop an item once a bigger, denser one fits).

    ``target_item`` must be one of ``items`` (by identity) and ``search_ceiling`` an
    integer >= ``target_item.tokens`` (:class:`~cupel.ConfigurationError`). Pipelines over
    :class:`~cupel.QuotaSlice` or a count-quota slicer (at the top or as some decorator's
    ``inner``) raise :class:`~cupel.InvalidOperationError` with the spec's message
    (:data:`FIND_MIN_BUDGET_GUARD_MESSAGE`). A negative-token item is never selected: ``None``.
    """
    owner = "find_min_budget_for"
    runner = resolve_pipeline(pipeline, owner=owner, field="pipeline")
    if any(
        isinstance(s, QuotaSlice) or getattr(s, "is_count_quota", False)
        for s in _slicer_chain(runner.slicer)
    ):
        raise InvalidOperationError(FIND_MIN_BUDGET_GUARD_MESSAGE)
    if not any(item is target_item for item in items):
        raise refusal(
            owner, "target_item", "must be an element of items (compared by identity)", target_item
        )
    ceiling = _check_int(owner, "search_ceiling", search_ceiling)
    if ceiling < target_item.tokens:
        rule = f"must be >= target_item.tokens ({target_item.tokens})"
        raise refusal(owner, "search_ceiling", rule, ceiling)
    if target_item.tokens < 0:
        return None
    pinned = sum(item.tokens for item in items if item.pinned and item.tokens >= 0)
    low = max(target_item.tokens, pinned)
    if low > ceiling:
        return None

    probe = BudgetProbe(runner, items) if type(runner) is Pipeline else None

    def included(tokens: int) -> bool:
        if on_probe is not None:
            on_probe(tokens)
        budget = ContextBudget(max_tokens=tokens, target_tokens=tokens)
        if probe is not None:
            return probe.selects(target_item, budget)
        report = require_report(runner.dry_run(items, budget).report)
        return any(entry.item is target_item for entry in report.included)

    return smallest_included(low, ceiling, included)


def smallest_included(low: int, ceiling: int, included: Callable[[int], bool]) -> int | None:
    """The binary search of :func:`find_min_budget_for`: ``None`` unless
    ``included(ceiling)``; else the smallest budget ``b`` in ``[low, ceiling]`` found with
    ``included(b)`` and not ``included(b - 1)`` (or ``b == low``)."""
    if not included(ceiling):
        return None
    below, high = low - 1, ceiling  # invariant: selected at `high`, not at `below`
    while high - below > 1:
        mid = below + (high - below) // 2
        if included(mid):
            high = mid
        else:
            below = mid
    return high
