"""Stage 4, Sort: the survivors by descending score, stable (equal scores keep input order)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cupel._fastpath import Columns, FloatArray, IntArray, columns, descending_order
from cupel._model import ContextItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.deduplicate import Survivors
from cupel._pipeline.values import take

__all__ = ["Ranking", "ranked_lists", "sort"]


class Ranking(NamedTuple):
    """``order``: the surviving scoreable positions, best first. ``scores``: every
    scoreable item's score. ``columns``: scores and tokens as the arrays the built-in
    slicers select from, when the values may live in them (NaN-free floats, an exact
    token sum); else ``None``, and the slicer is given the spec's ScoredItem list."""

    order: IntArray
    scores: FloatArray
    columns: Columns | None


def sort(classified: Classified, scores: FloatArray, survivors: Survivors) -> Ranking:
    """Rank the survivors: :func:`~cupel._fastpath.descending_order` of their scores,
    exactly the spec's stable ``list.sort(key=-score)``."""
    positions = survivors.positions
    if positions is None:
        order = descending_order(scores)
    else:
        kept = np.array(positions, dtype=np.intp)
        order = kept[descending_order(scores[kept])]
    found = columns(scores, classified.tokens, nonnegative=True)
    return Ranking(order, scores, found)


def ranked_lists(
    scoreable: list[ContextItem], ranking: Ranking
) -> tuple[list[ContextItem], list[Any]]:
    """The ranked candidates and their scores, best first, as lists."""
    order = ranking.order
    return take(scoreable, order.tolist()), ranking.scores[order].tolist()
