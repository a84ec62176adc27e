"""QuotaSlice: split the budget across kinds by percentage, then delegate per kind."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from cupel._errors import SlicerConfigError
from cupel._model import ContextBudget, ContextItem, ContextKind, ScoredItem, ascii_fold
from cupel._params import Configurable, Percent
from cupel.diagnostics._outcomes import CapExclusion, CountRequirementShortfall, SliceOutcome
from cupel.slicers._base import (
    BaseSlicer,
    Slicer,
    check_inner,
    entry_kind,
    fail,
    floor_times,
    index_by_kind,
    is_number,
    slice_detailed,
)

__all__ = ["QuotaEntry", "QuotaSlice"]


@dataclass(frozen=True, init=False, repr=False)
class QuotaEntry(Configurable):
    """Percentages of the budget for one kind: at least ``require``, at most ``cap``.

    Both are finite numbers in ``[0, 100]`` with ``require <= cap``. Kinds without an
    entry behave as ``require=0, cap=100``.

    >>> QuotaEntry("Document", require=20, cap=60)
    QuotaEntry('Document', require=20.0, cap=60.0)
    >>> QuotaEntry("Document", require=70, cap=60)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.SlicerConfigError: QuotaEntry: require (70.0) must be <= cap (60.0) for ...
    """

    kind: ContextKind
    require: float
    cap: float

    def __init__(self, kind: str, require: Percent = 0.0, cap: Percent = 100.0) -> None:
        object.__setattr__(self, "kind", entry_kind("QuotaEntry", kind))
        object.__setattr__(self, "require", _percent("require", require))
        object.__setattr__(self, "cap", _percent("cap", cap))
        if self.require > self.cap:
            raise SlicerConfigError(
                f"QuotaEntry: require ({self.require}) must be <= cap ({self.cap}) "
                f"for kind '{self.kind}'",
                field="require",
                value=require,
            )


class QuotaSlice(BaseSlicer):
    """Give each kind a share of ``target_tokens``, then run ``inner`` on each kind alone.

    Items are partitioned by kind (case-insensitively, in first-seen order). Each kind gets
    its ``require`` share, plus a share of the unrequired budget proportional to its
    candidates' total tokens, clamped to its ``cap`` share; every conversion rounds down,
    so a few tokens may stay unused. ``inner`` then selects within
    ``ContextBudget(max_tokens=<cap tokens>, target_tokens=<kind budget>)``. The output
    concatenates the kinds' selections in partition order.

    >>> from cupel._model import ContextBudget, ContextItem, ScoredItem
    >>> from cupel.slicers import GreedySlice
    >>> scored = [ScoredItem(ContextItem(content=f"m{i}", tokens=10), 0.9) for i in range(5)]
    >>> scored += [ScoredItem(ContextItem(content="doc", tokens=10, kind="Document"), 0.1)]
    >>> slicer = QuotaSlice(GreedySlice(), [QuotaEntry("Document", require=20)])
    >>> [i.content for i in slicer.slice(scored, ContextBudget(max_tokens=50, target_tokens=50))]
    ['m0', 'm1', 'm2', 'doc']
    """

    def __init__(self, inner: Slicer, quotas: Sequence[QuotaEntry]) -> None:
        check_inner("QuotaSlice", inner)
        entries = tuple(quotas)
        by_key = index_by_kind("QuotaSlice", "quotas", entries, QuotaEntry, noun="quota")
        total = math.fsum(e.require for e in entries)
        if total > 100.0:
            raise SlicerConfigError(
                f"QuotaSlice: the require percentages must sum to at most 100, got {total}",
                field="quotas",
                value=total,
            )
        self._inner = inner
        self._quotas = entries
        self._by_key = by_key

    @property
    def inner(self) -> Slicer:
        """The slicer run on each kind's partition."""
        return self._inner

    @property
    def quotas(self) -> tuple[QuotaEntry, ...]:
        """The configured per-kind percentages, in configuration order."""
        return self._quotas

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return self.slice_detailed(scored, budget).selected

    def slice_detailed(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        """Like :meth:`slice`; also gathers a count-quota inner's cap exclusions and
        shortfalls. ``inner`` runs once per kind, so a requirement is reported once, and
        only if no partition met it. (Under ``ScarcityBehavior.THROW`` such an inner raises
        in the first partition lacking a required kind: prefer ``DEGRADE`` there.)"""
        target = budget.target_tokens
        if not scored or target <= 0:
            return SliceOutcome([])
        partitions: dict[str, list[ScoredItem]] = {}
        for entry in scored:
            partitions.setdefault(entry.item.kind.key, []).append(entry)
        masses = {key: sum(e.item.tokens for e in items) for key, items in partitions.items()}
        kind_budgets = self._distribute_budget(masses, target)

        selected: list[ContextItem] = []
        exclusions: list[CapExclusion] = []
        short: dict[str, list[CountRequirementShortfall]] = {}
        calls = 0
        for key, items in partitions.items():
            kind_budget = kind_budgets[key]
            if kind_budget <= 0:
                continue
            cap = self._limits(key, target)[1]
            sub_budget = ContextBudget(max_tokens=cap, target_tokens=kind_budget)
            outcome = slice_detailed(self._inner, items, sub_budget)
            calls += 1
            selected.extend(outcome.selected)
            exclusions.extend(outcome.cap_exclusions)
            for shortfall in outcome.shortfalls:
                short.setdefault(ascii_fold(shortfall.kind), []).append(shortfall)
        # Each inner call sees one kind only, so it also reports every *other* required kind
        # as unmet. A requirement is unmet only when no partition met it; then the best
        # partition's count is the satisfied count.
        shortfalls = tuple(
            max(reports, key=attrgetter("satisfied_count"))
            for reports in short.values()
            if len(reports) == calls
        )
        return SliceOutcome(selected, tuple(exclusions), shortfalls)

    def _limits(self, key: str, target: int) -> tuple[int, int]:
        """A kind's require and cap shares of ``target``, in tokens (rounded down)."""
        entry = self._by_key.get(key)
        if entry is None:
            return 0, target
        return floor_times(target, entry.require / 100.0), floor_times(target, entry.cap / 100.0)

    def _distribute_budget(self, masses: dict[str, int], target: int) -> dict[str, int]:
        """The spec's DISTRIBUTE-BUDGET: kind key -> token budget, rounded down."""
        # Every configured kind's require counts, present in the input or not.
        total_required = sum(self._limits(key, target)[0] for key in self._by_key)
        unassigned = max(0, target - total_required)
        limits = {key: self._limits(key, target) for key in masses}
        distributable = sum(masses[key] for key, (require, cap) in limits.items() if cap > require)
        budgets: dict[str, int] = {}
        for key, (require, cap) in limits.items():
            proportional = 0
            if distributable > 0 and cap > require:
                proportional = unassigned * masses[key] // distributable
            budgets[key] = min(require + proportional, cap)
        return budgets


def _percent(name: str, value: Any) -> float:
    if not (is_number(value) and 0.0 <= value <= 100.0):  # NaN and infinities fail too
        raise fail("QuotaEntry", name, "must be a finite percentage between 0 and 100", value)
    return float(value)
