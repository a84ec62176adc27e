"""TagScorer: the share of the configured tag weight an item's tags match."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import chain, repeat
from types import MappingProxyType

import numpy as np

from cupel._errors import ScorerConfigError
from cupel._model import ContextItem, ascii_fold
from cupel._params import NonNegative
from cupel.scorers._base import ArrayScorer, Batches, FloatArray
from cupel.scorers._validation import fail, finite_weight

__all__ = ["TagScorer"]


class TagScorer(ArrayScorer):
    """``min(sum of matched tag weights / sum of all configured weights, 1.0)``.

    Tags are looked up exactly (ordinal, case-sensitive) unless ``case_insensitive=True``
    (ASCII folding). Every occurrence of a tag on an item adds its weight. An item without
    tags, or a scorer whose weights are all zero, scores 0.0.

    >>> from cupel import ContextItem
    >>> scorer = TagScorer({"urgent": 3.0, "billing": 1.0})
    >>> scorer.score(ContextItem(content="x", tokens=1, tags=("urgent", "misc")), [])
    0.75
    >>> scorer.score(ContextItem(content="x", tokens=1, tags=("URGENT",)), [])
    0.0
    >>> TagScorer({"urgent": 1.0}, case_insensitive=True).score(
    ...     ContextItem(content="x", tokens=1, tags=("URGENT",)), [])
    1.0
    """

    def __init__(
        self, tag_weights: Mapping[str, NonNegative], *, case_insensitive: bool = False
    ) -> None:
        if not isinstance(tag_weights, Mapping):
            rule = "must be a mapping of tag to weight"
            raise fail("TagScorer", "tag_weights", rule, tag_weights, typed=True)
        if not isinstance(case_insensitive, bool):
            raise fail("TagScorer", "case_insensitive", "must be a bool", case_insensitive)
        checked: dict[str, float] = {}
        lookup: dict[str, float] = {}
        spelling: dict[str, str] = {}
        for tag, raw_weight in tag_weights.items():
            if not isinstance(tag, str):
                raise fail("TagScorer", "tag_weights", "keys must be strings", tag)
            weight = finite_weight("TagScorer", f"weight for tag {tag!r}", raw_weight)
            key = ascii_fold(tag) if case_insensitive else tag
            if key in spelling:
                raise ScorerConfigError(
                    f"TagScorer: tag_weights lists tags {spelling[key]!r} and {tag!r}, which "
                    f"are the same tag when case_insensitive=True",
                    field="tag_weights",
                    value=dict(tag_weights),
                )
            spelling[key] = tag
            checked[tag] = weight
            lookup[key] = weight
        total = sum(lookup.values(), 0.0)
        if not math.isfinite(total):
            raise ScorerConfigError(
                f"TagScorer: the sum of tag_weights must be finite, got {total!r}",
                field="tag_weights",
                value=dict(tag_weights),
            )
        self._tag_weights: dict[str, float] = checked
        self._lookup = lookup
        self._case_insensitive = case_insensitive
        self._total = total

    @property
    def tag_weights(self) -> Mapping[str, float]:
        """The configured tag weights (read-only)."""
        return MappingProxyType(self._tag_weights)

    @property
    def total_weight(self) -> float:
        """The sum of all configured weights (the score's denominator)."""
        return self._total

    @property
    def case_insensitive(self) -> bool:
        """Whether tags are matched with ASCII case folding."""
        return self._case_insensitive

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if self._total == 0.0 or not item.tags:
            return 0.0
        matched = 0.0
        for tag in item.tags:
            matched += self._weight(tag)
        return min(matched / self._total, 1.0)

    _fields = ("tags",)

    def _scores_in(self, batches: Batches) -> FloatArray:
        """``score`` for every item: the tags' weights summed per item by ``np.bincount``
        (in tag order from 0.0, as ``score`` adds them)."""
        tags = batches.column("tags")
        n = len(tags)
        if self._total == 0.0:
            return np.zeros(n)
        flat = list(chain.from_iterable(tags))
        if self._case_insensitive:
            weights = {tag: self._weight(tag) for tag in dict.fromkeys(flat)}
            found = map(weights.__getitem__, flat)
        else:
            found = map(self._lookup.get, flat, repeat(0.0))
        owner = np.repeat(np.arange(n), np.fromiter(map(len, tags), np.intp, n))
        matched = np.bincount(owner, np.fromiter(found, np.float64, len(flat)), minlength=n)
        with np.errstate(over="ignore"):
            return np.minimum(matched / self._total, 1.0)

    def _weight(self, tag: str) -> float:
        """The weight of one tag (0.0 when unweighted)."""
        return self._lookup.get(ascii_fold(tag) if self._case_insensitive else tag, 0.0)
