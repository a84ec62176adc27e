"""The scorer interface.

A scorer maps an item (and its peers) to a float: ``score(item, all_items)``. That is all
a custom scorer has to implement. The pipeline scores a whole pass at once through
:func:`score_all`, which uses a scorer's ``score_all(items)`` batch method when it has
one; every built-in scorer has one, so a pass costs O(N log N) or less instead of the
O(N^2) of calling ``score`` per item. Both paths return identical values.

Internally, the built-ins that matter for speed are :class:`ArrayScorer`\\ s: their batch
is a float64 numpy array (``_scores``), which the pipeline consumes without building a
Python list; ``score_all`` is that array as a list.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cupel._model import ContextItem

__all__ = [
    "ArrayScorer",
    "BaseScorer",
    "FloatArray",
    "Scorer",
    "batch_scores",
    "float_array",
    "score_all",
]

FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class Scorer(Protocol):
    """Anything with ``score(item, all_items) -> float`` is a scorer."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score ``item``; ``all_items`` is every scoreable item of the pass (``item`` included)."""
        ...


class BaseScorer(ABC):
    """Base class of the built-in scorers (custom scorers may subclass it too).

    Subclasses implement :meth:`score`; relative scorers override :meth:`score_all`
    with a whole-batch algorithm.
    """

    @abstractmethod
    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score one item against ``all_items``."""

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        """Score every item of ``items`` against ``items`` (``result[i]`` is ``items[i]``'s)."""
        return [self.score(item, items) for item in items]

    def children(self) -> tuple[Scorer, ...]:
        """Scorers this one delegates to (used for cycle detection)."""
        return ()


class ArrayScorer(BaseScorer):
    """A built-in whose batch is computed as a float64 array by :meth:`_scores`.

    ``score_all`` returns that array as a list. ``_scores`` may return ``None`` when the
    exact result cannot be held in a float64 array (a decorator over a custom scorer
    returning non-``float`` values); ``_score_list`` then computes the list in Python.
    """

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        scores = self._scores(items)
        if scores is None:
            return self._score_list(items)
        result: list[float] = scores.tolist()
        return result

    @abstractmethod
    def _scores(self, items: Sequence[ContextItem]) -> FloatArray | None:
        """Every item's score as a float64 array (``None``: use :meth:`_score_list`)."""

    def _score_list(self, items: Sequence[ContextItem]) -> list[float]:
        """The batch as a Python list, for when :meth:`_scores` returns ``None``."""
        return BaseScorer.score_all(self, items)


def score_all(scorer: Scorer, items: Sequence[ContextItem]) -> list[float]:
    """Score a whole pass with ``scorer``: its batch method if it has one, else per item."""
    batch = getattr(scorer, "score_all", None)
    if batch is not None:
        return list(batch(items))
    return [scorer.score(item, items) for item in items]


def batch_scores(scorer: Scorer, items: Sequence[ContextItem]) -> FloatArray | list[Any]:
    """Score a whole pass: the float64 array of an :class:`ArrayScorer` (unless a subclass
    overrides ``score_all``), else the list :func:`score_all` returns."""
    if getattr(type(scorer), "score_all", None) is ArrayScorer.score_all:
        array_scorer: ArrayScorer = scorer  # type: ignore[assignment]
        scores = array_scorer._scores(items)
        return array_scorer._score_list(items) if scores is None else scores
    return score_all(scorer, items)


def float_array(values: FloatArray | Sequence[Any]) -> FloatArray | None:
    """``values`` as a float64 array when every value is exactly a Python ``float`` (so the
    array holds them exactly), else ``None``. Arrays are returned as they are.

    >>> float_array([0.5, 1.0]), float_array([1, 0.5])
    (array([0.5, 1. ]), None)
    """
    if isinstance(values, np.ndarray):
        return values
    if not set(map(type, values)) <= {float}:
        return None
    return np.array(values, dtype=np.float64)
