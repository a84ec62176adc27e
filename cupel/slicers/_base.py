"""The slicer interface and the details a slicer can report besides its selection.

A slicer picks, from score-descending ``ScoredItem``s, the items that fit a budget:
``slice(scored, budget) -> list[ContextItem]``. The budget it receives is the pipeline's
*effective* budget (``max_tokens`` and ``target_tokens`` only). Slicers that enforce
count quotas also know which items they removed by a cap and which requirements they
could not meet; they expose that through ``slice_detailed`` returning a
:class:`SliceOutcome`, which the pipeline turns into report entries.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cupel._model import ContextBudget, ContextItem, ScoredItem

__all__ = [
    "BaseSlicer",
    "CapExclusion",
    "CountRequirementShortfall",
    "SliceOutcome",
    "Slicer",
    "slice_detailed",
]


@runtime_checkable
class Slicer(Protocol):
    """Anything with ``slice(scored, budget) -> list[ContextItem]`` is a slicer."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        """Select a subset of ``scored`` (score-descending) that fits ``budget``."""
        ...


@dataclass(frozen=True, slots=True)
class CountRequirementShortfall:
    """A count quota whose ``require_count`` the candidates could not satisfy."""

    kind: str
    required_count: int
    satisfied_count: int

    def to_dict(self) -> dict[str, object]:
        """Wire form."""
        return {
            "kind": self.kind,
            "required_count": self.required_count,
            "satisfied_count": self.satisfied_count,
        }


@dataclass(frozen=True, slots=True)
class CapExclusion:
    """An item a count-quota slicer removed because its kind had reached ``cap``."""

    item: ContextItem
    kind: str
    cap: int
    count: int


@dataclass(frozen=True, slots=True)
class SliceOutcome:
    """What a slicer selected, plus cap removals and shortfalls (count quotas only)."""

    selected: list[ContextItem]
    cap_exclusions: tuple[CapExclusion, ...] = field(default=())
    shortfalls: tuple[CountRequirementShortfall, ...] = field(default=())


class BaseSlicer(ABC):
    """Base class of the built-in slicers."""

    @abstractmethod
    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        """Select a subset of ``scored`` that fits ``budget``."""

    def slice_detailed(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        """Like :meth:`slice`, with cap exclusions and shortfalls where the slicer has any."""
        return SliceOutcome(self.slice(scored, budget))

    @property
    def is_count_quota(self) -> bool:
        """True for the count-quota slicers, whose inclusion is not monotonic in the budget
        (budget simulation refuses them)."""
        return False


def slice_detailed(
    slicer: Slicer, scored: Sequence[ScoredItem], budget: ContextBudget
) -> SliceOutcome:
    """Run any slicer and return its :class:`SliceOutcome` (plain slicers report none)."""
    detailed = getattr(slicer, "slice_detailed", None)
    if detailed is not None:
        outcome: SliceOutcome = detailed(scored, budget)
        return outcome
    return SliceOutcome(list(slicer.slice(scored, budget)))
