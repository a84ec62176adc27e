"""The placer interface: order the merged (pinned + sliced) items for the window."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from cupel._fastpath import FloatArray, fast_method
from cupel._model import ContextItem, ScoredItem
from cupel._params import Configurable

__all__ = ["BasePlacer", "Placer", "placed_order"]


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


Order = Callable[[Sequence[ContextItem], "FloatArray | Sequence[Any]"], list[int]]


def placed_order(placer: object) -> Order | None:
    """A built-in placer's ``_order(items, scores)``: the positions of ``items`` in placed
    order, the very computation its ``place`` runs (which builds no ScoredItems and needs
    no check that the window came back whole); ``None`` for any other placer, and for a
    subclass overriding ``place`` (the rule of :func:`cupel._fastpath.fast_method`)."""
    return fast_method(placer, "_order", ("place",))
