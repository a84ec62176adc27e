"""TagScorer: the share of the configured tag weight an item's tags match."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import count, repeat
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from cupel._errors import ScorerConfigError
from cupel._fastpath import IntArray, field_column
from cupel._model import ContextItem, ascii_fold
from cupel._params import NonNegative
from cupel.scorers._base import ArrayScorer, FloatArray, object_ids
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
            raise ScorerConfigError(
                f"TagScorer: tag_weights must be a mapping of tag to weight, "
                f"got {type(tag_weights).__name__} {tag_weights!r}",
                field="tag_weights",
                value=tag_weights,
            )
        if not isinstance(case_insensitive, bool):
            raise fail("TagScorer", "case_insensitive", "must be a bool", case_insensitive)
        checked: dict[str, float] = {}
        lookup: dict[str, float] = {}
        spelling: dict[str, str] = {}
        total = 0.0
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
            total += weight
        if not math.isfinite(total):
            raise ScorerConfigError(
                f"TagScorer: the sum of tag_weights must be finite, got {total!r}",
                field="tag_weights",
                value=dict(tag_weights),
            )
        # A plain dict (picklable); the property hands out a read-only view.
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
        return self._tags_score(item.tags)

    def _tags_score(self, tags: tuple[str, ...]) -> float:
        if self._total == 0.0 or not tags:
            return 0.0
        matched = 0.0
        for tag in tags:
            weight = self._lookup.get(ascii_fold(tag) if self._case_insensitive else tag)
            if weight is not None:
                matched += weight
        return min(matched / self._total, 1.0)

    _fields = ("tags",)

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray:
        """``score`` for every item, on arrays (:meth:`_tuple_scores`); when items carry
        many tags each (more than :data:`_MANY_TAGS` on average), computed once per
        distinct ``tags`` tuple of the pass and looked up for each item instead."""
        tags = field_column(items, "tags")
        n = len(tags)
        if self._total == 0.0:
            return np.zeros(n)
        lengths = np.fromiter(map(len, tags), dtype=np.intp, count=n)
        size = int(lengths.sum())
        if size <= _MANY_TAGS * n:
            return self._tuple_scores(tags, lengths, size)
        # Each tuple hashed once: its code is the call number of its first occurrence.
        first: dict[tuple[str, ...], int] = {}
        codes = np.fromiter(map(first.setdefault, tags, count()), dtype=np.intp, count=n)
        by_code = np.zeros(n)
        distinct = list(first)
        at = np.fromiter(first.values(), dtype=np.intp, count=len(first))
        lengths = lengths[at]
        by_code[at] = self._tuple_scores(distinct, lengths, int(lengths.sum()))
        result: FloatArray = by_code[codes]
        return result

    def _tuple_scores(
        self, tags: list[tuple[str, ...]], lengths: IntArray, size: int
    ) -> FloatArray:
        """``_tags_score`` of each tuple, on arrays (``lengths``: the tuples' lengths,
        ``size`` their sum).

        The weights of all tags form one flat array (:meth:`_flat_weights`).
        ``np.bincount`` then adds them up per tuple: it walks the flat array in order and
        adds each weight to its tuple's sum, starting from 0.0, so each sum is the
        per-item loop's ``matched += weight`` in tag order; an unmatched tag adds 0.0,
        which leaves the non-negative sum unchanged.
        """
        n = len(tags)
        if size == 0:
            return np.zeros(n)
        flat: list[str] = []
        deque(map(flat.extend, tags), maxlen=0)  # the tags, chained (~1/3 cheaper than chain)
        weights = self._flat_weights(flat)
        if not weights.any():  # no weighted tag matched: every sum stays 0.0
            return np.zeros(n)
        owner = np.repeat(np.arange(n), lengths)
        matched = np.bincount(owner, weights=weights, minlength=n)
        with np.errstate(over="ignore"):
            result: FloatArray = np.minimum(matched / self._total, 1.0)
        return result

    def _flat_weights(self, flat: list[str]) -> FloatArray:
        """The weight of each tag of ``flat`` (0.0 when unweighted), looked up once per
        distinct tag *object*: tags are usually a few shared strings, so the tag
        objects' ids (:func:`object_ids`) are sorted, each run of one id looked up once,
        and the run's weight written back to its positions. For fewer than
        :data:`_FEW_TAGS` tags, or when the first :data:`_PROBE` tags, or all of them,
        are mostly distinct objects (strings built per item), each tag is looked up
        instead (folded once per distinct string when case-insensitive)."""
        size = len(flat)
        if size >= _FEW_TAGS and 2 * len(set(map(id, flat[:_PROBE]))) <= _PROBE:
            refs = np.fromiter(flat, dtype=object, count=size)
            ids = object_ids(refs)
            bucketed = None if size < _BUCKETED_TAGS else self._bucketed_weights(refs, ids)
            if bucketed is not None:
                return bucketed
            order = np.argsort(ids)
            ordered = ids[order]
            first = np.empty(size, dtype=np.bool_)
            first[0] = True
            np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            if 2 * len(starts) <= size:
                distinct = refs[order[starts]].tolist()
                table = np.fromiter(map(self._weight, distinct), np.float64, len(distinct))
                weights = np.empty(size)
                weights[order] = np.repeat(table, np.diff(starts, append=size))
                return weights
        if self._case_insensitive:  # each distinct tag folded once
            folded = dict.fromkeys(flat, 0.0)
            for tag in folded:
                folded[tag] = self._weight(tag)
            found = map(folded.__getitem__, flat)
        else:
            found = map(self._lookup.get, flat, repeat(0.0))
        return np.fromiter(found, dtype=np.float64, count=size)

    def _bucketed_weights(self, refs: npt.NDArray[np.object_], ids: IntArray) -> FloatArray | None:
        """:meth:`_flat_weights` without sorting the ids, when the distinct tag objects
        fall into distinct buckets of a small table (``(id >> 4) % _BUCKETS``): a
        scatter leaves one position per used bucket, and when every tag's id equals that
        position's id, each bucket holds one object, looked up once. ``None`` when two
        objects share a bucket or when the objects are not few (the caller sorts)."""
        size = len(ids)
        keys = np.right_shift(ids, 4)
        keys %= _BUCKETS
        at = np.empty(_BUCKETS, dtype=np.intp)
        at[keys] = np.arange(size)  # one position (any) per used bucket
        if not np.array_equal(ids[at[keys]], ids):
            return None
        used = np.zeros(_BUCKETS, dtype=np.bool_)
        used[keys] = True
        buckets = np.flatnonzero(used)
        if 2 * len(buckets) > size:
            return None
        objects = refs[at[buckets]].tolist()
        table = np.zeros(_BUCKETS)
        table[buckets] = np.fromiter(map(self._weight, objects), np.float64, len(objects))
        weights: FloatArray = table[keys]
        return weights

    def _weight(self, tag: str) -> float:
        """The weight of one tag (0.0 when unweighted)."""
        return self._lookup.get(ascii_fold(tag) if self._case_insensitive else tag, 0.0)


_BUCKETS = 65_521
"""Buckets (a prime) of :meth:`TagScorer._bucketed_weights`' table of tag objects."""
_BUCKETED_TAGS = 65_536
"""Tags in a pass from which :meth:`TagScorer._flat_weights` tries the buckets before sorting
(measured in W3's Tag batch: 1.1x the sort at 15,000 tags, the table's set-up; 0.95x at
150,000; 0.85x at 1,500,000)."""
_PROBE = 64
"""Tags whose objects :meth:`TagScorer._flat_weights` counts before sorting by identity."""
_FEW_TAGS = 4096
"""Tags in a pass below which :meth:`TagScorer._flat_weights` looks up every tag."""

_MANY_TAGS = 4
"""Average tags per item above which :class:`TagScorer` scores each distinct tuple once."""
