"""ChronologicalPlacer: oldest first, untimestamped items last, ties in input order."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from operator import attrgetter, eq, itemgetter
from typing import Any

import numpy as np

from cupel._fastpath import field_column, known_increasing, strictly_increasing
from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer, FloatArray, IntArray

__all__ = ["ChronologicalPlacer"]

_ITEM = itemgetter(0)
_TIMESTAMP = attrgetter("timestamp")


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
        order = _chronological_order(field_column(contents, "timestamp"), None)
        return list(map(contents.__getitem__, order))

    def _order(
        self,
        items: Sequence[ContextItem],
        scores: FloatArray,
        origin: IntArray | None,
        source: Sequence[ContextItem] | None = None,
    ) -> list[int] | IntArray:
        """The chronological order as input positions (``scores`` is not used); the sort
        starts from the items' ``origin`` order when given (see _chronological_order).

        With ``origin``, the timestamps are first read in origin order, which walks the
        items' memory in order: from ``source``'s shared column when given (see
        :class:`~cupel.placers._base.Orderer`), else from the items themselves. The
        timestamps in the items' order are read only when they are not already in
        strictly increasing order by origin. When this pass already found the whole
        shared column strictly increasing (the Recency scorer checks it), the origin
        order of its items is, and only the pinned items' timestamps are compared."""
        if origin is None:
            return _chronological_order(field_column(items, "timestamp"), None)
        hint = _by_origin(origin)
        if source is None:
            order: list[int] = hint.tolist()
            if strictly_increasing(list(map(_TIMESTAMP, _take(items, order)))):
                return order
            return _chronological_order(field_column(items, "timestamp"), hint)
        column = field_column(source, "timestamp")
        pinned = int(np.count_nonzero(origin < 0))
        leading = [item.timestamp for item in items[:pinned]]
        rest = origin[hint][pinned:]
        if known_increasing(source, "timestamp"):
            # positions ascending in a strictly increasing column: the leading ones and
            # the first of the rest decide
            if strictly_increasing(leading + _take(column, rest[:1].tolist())):
                return hint
        elif strictly_increasing(leading + _take(column, rest.tolist())):
            return hint
        return _chronological_order(leading + _take(column, origin[pinned:].tolist()), hint)


def _by_origin(origin: IntArray) -> IntArray:
    """The positions of ``origin`` by ascending value: ``np.argsort(origin, kind="stable")``,
    computed as a scatter into the range of values when they are distinct and that range
    is not much wider than their number (as with pinned items, numbered below zero, and
    a selection from the input)."""
    n = len(origin)
    if n > 1:
        low = int(origin.min())
        span = int(origin.max()) - low + 1
        if span <= 8 * n + 1024:
            slot = np.full(span, -1, dtype=np.intp)
            slot[origin - low] = np.arange(n)
            order = slot[slot >= 0]
            if len(order) == n:  # distinct values
                return order
    by_value: IntArray = np.argsort(origin, kind="stable")
    return by_value


def _chronological_order(stamps: list[Any], hint: IntArray | None) -> list[int]:
    """Positions sorted by timestamp ``stamps`` (a stable sort: ties keep input order),
    then the positions of untimestamped items in input order.

    When every item has a timestamp and ``hint`` (a permutation of the positions) is
    given, the sort starts from the hint instead: if the sorted timestamps turn out all
    distinct, the starting order cannot have mattered, and a hint that is already nearly
    chronological makes the sort close to linear. With a tie, the plain stable sort
    decides. A hint whose timestamps already strictly increase is the order itself.
    """
    order: list[int] = []
    if hint is not None:
        order = hint.tolist()
        if strictly_increasing(_take(stamps, order)):
            return order  # already strictly increasing: the sort would keep it
    if None not in stamps:
        if hint is not None:
            order.sort(key=stamps.__getitem__)
            ordered = _take(stamps, order)
            if not any(map(eq, islice(ordered, 1, None), ordered)):
                return order
        return sorted(range(len(stamps)), key=stamps.__getitem__)
    timed = [i for i, stamp in enumerate(stamps) if stamp is not None]
    timed.sort(key=stamps.__getitem__)
    timed.extend(i for i, stamp in enumerate(stamps) if stamp is None)
    return timed


def _take(values: Sequence[Any], positions: list[int]) -> list[Any]:
    """``[values[i] for i in positions]`` by one C-level ``itemgetter`` call."""
    if len(positions) < 2:
        return [values[i] for i in positions]
    return list(itemgetter(*positions)(values))
