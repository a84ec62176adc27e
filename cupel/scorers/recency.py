"""Rank scorers: RecencyScorer (by ``timestamp``) and PriorityScorer (by ``priority``).

Both are relative: an item's score is its rank among the *keyed* items of the pass
(the number of keyed items with a strictly smaller key) divided by ``keyed - 1``. A lone
keyed item scores 1.0 and items without a key score 0.0. Ties share a rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np

from cupel._fastpath import strictly_increasing
from cupel._model import ContextItem
from cupel.scorers._base import ArrayScorer, Batches, FloatArray

__all__ = ["PriorityScorer", "RecencyScorer"]

_K = TypeVar("_K", int, datetime)


def _rank_score(key: _K | None, keys: Sequence[_K | None]) -> float:
    """The spec's per-item rank algorithm: O(N)."""
    if key is None:
        return 0.0
    count = 0
    rank = 0
    for other in keys:
        if other is None:
            continue
        count += 1
        if other < key:
            rank += 1
    return 1.0 if count <= 1 else rank / (count - 1)


def rank_scores(keys: Sequence[Any]) -> FloatArray:
    """Every key's rank score at once, in O(N log N): what :func:`_rank_score` gives per key.

    A key's rank, the number of strictly smaller keyed values (equal keys share it, by
    the keys' own equality), is the index of its first occurrence among the sorted keyed
    values; values that already strictly increase (a chronological history) are their
    own sort. ``None`` ranks 0.

    >>> rank_scores([3, None, 1, 3, 2]).tolist()
    [0.6666666666666666, 0.0, 0.0, 0.6666666666666666, 0.3333333333333333]
    """
    n = len(keys)
    present = [key for key in keys if key is not None]
    count = len(present)
    keyed: Any = slice(None) if count == n else [key is not None for key in keys]
    ranks = np.zeros(n)
    if count <= 1:
        ranks[keyed] = 1.0
        return ranks
    if strictly_increasing(present):
        ranks[keyed] = np.arange(count, dtype=np.float64)
    else:
        ordered = sorted(present)
        first_index: dict[Any, int] = dict(
            zip(reversed(ordered), range(count - 1, -1, -1), strict=True)
        )
        ranks[keyed] = np.fromiter(map(first_index.__getitem__, present), np.float64, count)
    ranks /= count - 1
    return ranks


class _RankScorer(ArrayScorer):
    """Shared rank algorithm; subclasses name the key field (``_fields``)."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        key = attrgetter(self._fields[0])
        return _rank_score(key(item), list(map(key, all_items)))

    def _scores_in(self, batches: Batches) -> FloatArray:
        return rank_scores(batches.column(self._fields[0]))


class RecencyScorer(_RankScorer):
    """More recent ``timestamp`` → higher score; the newest item scores 1.0, the oldest 0.0.

    >>> from datetime import datetime
    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=c, tokens=1, timestamp=datetime(2025, 1, d))
    ...          for c, d in (("old", 1), ("mid", 2), ("new", 3))]
    >>> items.append(ContextItem(content="undated", tokens=1))
    >>> RecencyScorer().score_all(items)
    [0.0, 0.5, 1.0, 0.0]
    """

    _fields = ("timestamp",)


class PriorityScorer(_RankScorer):
    """Higher ``priority`` → higher score; the highest scores 1.0, the lowest 0.0.

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=str(p), tokens=1, priority=p) for p in (10, 5, 5, 1)]
    >>> PriorityScorer().score_all(items)
    [1.0, 0.3333333333333333, 0.3333333333333333, 0.0]
    """

    _fields = ("priority",)
