"""Stage 4, Sort: the survivors by descending score, stable (equal scores keep input order)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cupel._fastpath import Columns, FloatArray, IntArray, columns, stable_argsort
from cupel._model import ContextItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.deduplicate import Survivors
from cupel._pipeline.values import as_list

__all__ = ["Ranking", "ranked_lists", "sort"]


class Ranking(NamedTuple):
    """``order``: scoreable positions, best first. ``columns``: scores and tokens as
    arrays when the array route applies (then ``order`` is an array too); else ``None``,
    ``values`` holds the scores as a list and the later stages exchange the spec's lists
    of ScoredItem."""

    order: IntArray | list[int]
    columns: Columns | None
    values: list[Any]


def sort(classified: Classified, scores: FloatArray, survivors: Survivors) -> Ranking:
    """Rank the survivors. On arrays this is a stable argsort, which on NaN-free floats
    orders exactly as ``list.sort(key=-score)`` does on the per-item route."""
    found = columns(scores, classified.tokens, nonnegative=True)
    positions = survivors.positions
    if found is not None:
        return Ranking(_rank_order(found.scores, positions), found, [])
    values = as_list(scores)
    order = list(range(len(classified.scoreable))) if positions is None else list(positions)
    order.sort(key=lambda i: -values[i])
    return Ranking(order, None, values)


def _rank_order(scores: FloatArray, survivors: list[int] | None) -> IntArray:
    if survivors is None:
        return stable_argsort(-scores)
    kept = np.array(survivors, dtype=np.intp)
    return kept[stable_argsort(-scores[kept])]


def ranked_lists(
    scoreable: list[ContextItem], ranking: Ranking
) -> tuple[list[ContextItem], list[Any]]:
    """The ranked candidates and their scores, best first, as lists."""
    order, found, values = ranking
    if found is not None and isinstance(order, np.ndarray):
        return list(map(scoreable.__getitem__, order.tolist())), found.scores[order].tolist()
    return [scoreable[i] for i in order], [values[i] for i in order]
