"""Small value helpers the stages share (private)."""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from cupel._fastpath import FloatArray
from cupel._model import ContextItem, ScoredItem

__all__ = [
    "CONTENT",
    "ITEM",
    "SCORE",
    "TOKENS",
    "as_list",
    "first_occurrences",
    "scored_pairs",
    "take",
]

ITEM = itemgetter(0)
SCORE = itemgetter(1)
TOKENS = attrgetter("tokens")
CONTENT = attrgetter("content")


def as_list(scores: FloatArray | list[Any]) -> list[Any]:
    """Scores as a list of Python values (floats, never NumPy scalars, in reports)."""
    return scores.tolist() if isinstance(scores, np.ndarray) else scores


def first_occurrences(keys: list[int], selected: list[int]) -> list[bool]:
    """Per key of ``keys``, whether it is selected: a key ``selected`` holds ``k`` times is
    selected at its first ``k`` occurrences.

    >>> first_occurrences([7, 8, 7, 9, 7], [7, 9, 7])
    [True, False, True, True, False]
    """
    quota = Counter(selected)
    chosen: list[bool] = []
    for key in keys:
        times = quota[key]
        if times:
            quota[key] = times - 1
        chosen.append(times > 0)
    return chosen


def scored_pairs(items: list[ContextItem], scores: list[Any]) -> list[ScoredItem]:
    """``ScoredItem(item, score)`` pairs, built without a Python-level call per pair."""
    return list(map(tuple.__new__, repeat(ScoredItem), zip(items, scores, strict=True)))


def take(values: list[Any], positions: list[int]) -> list[Any]:
    """``[values[i] for i in positions]``, gathered by one C-level ``itemgetter`` call.

    >>> take(["a", "b", "c"], [2, 0]), take(["a"], [0]), take(["a"], [])
    (['c', 'a'], ['a'], [])
    """
    if len(positions) < 2:
        return [values[i] for i in positions]
    return list(itemgetter(*positions)(values))
