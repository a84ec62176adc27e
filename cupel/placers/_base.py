"""The placer interface: order the merged (pinned + sliced) items for the window."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from cupel._model import ContextItem, ScoredItem
from cupel._params import Configurable

__all__ = ["BasePlacer", "Placer"]


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
