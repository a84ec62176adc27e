"""UShapedPlacer: the best items at both edges, the weakest in the middle."""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from cupel._fastpath import FloatArray, descending_order
from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer

__all__ = ["UShapedPlacer"]

_ITEM = itemgetter(0)
_SCORE = itemgetter(1)


class UShapedPlacer(BasePlacer):
    """Rank by score (descending, ties by input order); even ranks fill from the left
    edge, odd ranks from the right edge. Counters the "lost in the middle" effect.

    >>> from cupel import ContextItem, ScoredItem
    >>> items = [ScoredItem(ContextItem(content=c, tokens=1), s)
    ...          for c, s in zip("ABCDEFG", (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3))]
    >>> "".join(i.content for i in UShapedPlacer().place(items))
    'ACEGFDB'
    """

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        contents = list(map(_ITEM, items))
        order = self._order(contents, list(map(_SCORE, items)))
        return list(map(contents.__getitem__, order))

    def _order(self, items: Sequence[ContextItem], scores: FloatArray | Sequence[Any]) -> list[int]:
        """The placed positions: rank ``r`` (:func:`~cupel._fastpath.descending_order` of
        ``scores``) goes to slot ``r // 2`` from the left when even, from the right when
        odd: the even ranks, then the odd ones reversed."""
        ranked = descending_order(scores)
        order: list[int] = ranked[0::2].tolist()
        order.extend(ranked[1::2][::-1].tolist())
        return order
