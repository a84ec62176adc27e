"""One entry of a report: an included or an excluded item, its score and its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cupel._model import ContextItem
from cupel.diagnostics._reasons import ExclusionReason, InclusionReason

__all__ = ["ExcludedItem", "IncludedItem"]

_Reason = TypeVar("_Reason", InclusionReason, ExclusionReason)


@dataclass(frozen=True, slots=True)
class _Entry(Generic[_Reason]):
    """What both kinds of entry hold: the item, its score and the reason."""

    item: ContextItem
    score: float
    reason: _Reason

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {"item": self.item.to_dict(), "score": self.score, "reason": self.reason.to_dict()}


@dataclass(frozen=True, slots=True)
class IncludedItem(_Entry[InclusionReason]):
    """An item in the window, its score (1.0 when pinned) and why it is there."""


@dataclass(frozen=True, slots=True)
class ExcludedItem(_Entry[ExclusionReason]):
    """An item left out, its score when the decision was made (0.0 before scoring) and why."""
