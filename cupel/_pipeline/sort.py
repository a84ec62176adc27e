"""Stage 4, Sort: the survivors by descending score, stable (equal scores keep input order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cupel._fastpath import Columns, FloatArray, IntArray, columns, stable_argsort
from cupel._model import ContextItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.deduplicate import Survivors
from cupel._pipeline.values import as_list, take

__all__ = ["Ranking", "ranked_lists", "sort"]


class Ranking:
    """``order``: scoreable positions, best first. ``columns``: scores and tokens as
    arrays when the array route applies (then ``order`` is an array too, computed when
    first read: a slicer that does not need the ranking never pays for it); else
    ``None``, ``values`` holds the scores as a list and the later stages exchange the
    spec's lists of ScoredItem. ``survivors``: the ranked positions in input order
    (``None``: every scoreable position)."""

    __slots__ = ("_order", "columns", "survivors", "values")

    def __init__(
        self,
        order: IntArray | list[int] | None,
        columns: Columns | None,
        values: list[Any],
        survivors: list[int] | None = None,
    ) -> None:
        self._order = order
        self.columns = columns
        self.values = values
        self.survivors = survivors

    @property
    def order(self) -> IntArray | list[int]:
        if self._order is None:
            if self.columns is None:  # pragma: no cover - the list route ranks eagerly
                raise RuntimeError("Ranking without order or columns")
            self._order = _rank_order(self.columns.scores, self.survivors)
        return self._order

    @property
    def computed(self) -> bool:
        """Whether ``order`` has been computed (or given)."""
        return self._order is not None

    def __len__(self) -> int:
        """The number of ranked candidates."""
        if self.survivors is not None:
            return len(self.survivors)
        if self.columns is not None:
            return len(self.columns.scores)
        return len(self.order)


def sort(classified: Classified, scores: FloatArray, survivors: Survivors) -> Ranking:
    """Rank the survivors. On arrays this is a stable argsort (when the order is first
    read), which on NaN-free floats orders exactly as ``list.sort(key=-score)`` does on
    the per-item route."""
    found = columns(scores, classified.tokens, nonnegative=True, token_array=classified.token_array)
    positions = survivors.positions
    if found is not None:
        return Ranking(None, found, [], positions)
    values = as_list(scores)
    order = list(range(len(classified.scoreable))) if positions is None else list(positions)
    order.sort(key=lambda i: -values[i])
    return Ranking(order, None, values, positions)


def _rank_order(scores: FloatArray, survivors: list[int] | None) -> IntArray:
    if survivors is None:
        return stable_argsort(-scores)
    kept = np.array(survivors, dtype=np.intp)
    return kept[stable_argsort(-scores[kept])]


def ranked_lists(
    scoreable: list[ContextItem], ranking: Ranking
) -> tuple[list[ContextItem], list[Any]]:
    """The ranked candidates and their scores, best first, as lists."""
    order, found, values = ranking.order, ranking.columns, ranking.values
    if found is not None and isinstance(order, np.ndarray):
        return take(scoreable, order.tolist()), found.scores[order].tolist()
    return [scoreable[i] for i in order], [values[i] for i in order]
