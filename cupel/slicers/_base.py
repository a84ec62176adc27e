"""The slicer interface and the details a slicer can report besides its selection.

A slicer picks, from score-descending ``ScoredItem``s, the items that fit the pipeline's
effective budget: ``slice(scored, budget) -> list[ContextItem]``. Count-quota slicers
also report the items a cap removed and the requirements they could not meet
(``slice_detailed`` returning a :class:`SliceOutcome`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, TypeVar, runtime_checkable

from cupel._errors import ConfigurationError, ItemError, SlicerConfigError, refusal
from cupel._fastpath import FloatArray, IntArray, TokenArray, fast_method
from cupel._model import ContextBudget, ContextItem, ContextKind, ScoredItem
from cupel._params import Configurable
from cupel.diagnostics._outcomes import SliceOutcome

# The package's public names; the helpers below (Candidates, fast_selector,
# floor_times, check_inner, entry_kind, index_by_kind) serve the slicer modules only.
__all__ = ["BaseSlicer", "Slicer", "slice_detailed"]


@runtime_checkable
class Slicer(Protocol):
    """Anything with ``slice(scored, budget) -> list[ContextItem]`` is a slicer."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        """Select a subset of ``scored`` (score-descending) that fits ``budget``."""
        ...


class BaseSlicer(Configurable, ABC):
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


def fail(owner: str, field: str, rule: str, value: Any) -> ConfigurationError:
    """The usual slicer refusal (:func:`~cupel._errors.refusal`), a SlicerConfigError."""
    return refusal(owner, field, rule, value, SlicerConfigError)


def is_number(value: object) -> bool:
    """An ``int`` or ``float``, not a ``bool``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def floor_times(tokens: int, factor: float) -> int:
    """``floor(tokens * factor)`` as the spec computes it (a float product), for any token
    count: exactly that wherever ``tokens`` converts to a float, and the exact product
    with the same float ``factor`` beyond (where the float product cannot be formed).

    >>> floor_times(1000, 0.9), floor_times(10**400, 0.5) == 10**400 // 2
    (900, True)
    """
    if tokens < 2**1000:
        return math.floor(tokens * factor)
    return math.floor(Fraction(tokens) * Fraction(factor))


def slice_detailed(
    slicer: Slicer, scored: Sequence[ScoredItem], budget: ContextBudget
) -> SliceOutcome:
    """Run any slicer and return its :class:`SliceOutcome` (plain slicers report none)."""
    detailed = getattr(slicer, "slice_detailed", None)
    if detailed is not None:
        outcome: SliceOutcome = detailed(scored, budget)
        return outcome
    return SliceOutcome(list(slicer.slice(scored, budget)))


def check_inner(owner: str, inner: object) -> None:
    """A wrapping slicer's ``inner`` is a slicer (an object with a ``slice`` method)."""
    if not callable(getattr(inner, "slice", None)):
        raise fail(owner, "inner", "must be a slicer (an object with a slice method)", inner)


def entry_kind(owner: str, kind: str) -> ContextKind:
    """``kind`` as a ContextKind, or a SlicerConfigError naming ``owner``."""
    try:
        return ContextKind(kind)
    except ItemError:
        raise fail(owner, "kind", "must be a non-empty string", kind) from None


_E = TypeVar("_E")


def index_by_kind(
    owner: str, param: str, entries: Sequence[_E], entry_type: type[_E], noun: str = "entry"
) -> dict[str, _E]:
    """Per-kind entries keyed by folded kind; rejects foreign values and case-duplicates."""
    by_key: dict[str, _E] = {}
    for entry in entries:
        if not isinstance(entry, entry_type):
            raise fail(owner, param, f"must be {entry_type.__name__} values", entry)
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


# -- array fast paths ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidates:
    """Score-descending slicer input as columns: candidate ``i`` is ``items[index[i]]``
    with ``tokens[i]`` and ``scores[i]`` (float64 without NaN; non-negative tokens summing
    below :data:`MAX_EXACT_TOKENS`, as whoever builds it checks)."""

    items: Sequence[ContextItem]
    index: IntArray
    tokens: TokenArray
    scores: FloatArray

    def __len__(self) -> int:
        return len(self.index)

    def item_list(self) -> list[ContextItem]:
        """The candidates' items, in candidate order."""
        return list(map(self.items.__getitem__, self.index.tolist()))


Selector = Callable[[Candidates, ContextBudget], IntArray]


def fast_selector(slicer: object) -> Selector | None:
    """The array fast path of a built-in slicer (the selected candidates' positions, in
    output order), or ``None``: a subclass overriding ``slice`` or ``slice_detailed`` keeps
    its behaviour (the rule of :func:`cupel._fastpath.fast_method`)."""
    return fast_method(slicer, "_select_positions", ("slice", "slice_detailed"))
