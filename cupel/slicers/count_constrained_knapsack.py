"""CountConstrainedKnapsackSlice: per-kind item counts with knapsack-optimal residual packing."""

from __future__ import annotations

from collections.abc import Sequence

from cupel._model import ContextBudget, ScoredItem
from cupel.diagnostics._outcomes import SliceOutcome
from cupel.slicers._base import fail
from cupel.slicers.count_quota import CountQuotaEntry, ScarcityBehavior, _CountQuotaSlicer
from cupel.slicers.knapsack import KnapsackSlice

__all__ = ["CountConstrainedKnapsackSlice"]


class CountConstrainedKnapsackSlice(_CountQuotaSlicer):
    """:class:`~cupel.slicers.CountQuotaSlice` with a :class:`KnapsackSlice` as phase 2.

    Phase 1 commits each entry's ``require_count`` best-scored candidates (shortfalls or
    :class:`~cupel.CountRequirementError` as in CountQuotaSlice). Phase 2 runs
    ``knapsack`` on the rest with ``target_tokens`` reduced by the committed tokens, and
    re-sorts its picks by score descending (ties keep knapsack order) so that phase 3,
    whose per-kind counts start from phase 1, spends each cap on the best items.
    :class:`~cupel.TableTooLargeError` from the knapsack propagates.

    >>> from cupel._model import ContextBudget, ContextItem, ScoredItem
    >>> tool = lambda name, score: ScoredItem(
    ...     ContextItem(content=name, tokens=100, kind="tool"), score)
    >>> scored = [tool("a", 0.9), tool("b", 0.8), tool("c", 0.7), tool("d", 0.6)]
    >>> slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1, cap_count=2)])
    >>> outcome = slicer.slice_detailed(scored, ContextBudget(max_tokens=600, target_tokens=600))
    >>> [i.content for i in outcome.selected], len(outcome.cap_exclusions)
    (['a', 'b'], 2)
    """

    _name = "CountConstrainedKnapsackSlice"
    _uses_knapsack = True

    def __init__(
        self,
        entries: Sequence[CountQuotaEntry],
        knapsack: KnapsackSlice | None = None,
        scarcity: ScarcityBehavior | str = ScarcityBehavior.DEGRADE,
    ) -> None:
        if knapsack is None:
            knapsack = KnapsackSlice()
        elif not isinstance(knapsack, KnapsackSlice):
            rule = "must be a KnapsackSlice"
            raise fail("CountConstrainedKnapsackSlice", "knapsack", rule, knapsack)
        super().__init__(entries, scarcity)
        self._knapsack = knapsack

    @property
    def knapsack(self) -> KnapsackSlice:
        """The knapsack that packs the residual candidates in phase 2."""
        return self._knapsack

    def _distribute(self, residual: list[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        picked = self._knapsack.slice(residual, budget)
        scores = {id(entry.item): entry.score for entry in reversed(residual)}  # first wins
        # sorted() is stable: equal scores keep the knapsack's output order.
        picked.sort(key=lambda item: -scores[id(item)])
        return SliceOutcome(picked)
