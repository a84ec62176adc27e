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
from typing import Protocol, TypeVar, runtime_checkable

from cupel._errors import ItemError, SlicerConfigError
from cupel._model import ContextBudget, ContextItem, ContextKind, ScoredItem

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


def entry_kind(owner: str, kind: str) -> ContextKind:
    """``kind`` as a ContextKind, or a SlicerConfigError naming ``owner``."""
    try:
        return ContextKind(kind)
    except ItemError:
        raise SlicerConfigError(
            f"{owner}: kind must be a non-empty string, got {kind!r}", field="kind", value=kind
        ) from None


_E = TypeVar("_E")


def index_by_kind(
    owner: str, param: str, entries: Sequence[_E], entry_type: type[_E], noun: str = "entry"
) -> dict[str, _E]:
    """Per-kind entries keyed by folded kind; rejects foreign values and case-duplicates."""
    by_key: dict[str, _E] = {}
    for entry in entries:
        if not isinstance(entry, entry_type):
            raise SlicerConfigError(
                f"{owner}: {param} must be {entry_type.__name__} values, got {entry!r}",
                field=param,
                value=entry,
            )
        kind: ContextKind = entry.kind  # type: ignore[attr-defined]
        previous = by_key.get(kind.key)
        if previous is not None:
            raise SlicerConfigError(
                f"{owner}: duplicate {noun} for kind '{kind}' "
                f"('{previous.kind}' is the same kind; kinds compare case-insensitively)",  # type: ignore[attr-defined]
                field=param,
                value=kind,
            )
        by_key[kind.key] = entry
    return by_key
