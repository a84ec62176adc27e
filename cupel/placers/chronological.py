"""ChronologicalPlacer: oldest first, untimestamped items last, ties in input order."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import eq, itemgetter, lt

import numpy as np

from cupel._fastpath import field_column
from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer, FloatArray, IntArray

__all__ = ["ChronologicalPlacer"]

_ITEM = itemgetter(0)


class ChronologicalPlacer(BasePlacer):
    """Order items by ascending timestamp; items without one follow, in input order.

    Scores are ignored. Ties keep their input order (a stable sort).

    >>> from datetime import datetime, timezone
    >>> from cupel import ContextItem, ScoredItem
    >>> t = lambda h: datetime(2024, 1, 1, h, tzinfo=timezone.utc)
    >>> items = [ScoredItem(ContextItem(content="late", tokens=1, timestamp=t(9)), 0.9),
    ...          ScoredItem(ContextItem(content="none", tokens=1), 1.0),
    ...          ScoredItem(ContextItem(content="early", tokens=1, timestamp=t(8)), 0.1)]
    >>> [i.content for i in ChronologicalPlacer().place(items)]
    ['early', 'late', 'none']
    """

    _fields = ("timestamp",)  # read through field_column (see cupel._pipeline.place)

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        contents = list(map(_ITEM, items))
        return list(map(contents.__getitem__, _chronological_order(contents, None)))

    def _order(
        self, items: Sequence[ContextItem], scores: FloatArray, origin: IntArray | None
    ) -> list[int]:
        """The chronological order as input positions (``scores`` is not used); the sort
        starts from the items' ``origin`` order when given (see _chronological_order)."""
        hint = None if origin is None else np.argsort(origin, kind="stable")
        return _chronological_order(items, hint)


def _chronological_order(items: Sequence[ContextItem], hint: IntArray | None) -> list[int]:
    """Positions sorted by timestamp (a stable sort: ties keep input order), then the
    positions of untimestamped items in input order.

    When every item has a timestamp and ``hint`` (a permutation of the positions) is
    given, the sort starts from the hint instead: if the sorted timestamps turn out all
    distinct, the starting order cannot have mattered, and a hint that is already nearly
    chronological makes the sort close to linear. With a tie, the plain stable sort
    decides. A hint whose timestamps already strictly increase is the order itself.
    """
    stamps = field_column(items, "timestamp")
    if None not in stamps:
        if hint is not None:
            order: list[int] = hint.tolist()
            ordered = list(map(stamps.__getitem__, order))
            if all(map(lt, ordered, islice(ordered, 1, None))):
                return order  # already strictly increasing: the sort would keep it
            order.sort(key=stamps.__getitem__)
            ordered = list(map(stamps.__getitem__, order))
            if not any(map(eq, islice(ordered, 1, None), ordered)):
                return order
        return sorted(range(len(stamps)), key=stamps.__getitem__)
    timed = [i for i, stamp in enumerate(stamps) if stamp is not None]
    timed.sort(key=stamps.__getitem__)
    timed.extend(i for i, stamp in enumerate(stamps) if stamp is None)
    return timed
