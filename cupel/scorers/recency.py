"""Rank scorers: RecencyScorer (by ``timestamp``) and PriorityScorer (by ``priority``).

Both are relative: an item's score is its rank among the *keyed* items of the pass
(the number of keyed items with a strictly smaller key) divided by ``keyed - 1``. A lone
keyed item scores 1.0 and items without a key score 0.0. Ties share a rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import islice
from operator import attrgetter, lt
from typing import Any, Generic, TypeVar

import numpy as np

from cupel._fastpath import increasing_column, strictly_increasing
from cupel._model import ContextItem
from cupel.scorers._base import ArrayScorer, FloatArray, object_ids

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


def rank_scores(keys: Sequence[Any], increasing: bool | None = None) -> FloatArray:
    """Every key's rank score at once, in O(N log N): what :func:`_rank_score` gives per key.

    Strictly increasing keys (a chronological history) rank by position: one pass of
    ``<`` over neighbours shows it, and stops with :class:`TypeError` at a ``None`` (or
    at keys that do not compare, which the general route raises again). Otherwise the
    keyed values, told from ``None`` by identity (:func:`~cupel.scorers._base.object_ids`),
    are checked for the same order, or ranked by :func:`_int_ranks` (plain ints) or
    :func:`_sorted_ranks`: a key's rank is the number of strictly smaller keys (equal
    keys share it; equality is the keys' own, so equal instants in different time zones
    tie). ``None`` has rank 0, which divides to 0.0. The division ``rank / (keyed - 1)``
    is the same IEEE 754 division as the per-item algorithm's.

    ``increasing``: whether the keys are :func:`~cupel._fastpath.strictly_increasing`,
    when already known (the pass is then not repeated).

    >>> rank_scores([3, None, 1, 3, 2]).tolist()
    [0.6666666666666666, 0.0, 0.0, 0.6666666666666666, 0.3333333333333333]
    """
    n = len(keys)
    ranks: FloatArray
    if n > 1:
        if increasing is None:  # a None, or keys that do not compare: False (raised below)
            increasing = strictly_increasing(keys)
        if increasing:
            ranks = np.arange(n, dtype=np.float64)
            ranks /= n - 1
            return ranks
    present: list[Any]
    if n < _FEW_KEYS:
        keyed = np.fromiter([key is not None for key in keys], dtype=np.bool_, count=n)
        present = [key for key in keys if key is not None]
    else:
        refs = np.fromiter(keys, dtype=object, count=n)
        keyed = object_ids(refs) != id(None)
        present = refs[keyed].tolist()
    count = len(present)
    if count <= 1:
        return keyed.astype(np.float64)
    ranked: FloatArray
    if all(map(lt, present, islice(present, 1, None))):  # strictly increasing, with gaps
        ranked = np.arange(count, dtype=np.float64)
    elif count >= _FEW_INTS and set(map(type, present)) == {int}:  # priorities
        ranked = _int_ranks(present)
    else:
        ranked = _sorted_ranks(present)
    if count == n:
        ranks = ranked
    else:  # unkeyed items rank 0
        ranks = np.zeros(n)
        ranks[keyed] = ranked
    ranks /= count - 1
    return ranks


_FEW_KEYS = 64
"""Keys below which :func:`rank_scores` tells ``None`` apart in Python, not on arrays."""
_FEW_INTS = 64
"""Keyed values from which :func:`rank_scores` ranks plain ints on arrays."""


def _sorted_ranks(present: list[Any]) -> FloatArray:
    """The rank of each of ``present``: sorted once, and walking the sorted list backwards
    into a dict leaves, for each distinct key, the index of its first occurrence."""
    count = len(present)
    ordered = sorted(present)
    first_index: dict[Any, int] = dict(
        zip(reversed(ordered), range(count - 1, -1, -1), strict=True)
    )
    return np.fromiter(map(first_index.__getitem__, present), np.float64, count)


def _int_ranks(present: list[int]) -> FloatArray:
    """:func:`_sorted_ranks` of plain ``int``\\ s, on int64 arrays: each value's first
    index in the sorted array (``searchsorted`` to the left). Values beyond int64 take
    the dict route."""
    try:
        values = np.array(present, dtype=np.int64)
    except OverflowError:
        return _sorted_ranks(present)
    ranks: FloatArray = np.searchsorted(np.sort(values), values, side="left").astype(np.float64)
    return ranks


class _RankScorer(ArrayScorer, Generic[_K]):
    """Shared rank algorithm; subclasses say which field is the key."""

    _key: Callable[[ContextItem], _K | None]

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return _rank_score(self._key(item), [self._key(other) for other in all_items])

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray:
        (field,) = self._fields
        return rank_scores(*increasing_column(items, field))


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

    _key = staticmethod(attrgetter("timestamp"))
    _fields = ("timestamp",)


class PriorityScorer(_RankScorer[int]):
    """Higher ``priority`` → higher score; the highest scores 1.0, the lowest 0.0.

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=str(p), tokens=1, priority=p) for p in (10, 5, 5, 1)]
    >>> PriorityScorer().score_all(items)
    [1.0, 0.3333333333333333, 0.3333333333333333, 0.0]
    """

    _key = staticmethod(attrgetter("priority"))
    _fields = ("priority",)
