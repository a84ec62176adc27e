"""ChronologicalPlacer: oldest first, untimestamped items last, ties in input order."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import cast

from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer

__all__ = ["ChronologicalPlacer"]


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

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        timed = [s.item for s in items if s.item.timestamp is not None]
        untimed = [s.item for s in items if s.item.timestamp is None]
        # list.sort is stable: equal timestamps keep input order.
        timed.sort(key=_timestamp)
        timed.extend(untimed)
        return timed


def _timestamp(item: ContextItem) -> datetime:
    return cast(datetime, item.timestamp)
