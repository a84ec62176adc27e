"""GreedySlice: fill the budget by value density (score per token), one pass."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.slicers._base import BaseSlicer

__all__ = ["GreedySlice"]

_ZERO_TOKEN_DENSITY = sys.float_info.max


class GreedySlice(BaseSlicer):
    """Take items in descending ``score / tokens`` order while they fit ``target_tokens``.

    Zero-token items have density ``sys.float_info.max`` and are always included. Equal
    densities keep input order (a stable sort), so the result is deterministic. Items that
    do not fit are skipped, never revisited. The output is in greedy (density) order;
    ordering for the window is the placer's job. Negative-token items (the pipeline
    excludes them earlier) are never selected.

    >>> from cupel._model import ContextBudget, ContextItem, ScoredItem
    >>> scored = [ScoredItem(ContextItem(content="long", tokens=80), 0.9),
    ...           ScoredItem(ContextItem(content="short", tokens=10), 0.5),
    ...           ScoredItem(ContextItem(content="free", tokens=0), 0.1)]
    >>> budget = ContextBudget(max_tokens=100, target_tokens=50)
    >>> [i.content for i in GreedySlice().slice(scored, budget)]
    ['free', 'short']
    """

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        if not scored or budget.target_tokens <= 0:
            return []
        keys: list[float] = []
        for entry in scored:
            tokens = entry.item.tokens
            keys.append(-(_ZERO_TOKEN_DENSITY if tokens == 0 else entry.score / tokens))
        # sorted() is stable: equal densities keep ascending input index.
        order = sorted(range(len(scored)), key=keys.__getitem__)
        remaining = budget.target_tokens
        selected: list[ContextItem] = []
        for index in order:
            item = scored[index].item
            tokens = item.tokens
            if tokens == 0:
                selected.append(item)
            elif 0 < tokens <= remaining:
                selected.append(item)
                remaining -= tokens
        return selected

    def __repr__(self) -> str:
        return "GreedySlice()"
