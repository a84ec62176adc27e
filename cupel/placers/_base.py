"""The placer interface: order the merged (pinned + sliced) items for the window."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from operator import itemgetter
from typing import Protocol, runtime_checkable

from cupel._fastpath import FloatArray, IntArray, fast_method, float_column
from cupel._model import ContextItem, ScoredItem
from cupel._params import Configurable

__all__ = ["BasePlacer", "FloatArray", "IntArray", "Placer", "fast_orderer"]


class Orderer(Protocol):
    """A built-in placer's array fast path (``_order``): the placed order of ``items``
    as positions, given their NaN-free float64 ``scores`` and optionally their *origin*,
    each item's position in the pipeline's input (a hint, which may make the ordering
    faster, never different). With ``source`` (the pipeline's scoreable items), the
    origin is the Place stage's: the pinned items first, numbered ``-len(pinned)`` to
    ``-1``, then the others' distinct positions in ``source``, whose fields the placer
    reads (shared, :func:`cupel._fastpath.field_column`) instead of the items'. The
    positions come as a list, or as an int array."""

    def __call__(
        self,
        items: Sequence[ContextItem],
        scores: FloatArray,
        origin: IntArray | None,
        source: Sequence[ContextItem] | None = None,
    ) -> list[int] | IntArray: ...


_ITEM = itemgetter(0)
_SCORE = itemgetter(1)


@runtime_checkable
class Placer(Protocol):
    """Anything with ``place(items) -> list[ContextItem]`` is a placer."""

    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        """Return the same items in presentation order (no additions, no removals)."""
        ...


class BasePlacer(Configurable, ABC):
    """Base class of the built-in placers."""

    @abstractmethod
    def place(self, items: Sequence[ScoredItem]) -> list[ContextItem]:
        """Return the same items in presentation order."""


def split_scored(items: Sequence[ScoredItem]) -> tuple[list[ContextItem], FloatArray | None]:
    """The items of ``items``, and their scores as a float64 array when every score is a
    ``float`` and none is NaN (else ``None``: use the per-item definition)."""
    return list(map(_ITEM, items)), float_column(list(map(_SCORE, items)))


def fast_orderer(placer: object) -> Orderer | None:
    """The array fast path of a built-in placer (a subclass overriding ``place`` keeps its
    behaviour: the rule of :func:`cupel._fastpath.fast_method`), or ``None``.

    See :class:`Orderer` for what it takes and returns."""
    order: Orderer | None = fast_method(placer, "_order", ("place",))
    return order
