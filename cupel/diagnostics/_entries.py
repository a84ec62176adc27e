"""One entry of a report: an included or an excluded item, its score and its reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cupel._model import ContextItem
from cupel.diagnostics._reasons import ExclusionReason, InclusionReason

__all__ = ["ExcludedItem", "IncludedItem"]


@dataclass(frozen=True, slots=True)
class IncludedItem:
    """An item in the window, its score (1.0 when pinned) and why it is there."""

    item: ContextItem
    score: float
    reason: InclusionReason

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {"item": self.item.to_dict(), "score": self.score, "reason": self.reason.to_dict()}


@dataclass(frozen=True, slots=True)
class ExcludedItem:
    """An item left out, its score when the decision was made (0.0 before scoring) and why."""

    item: ContextItem
    score: float
    reason: ExclusionReason

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {"item": self.item.to_dict(), "score": self.score, "reason": self.reason.to_dict()}
