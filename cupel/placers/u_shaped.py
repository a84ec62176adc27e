"""UShapedPlacer: the best items at both edges, the weakest in the middle."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cupel._fastpath import stable_argsort
from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer, FloatArray, IntArray, split_scored

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
        contents, scores = split_scored(items)
        if scores is None:
            return _u_shaped(items)
        return list(map(contents.__getitem__, self._order(contents, scores, None)))

    def _order(
        self,
        items: Sequence[ContextItem],
        scores: FloatArray,
        origin: IntArray | None,
        source: Sequence[ContextItem] | None = None,
    ) -> list[int]:
        """The U-shaped order as input positions, on arrays: a stable argsort by descending
        score gives the ranks (scores already in descending order, as the pipeline's
        selection usually comes, are their own ranking); rank ``r`` goes to slot
        ``r // 2`` from the left when even, from the right when odd: the even ranks,
        then the odd ones reversed. ``scores`` must be NaN-free; ``origin`` and
        ``source`` are not used."""
        if bool((scores[:-1] >= scores[1:]).all()):
            ranked: IntArray = np.arange(len(scores))
        else:
            ranked = stable_argsort(-scores)
        result: list[int] = ranked[0::2].tolist()
        result.extend(ranked[1::2][::-1].tolist())
        return result


def _u_shaped(items: Sequence[ScoredItem]) -> list[ContextItem]:
    """The spec's U-SHAPED-PLACE, item by item (for scores the array path does not take)."""
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
