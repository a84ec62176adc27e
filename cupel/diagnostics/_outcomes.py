"""What a slicer reports besides its selection, and what the report says about slicing.

A slicer's ``slice_detailed`` returns a :class:`SliceOutcome`: the selection, the items a
count cap removed (:class:`CapExclusion`) and the count requirements it could not meet
(:class:`CountRequirementShortfall`). The pipeline turns them into report entries; the
report also carries :class:`BucketRounding` when a knapsack's rounding cost an item.
These are plain values: the slicers produce them and the diagnostics read them, so they
live here, below both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cupel._model import ContextItem

__all__ = [
    "BucketRounding",
    "CapExclusion",
    "CountRequirementShortfall",
    "Recalled",
    "SliceOutcome",
]


@dataclass(frozen=True, slots=True)
class CountRequirementShortfall:
    """A count quota whose ``require_count`` the candidates could not satisfy."""

    kind: str
    required_count: int
    satisfied_count: int

    def to_dict(self) -> dict[str, object]:
        """Wire form: the fields by name."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class BucketRounding:
    """What knapsack rounding cost a selection: ``items_left_out`` candidates fit the
    ``unused_tokens`` left in the slicer's budget, but not in the whole buckets of
    ``bucket_size`` tokens left (item sizes round up, the budget down)."""

    bucket_size: int
    unused_tokens: int
    items_left_out: int

    def to_dict(self) -> dict[str, int]:
        """Wire form: the fields by name."""
        return asdict(self)

    def describe(self) -> str:
        """In words.

        >>> print(BucketRounding(100, 99, 1).describe())  # doctest: +NORMALIZE_WHITESPACE
        knapsack bucket rounding (buckets of 100 tokens) left 99 tokens unused and 1 item
        out that fits them
        """
        items = "item" if self.items_left_out == 1 else "items"
        fit = "fits" if self.items_left_out == 1 else "fit"
        return (
            f"knapsack bucket rounding (buckets of {self.bucket_size} tokens) left "
            f"{self.unused_tokens} tokens unused and {self.items_left_out} {items} out "
            f"that {fit} them"
        )


@dataclass(frozen=True, slots=True)
class Recalled:
    """A unit a :class:`~cupel.RecencyWindowSlice` brought back from before its window
    (its ``scored_share``): the unit's ``items`` (a block whole: a question with its
    answer; newest first), its ``score`` (the best of its members' scores, what the share
    ranked it by, per token), ``terms``: the query's words (as written, casefolded) whose
    terms its items hold, by the pipeline's :class:`~cupel.RelevanceScorer` s (in the
    order of the query; empty without one), and ``similarity``: the best cosine of its
    items' embeddings with the query's (``None`` without an embedding).

    >>> from cupel import ContextItem
    >>> unit = Recalled((ContextItem(content="My sister moved to Lisbon", tokens=7),),
    ...                 0.82, ("sister", "lisbon"), 0.71)
    >>> print(unit.describe())
    recalled (score 0.82, matched: sister, lisbon, similarity 0.71): 'My sister moved to Lisbon'
    >>> Recalled.from_dict(unit.to_dict()) == unit
    True
    """

    items: tuple[ContextItem, ...]
    score: float
    terms: tuple[str, ...] = ()
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Wire form: ``{"items": [item, ...], "score": s, "terms": [...],
        "similarity": c}`` (``c`` null without an embedding)."""
        return {
            "items": [item.to_dict() for item in self.items],
            "score": self.score,
            "terms": list(self.terms),
            "similarity": self.similarity,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recalled:
        """Parse the wire form."""
        return cls(
            tuple(ContextItem.from_dict(item) for item in data.get("items", [])),
            float(data.get("score", 0.0)),
            tuple(str(term) for term in data.get("terms", [])),
            None if data.get("similarity") is None else float(data["similarity"]),
        )

    def why(self, digits: int = 2) -> str:
        """The matched words and the similarity, in words (each part only when present).

        >>> Recalled((), 1.0, ("cat",), 0.5).why()
        ', matched: cat, similarity 0.50'
        """
        matched = f", matched: {', '.join(self.terms)}" if self.terms else ""
        similar = "" if self.similarity is None else f", similarity {self.similarity:.{digits}f}"
        return matched + similar

    def describe(self) -> str:
        """In words: the score, the matched words, the similarity and the first item's
        content."""
        first = self.items[-1].content if self.items else ""
        shown = first if len(first) <= 60 else first[:57] + "..."
        return f"recalled (score {self.score:.2f}{self.why()}): {shown!r}"


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
