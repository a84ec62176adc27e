"""Budget probes: one pipeline's window at many budgets over the same items.

Classify, Score, Deduplicate and Sort do not depend on the budget (but for the pinned
check, which a probe repeats), so :class:`BudgetProbe` runs them once and each probe runs
Slice and Place's merge, which decide the window's membership: the items
``pipeline.run(items, budget)`` returns, without a report.

>>> from cupel import ContextBudget, ContextItem, Pipeline, PriorityScorer
>>> items = [ContextItem(content=c, tokens=t, priority=p)
...          for c, t, p in [("a", 30, 3), ("b", 50, 2), ("c", 20, 1)]]
>>> probe = BudgetProbe(Pipeline(PriorityScorer()), items)
>>> [[i.content for i in probe.window(ContextBudget(max_tokens=b, target_tokens=b))]
...  for b in (30, 60, 100)]
[['a'], ['a', 'c'], ['a', 'b', 'c']]
"""

from __future__ import annotations

from collections.abc import Sequence

from cupel._errors import PinnedBudgetError
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline.classify import classify
from cupel._pipeline.deduplicate import deduplicate
from cupel._pipeline.pipeline import Pipeline
from cupel._pipeline.place import merge
from cupel._pipeline.score import score
from cupel._pipeline.slice import slice_items
from cupel._pipeline.sort import sort

__all__ = ["BudgetProbe"]


class BudgetProbe:
    """``pipeline``'s window over ``items`` at any budget (:meth:`window`), scoring,
    deduplicating and sorting once. For :class:`~cupel.Pipeline` itself (a subclass
    may change how a run works: use its ``run`` instead)."""

    __slots__ = ("_classified", "_pipeline", "_ranking")

    def __init__(self, pipeline: Pipeline, items: Sequence[ContextItem]) -> None:
        # The budget only gates the pinned items: check them per probe instead.
        unlimited = ContextBudget(max_tokens=2**62, target_tokens=2**62)
        classified = classify(list(items), unlimited)
        scores = score(pipeline.scorer, classified)
        survivors = deduplicate(classified, scores, pipeline.deduplication)
        self._classified = classified
        self._ranking = sort(classified, scores, survivors)
        self._pipeline = pipeline

    def window(self, budget: ContextBudget) -> list[ContextItem]:
        """The items ``pipeline.run(items, budget)`` selects (in merge order, not placed),
        raising what that run raises (:class:`~cupel.PinnedBudgetError`,
        :class:`~cupel.OverflowBudgetError` under ``THROW``); the pipeline's
        ``on_overflow`` receives an overflow under ``PROCEED`` as in a run."""
        classified = self._classified
        pipeline = self._pipeline
        available = budget.max_tokens - budget.output_reserve
        if classified.pinned_tokens > available:
            raise PinnedBudgetError(classified.pinned_tokens, available)
        sliced = slice_items(pipeline.slicer, classified, self._ranking, budget)
        merged = merge(classified, sliced, budget, pipeline.overflow_strategy, pipeline.on_overflow)
        return merged.items

    def selects(self, item: ContextItem, budget: ContextBudget) -> bool:
        """Whether :meth:`window` at ``budget`` holds ``item`` (by identity), raising what
        it raises."""
        return any(entry is item for entry in self.window(budget))
