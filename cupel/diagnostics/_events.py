"""Trace events: what each stage did, and the overflow record of ``OverflowStrategy.PROCEED``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Any

from cupel._model import ContextBudget, ContextItem

__all__ = ["OverflowEvent", "PipelineStage", "TraceDetailLevel", "TraceEvent"]


class PipelineStage(str, Enum):
    """The observable stages (Sort is internal and has no events)."""

    CLASSIFY = "Classify"
    SCORE = "Score"
    DEDUPLICATE = "Deduplicate"
    SLICE = "Slice"
    PLACE = "Place"


class TraceDetailLevel(IntEnum):
    """How much a :class:`~cupel.DiagnosticTraceCollector` records."""

    STAGE = 0
    """One event per stage (durations, item counts)."""
    ITEM = 1
    """Stage events plus one event per inclusion / exclusion decision."""


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One observation: a stage (``duration_ms`` wall-clock) or one item (``duration_ms``
    0.0, ``item_count`` 1)."""

    stage: PipelineStage | str
    duration_ms: float
    item_count: int
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Wire form; ``message`` is omitted when absent."""
        stage = self.stage.value if isinstance(self.stage, PipelineStage) else str(self.stage)
        out: dict[str, Any] = {
            "stage": stage,
            "duration_ms": self.duration_ms,
            "item_count": self.item_count,
        }
        if self.message is not None:
            out["message"] = self.message
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceEvent:
        """Parse the wire form; unknown stage names are kept as plain strings."""
        raw = str(data["stage"])
        stage: PipelineStage | str
        try:
            stage = PipelineStage(raw)
        except ValueError:
            stage = raw
        return cls(
            stage=stage,
            duration_ms=float(data.get("duration_ms", 0.0)),
            item_count=int(data.get("item_count", 0)),
            message=data.get("message"),
        )


@dataclass(frozen=True, slots=True)
class OverflowEvent:
    """Delivered under ``OverflowStrategy.PROCEED`` when pinned + sliced items exceed
    ``target_tokens``: by how much, which items, and the budget."""

    tokens_over_budget: int
    overflowing_items: tuple[ContextItem, ...]
    budget: ContextBudget

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {
            "tokens_over_budget": self.tokens_over_budget,
            "overflowing_items": [item.to_dict() for item in self.overflowing_items],
            "budget": self.budget.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OverflowEvent:
        """Parse the wire form."""
        return cls(
            tokens_over_budget=int(data["tokens_over_budget"]),
            overflowing_items=tuple(
                ContextItem.from_dict(item) for item in data.get("overflowing_items", [])
            ),
            budget=ContextBudget.from_dict(data["budget"]),
        )
