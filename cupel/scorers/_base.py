"""The scorer interface.

A scorer maps an item (and its peers) to a float: ``score(item, all_items)``. That is all
a custom scorer has to implement. The pipeline scores a whole pass at once through
:func:`score_all`, which uses a scorer's ``score_all(items)`` batch method when it has
one; every built-in scorer has one, so a pass costs O(N log N) or less instead of the
O(N^2) of calling ``score`` per item. Both paths return identical values.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cupel._model import ContextItem

__all__ = ["BaseScorer", "Scorer", "score_all"]


@runtime_checkable
class Scorer(Protocol):
    """Anything with ``score(item, all_items) -> float`` is a scorer."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score ``item``; ``all_items`` is every scoreable item of the pass (``item`` included)."""
        ...


class BaseScorer(ABC):
    """Base class of the built-in scorers (custom scorers may subclass it too).

    Subclasses implement :meth:`score`; relative scorers override :meth:`score_all`
    with a whole-batch algorithm.
    """

    @abstractmethod
    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score one item against ``all_items``."""

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        """Score every item of ``items`` against ``items`` (``result[i]`` is ``items[i]``'s)."""
        return [self.score(item, items) for item in items]

    def children(self) -> tuple[Scorer, ...]:
        """Scorers this one delegates to (used for cycle detection)."""
        return ()


def score_all(scorer: Scorer, items: Sequence[ContextItem]) -> list[float]:
    """Score a whole pass with ``scorer``: its batch method if it has one, else per item."""
    batch = getattr(scorer, "score_all", None)
    if batch is not None:
        return list(batch(items))
    return [scorer.score(item, items) for item in items]
