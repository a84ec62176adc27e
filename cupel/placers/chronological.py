"""ChronologicalPlacer: oldest first, untimestamped items last, ties in input order."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

from cupel._model import ContextItem, ScoredItem
from cupel.placers._base import BasePlacer

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

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        contents = list(map(_ITEM, items))
        return list(map(contents.__getitem__, self._order(contents, ())))

    def _order(self, items: Sequence[ContextItem], scores: object) -> list[int]:
        """The placed positions of ``items`` (``scores`` are not read): the timestamped
        ones by a stable sort on their timestamps, then the others in input order."""
        stamps: list[Any] = list(map(_TIMESTAMP, items))
        timed = [i for i, stamp in enumerate(stamps) if stamp is not None]
        timed.sort(key=stamps.__getitem__)  # stable: ties keep input order
        if len(timed) < len(stamps):
            timed.extend(i for i, stamp in enumerate(stamps) if stamp is None)
        return timed
