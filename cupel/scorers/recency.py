"""Rank scorers: RecencyScorer (by ``timestamp``) and PriorityScorer (by ``priority``).

Both are relative: an item's score is its rank among the *keyed* items of the pass
(the number of keyed items with a strictly smaller key) divided by ``keyed - 1``. A lone
keyed item scores 1.0 and items without a key score 0.0. Ties share a rank.
"""

from __future__ import annotations

from abc import abstractmethod
from bisect import bisect_left
from collections.abc import Sequence
from datetime import datetime
from typing import Generic, TypeVar

from cupel._model import ContextItem
from cupel.scorers._base import BaseScorer

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
    if count <= 1:
        return 1.0
    return rank / (count - 1)


def _rank_scores(keys: Sequence[_K | None]) -> list[float]:
    """Every item's rank score at once: sort the keys once, then ``bisect``, O(N log N)."""
    keyed = sorted(k for k in keys if k is not None)
    if len(keyed) <= 1:
        return [0.0 if k is None else 1.0 for k in keys]
    denominator = len(keyed) - 1
    return [0.0 if k is None else bisect_left(keyed, k) / denominator for k in keys]


class _RankScorer(BaseScorer, Generic[_K]):
    """Shared rank algorithm; subclasses say which field is the key."""

    @staticmethod
    @abstractmethod
    def _key(item: ContextItem) -> _K | None:
        """The ranking key of ``item`` (``None`` if it has none)."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return _rank_score(self._key(item), [self._key(other) for other in all_items])

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        return _rank_scores([self._key(item) for item in items])

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RecencyScorer(_RankScorer[datetime]):
    """More recent ``timestamp`` → higher score; the newest item scores 1.0, the oldest 0.0.

    >>> from datetime import datetime
    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=c, tokens=1, timestamp=datetime(2025, 1, d))
    ...          for c, d in (("old", 1), ("mid", 2), ("new", 3))]
    >>> items.append(ContextItem(content="undated", tokens=1))
    >>> RecencyScorer().score_all(items)
    [0.0, 0.5, 1.0, 0.0]
    """

    @staticmethod
    def _key(item: ContextItem) -> datetime | None:
        return item.timestamp


class PriorityScorer(_RankScorer[int]):
    """Higher ``priority`` → higher score; the highest scores 1.0, the lowest 0.0.

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=str(p), tokens=1, priority=p) for p in (10, 5, 5, 1)]
    >>> PriorityScorer().score_all(items)
    [1.0, 0.3333333333333333, 0.3333333333333333, 0.0]
    """

    @staticmethod
    def _key(item: ContextItem) -> int | None:
        return item.priority
