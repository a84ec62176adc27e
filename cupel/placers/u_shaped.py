"""UShapedPlacer: the best items at both edges, the weakest in the middle."""

from __future__ import annotations

from collections.abc import Sequence

from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer

__all__ = ["UShapedPlacer"]


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
        n = len(items)
        if n <= 1:
            return [s.item for s in items]
        # sorted() is stable, so equal scores keep ascending input index.
        order = sorted(range(n), key=lambda i: -items[i].score)
        result: list[ContextItem] = [items[0].item] * n
        left, right = 0, n - 1
        for rank, index in enumerate(order):
            if rank % 2 == 0:
                result[left] = items[index].item
                left += 1
            else:
                result[right] = items[index].item
                right -= 1
        return result
