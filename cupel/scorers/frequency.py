"""FrequencyScorer: the share of an item's peers that share a tag with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain, combinations
from operator import attrgetter

import numpy as np

from cupel._model import ContextItem, ascii_fold
from cupel.scorers._base import ArrayScorer, FloatArray

__all__ = ["FrequencyScorer"]

_TAGS = attrgetter("tags")
_MAX_SUBSET_TAGS = 8
"""Tag sets up to this size use inclusion-exclusion (<= 255 subsets each); larger ones the
bitset method."""


class FrequencyScorer(ArrayScorer):
    """``peers sharing at least one tag / (len(all_items) - 1)``.

    Tags compare case-insensitively (ASCII folding). The scored item is skipped by
    identity (every position holding that very object), never by equality, while the
    denominator stays ``len(all_items) - 1``. Tagless items score 0.0 and never count as
    peers; a pass of one item scores 0.0.

    ``score_all`` works on the distinct folded tag sets of the pass and counts, by
    inclusion-exclusion over each set's subsets, how many positions share a tag with it:
    O(N + D * 2^k) for D distinct sets of at most k tags, instead of N^2 tag comparisons.

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=c, tokens=1, tags=t)
    ...          for c, t in (("a", ("db",)), ("b", ("DB", "ops")), ("c", ("ops",)), ("d", ()))]
    >>> FrequencyScorer().score_all(items)
    [0.3333333333333333, 0.6666666666666666, 0.3333333333333333, 0.0]
    """

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if not item.tags or len(all_items) <= 1:
            return 0.0
        own = {ascii_fold(tag) for tag in item.tags}
        matching = 0
        for other in all_items:
            if other is item or not other.tags:
                continue
            if any(ascii_fold(tag) in own for tag in other.tags):
                matching += 1
        return matching / (len(all_items) - 1)

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray:
        """``score`` for every item at once.

        Each position's folded tag set is looked up once per distinct ``tags`` tuple.
        ``touching[s]`` is the number of positions whose set meets ``s`` (the item's own
        positions included); the item's peers are that minus the positions holding the
        item itself, which the per-item definition skips by identity.
        """
        n = len(items)
        if n <= 1:
            return np.zeros(n)
        tag_tuples = list(map(_TAGS, items))
        distinct = dict.fromkeys(tag_tuples)
        fold = {tag: ascii_fold(tag) for tag in set(chain.from_iterable(distinct))}
        folded = {tags: frozenset(map(fold.__getitem__, tags)) for tags in distinct}
        sets = list(map(folded.__getitem__, tag_tuples))
        multiplicity = Counter(sets)
        if max(map(len, multiplicity)) <= _MAX_SUBSET_TAGS:
            touching = _touching_by_inclusion_exclusion(multiplicity)
        else:
            touching = _touching_by_bitsets(sets)
        hits = np.fromiter(map(touching.__getitem__, sets), dtype=np.float64, count=n)
        hits -= _own_positions(items, sets)
        hits /= n - 1
        return hits

    def __repr__(self) -> str:
        return "FrequencyScorer()"


def _subsets(tags: frozenset[str]) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The non-empty subsets of ``tags`` as sorted tuples: (odd sizes, even sizes)."""
    ordered = sorted(tags)
    odd: list[tuple[str, ...]] = []
    even: list[tuple[str, ...]] = []
    for size in range(1, len(ordered) + 1):
        (odd if size % 2 else even).extend(combinations(ordered, size))
    return odd, even


def _touching_by_inclusion_exclusion(
    multiplicity: Counter[frozenset[str]],
) -> dict[frozenset[str], int]:
    """For each distinct set ``s``: the number of positions whose set meets ``s``.

    ``containing[u]`` counts the positions whose set contains ``u``; the positions meeting
    ``s`` are the union over its tags ``t`` of "contains {t}", whose size is the
    alternating sum of ``containing[u]`` over the non-empty subsets ``u`` of ``s``
    (plus for odd sizes, minus for even ones).
    """
    subsets = {tags: _subsets(tags) for tags in multiplicity}
    containing: Counter[tuple[str, ...]] = Counter()
    for tags, count in multiplicity.items():
        odd, even = subsets[tags]
        for subset in chain(odd, even):
            containing[subset] += count
    count_of = containing.__getitem__
    return {
        tags: sum(map(count_of, odd)) - sum(map(count_of, even))
        for tags, (odd, even) in subsets.items()
    }


def _touching_by_bitsets(sets: list[frozenset[str]]) -> dict[frozenset[str], int]:
    """Same as :func:`_touching_by_inclusion_exclusion`, for sets with many tags: each tag
    indexes the positions holding it as a bitset (a Python ``int``); a set's count is the
    popcount of the OR of its tags' bitsets."""
    index: dict[str, int] = {}
    for position, tags in enumerate(sets):
        bit = 1 << position
        for tag in tags:
            index[tag] = index.get(tag, 0) | bit
    touching: dict[frozenset[str], int] = {}
    for tags in dict.fromkeys(sets):
        union = 0
        for tag in tags:
            union |= index[tag]
        touching[tags] = union.bit_count()
    return touching


def _own_positions(items: Sequence[ContextItem], sets: list[frozenset[str]]) -> FloatArray:
    """For tagged items, the number of positions holding that very object (usually 1)."""
    tagged = np.fromiter(map(bool, sets), dtype=np.float64, count=len(sets))
    if len(set(map(id, items))) == len(items):
        return tagged
    counts = Counter(map(id, items))
    return tagged * np.fromiter(
        (counts[id(item)] for item in items), dtype=np.float64, count=len(items)
    )
