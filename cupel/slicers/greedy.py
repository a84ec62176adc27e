"""GreedySlice: fill the budget by value density (score per token), one pass."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from cupel._fastpath import FloatArray, IntArray, descending_order
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.slicers._base import BaseSlicer, Candidates

__all__ = ["GreedySlice", "greedy_positions"]

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
        items = list(map(_ITEM, scored))
        scores = np.array(list(map(_SCORE, scored)), dtype=np.float64)
        sizes = list(map(_TOKENS, items))
        tokens = np.array(sizes, dtype=np.int64 if sum(map(abs, sizes)) < 2**63 else object)
        positions = greedy_positions(scores, tokens, budget.target_tokens)
        return list(map(items.__getitem__, positions.tolist()))

    def _select_positions(self, candidates: Candidates, budget: ContextBudget) -> IntArray:
        """The greedy selection as candidate positions, in greedy order (the pipeline's
        columns; :func:`greedy_positions`)."""
        return greedy_positions(candidates.scores, candidates.tokens, budget.target_tokens)


_ITEM = itemgetter(0)
_SCORE = itemgetter(1)
_TOKENS = attrgetter("tokens")


def greedy_positions(scores: FloatArray, tokens: npt.NDArray[Any], target: int) -> IntArray:
    """The spec's GREEDY-SLICE as positions, in greedy order: candidates ranked by
    descending density ``score / tokens`` (zero-token items ``sys.float_info.max``; ties
    in input order), negative-token ones never taken. The longest prefix within the
    target is taken at once (a cumulative sum and a binary search); after the first miss,
    only candidates no larger than the tokens left are walked, each taken while it fits.
    ``tokens``: int64, or Python ints (an object array) beyond it."""
    if len(tokens) == 0 or target <= 0:
        return np.zeros(0, dtype=np.intp)
    usable = np.flatnonzero(tokens >= 0)
    sizes = tokens[usable]
    density = np.full(len(usable), _ZERO_TOKEN_DENSITY)
    spread = sizes != 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        density[spread] = scores[usable][spread] / sizes[spread]
    ranked = descending_order(density)
    order = usable[ranked]
    ordered = sizes[ranked]
    filled = np.cumsum(ordered)
    fit = int(np.searchsorted(filled, target, side="right"))
    if fit == len(order):
        return order
    remaining = target - (int(filled[fit - 1]) if fit else 0)
    rest = ordered[fit + 1 :]
    small = rest <= remaining
    walked: list[int] = []
    for position, size in zip(order[fit + 1 :][small].tolist(), rest[small].tolist(), strict=True):
        if size <= remaining:
            walked.append(position)
            remaining -= size
    return np.concatenate((order[:fit], np.array(walked, dtype=np.intp)))
