"""GreedySlice: fill the budget by value density (score per token), one pass."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from cupel._fastpath import IntArray, stable_argsort
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.slicers._base import BaseSlicer, Candidates, candidates_of

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
        candidates = candidates_of(scored)
        if candidates is not None:
            return candidates.take(self._select_positions(candidates, budget)).item_list()
        return _greedy(scored, budget.target_tokens)

    def _select_positions(self, candidates: Candidates, budget: ContextBudget) -> IntArray:
        """The greedy selection as candidate positions, in greedy order, computed on arrays.

        Densities are sorted with a stable argsort. Walking that order, every item up to
        the first one that does not fit is taken: the longest prefix whose token sum is
        within the target (a cumulative sum and a binary search). After that first miss
        only items no larger than the tokens then remaining can still fit; those few are
        walked one by one exactly as in the per-item loop.
        """
        return _greedy_positions(candidates, budget, by_score=False)

    def _select_unranked(self, candidates: Candidates, budget: ContextBudget) -> IntArray:
        """:meth:`_select_positions` for candidates given in input order rather than
        ranked (score-descending, ties in input order): equal densities are ordered by
        descending score, then position, which is where the ranking would have put
        them, so the selection is the same as over the ranked candidates. (The
        pipeline then ranks only the selection.)"""
        return _greedy_positions(candidates, budget, by_score=True)


def _greedy_positions(candidates: Candidates, budget: ContextBudget, by_score: bool) -> IntArray:
    """:meth:`GreedySlice._select_positions` (``by_score``: equal densities by descending
    score first, see :meth:`GreedySlice._select_unranked`)."""
    target = budget.target_tokens
    tokens = candidates.tokens
    if len(tokens) == 0 or target <= 0:
        return np.zeros(0, dtype=np.intp)
    free = tokens == 0
    density = np.full(len(tokens), _ZERO_TOKEN_DENSITY)
    with np.errstate(over="ignore", invalid="ignore"):
        np.divide(candidates.scores, tokens, out=density, where=~free)
    keys = -density
    order = stable_argsort(keys)
    if by_score and len(order) > 1:
        ranked = keys[order]
        same = ranked[1:] == ranked[:-1]
        if same.any():  # equal densities: within each run, by descending score
            tied = np.flatnonzero(np.append(False, same) | np.append(same, False))
            run = np.cumsum(np.append(True, ~same))[tied]
            members = order[tied]
            order[tied] = members[np.lexsort((members, -candidates.scores[members], run))]
    ordered_tokens = tokens[order]
    filled = np.cumsum(ordered_tokens)
    fit = int(np.searchsorted(filled, target, side="right"))
    if fit == len(order):
        return order
    remaining = target - (int(filled[fit - 1]) if fit else 0)
    rest = np.flatnonzero(ordered_tokens[fit + 1 :] <= remaining) + (fit + 1)
    taken: list[int] = []
    for position, size in zip(rest.tolist(), ordered_tokens[rest].tolist(), strict=True):
        if size <= remaining:
            taken.append(position)
            remaining -= size
    return np.concatenate((order[:fit], order[taken]))


def _greedy(scored: Sequence[ScoredItem], target: int) -> list[ContextItem]:
    """The spec's GREEDY-SLICE, item by item (for inputs the array path does not take)."""
    keys: list[float] = []
    for entry in scored:
        tokens = entry.item.tokens
        keys.append(-(_ZERO_TOKEN_DENSITY if tokens == 0 else entry.score / tokens))
    # sorted() is stable: equal densities keep ascending input index.
    order = sorted(range(len(scored)), key=keys.__getitem__)
    remaining = target
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
