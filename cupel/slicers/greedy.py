"""GreedySlice: fill the budget by value density (score per token), one pass."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from cupel._fastpath import FloatArray, IntArray, TokenArray, stable_argsort
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
        only items no larger than the tokens then remaining can still fit; those are
        taken the same way, prefix by prefix, in a few array rounds (see ``_tail``),
        exactly as the per-item loop takes them.
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
    score first, see :meth:`GreedySlice._select_unranked`).

    Only the greedy order's head is sorted when a sample shows where the first miss
    lies (:func:`_head`); the items after it that can still fit are sorted next."""
    target = budget.target_tokens
    tokens = candidates.tokens
    if len(tokens) == 0 or target <= 0:
        return np.zeros(0, dtype=np.intp)
    free = tokens == 0
    keys = np.full(len(tokens), _ZERO_TOKEN_DENSITY)
    with np.errstate(over="ignore", invalid="ignore"):
        np.divide(candidates.scores, tokens, out=keys, where=~free)
    np.negative(keys, out=keys)  # ascending keys: descending density
    scores = candidates.scores if by_score else None
    head = _head(keys, tokens, target)
    if head is None:
        order = stable_argsort(keys, scores)
    else:
        order = head[stable_argsort(keys[head], None if scores is None else scores[head])]
    ordered_tokens = tokens[order]
    filled = np.cumsum(ordered_tokens)
    fit = int(np.searchsorted(filled, target, side="right"))
    if fit == len(order):  # all fit (only when the order is complete)
        return order
    remaining = target - (int(filled[fit - 1]) if fit else 0)
    after = order[fit + 1 :]
    after = after[ordered_tokens[fit + 1 :] <= remaining]
    if head is not None:  # then the items beyond the head that can still fit, in order
        beyond = np.ones(len(keys), dtype=np.bool_)
        beyond[head] = False
        beyond &= tokens <= remaining
        others = np.flatnonzero(beyond)
        others = others[stable_argsort(keys[others], None if scores is None else scores[others])]
        after = np.concatenate((after, others))
    taken = _tail(after, tokens[after], remaining)
    return np.concatenate((order[:fit], taken))


_HEAD_MIN = 4096
"""From this many candidates on, :func:`_head` looks for the head of the greedy order."""

_SAMPLE = 1024
"""About how many candidates :func:`_head` samples."""

_SLACK = 8
"""Sampled candidates :func:`_head` goes past the crossing, besides one in 32."""


def _head(keys: FloatArray, tokens: TokenArray, target: int) -> IntArray | None:
    """The positions, ascending, of a head of the greedy order that holds its first miss:
    every candidate whose key is at most a threshold (so whole runs of equal keys, and
    whatever tie-break orders them, fall on one side), with more than ``target`` tokens
    in all. The threshold comes from an evenly spaced sample of the candidates, a
    little past where the sample's scaled token sum crosses ``target``. ``None`` when
    there are few candidates, or when the head would hold (nearly) all or not more than
    ``target`` tokens: then the whole order is sorted."""
    n = len(keys)
    if n < _HEAD_MIN:
        return None
    step = max(1, n // _SAMPLE)
    sample = keys[::step]
    ranked = np.argsort(sample)
    reached = np.cumsum(tokens[::step][ranked]) * step
    at = int(np.searchsorted(reached, target, side="right")) + len(sample) // 32 + _SLACK
    if at >= len(sample) * 3 // 4:
        return None
    threshold = sample[ranked[at]]
    inside = keys <= threshold
    head = np.flatnonzero(inside)
    if int(tokens[head].sum()) <= target:
        return None
    return head


_TAIL_ROUNDS = 16
"""Array rounds of :func:`_tail` before the rest is walked item by item."""

_TAIL_WALK = 32
"""Below this many candidates left, :func:`_tail` walks them item by item."""


def _tail(positions: IntArray, sizes: TokenArray, remaining: int) -> IntArray:
    """Of ``positions`` (greedy order after the first miss, with their ``sizes``), those
    the per-item loop takes with ``remaining`` tokens left: each item no larger than what
    is then left, in order. In rounds on arrays: drop the items larger than what is left
    (they can never fit again, as it only shrinks), take the longest prefix that fits,
    skip the next item; a few rounds usually leave none. After :data:`_TAIL_ROUNDS`
    rounds, or with few candidates left, the loop itself finishes."""
    rest = positions[sizes <= remaining]
    sizes = sizes[sizes <= remaining]
    taken: list[IntArray] = []
    for _ in range(_TAIL_ROUNDS):
        if len(rest) <= _TAIL_WALK:
            break
        filled = np.cumsum(sizes)
        fit = int(np.searchsorted(filled, remaining, side="right"))
        taken.append(rest[:fit])
        if fit == len(rest):
            return np.concatenate(taken)
        remaining -= int(filled[fit - 1]) if fit else 0
        # rest[fit] does not fit; of the others, only items no larger than what is left can
        keep = sizes[fit + 1 :] <= remaining
        rest = rest[fit + 1 :][keep]
        sizes = sizes[fit + 1 :][keep]
    walked: list[int] = []
    for position, size in zip(rest.tolist(), sizes.tolist(), strict=True):
        if size <= remaining:
            walked.append(position)
            remaining -= size
    taken.append(np.array(walked, dtype=np.intp))
    return np.concatenate(taken)


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
