"""FrequencyScorer: the share of an item's peers that share a tag with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import chain, count, filterfalse

import numpy as np
import numpy.typing as npt

from cupel._model import ContextItem, ascii_fold
from cupel.scorers._base import ArrayScorer, Batches, FloatArray
from cupel.scorers._tag_counts import Ints, by_postings, by_shared_subsets, shared_subsets_pay

__all__ = ["FrequencyScorer"]


class FrequencyScorer(ArrayScorer):
    """``peers sharing at least one tag / (len(all_items) - 1)``.

    Tags compare case-insensitively (ASCII folding). The scored item is skipped by
    identity (every position holding that very object), never by equality, while the
    denominator stays ``len(all_items) - 1``. Tagless items score 0.0 and never count as
    peers; a pass of one item scores 0.0.

    ``score_all`` counts exactly, for each position, the positions whose folded tag set
    meets its own: by merging the tags' posting lists (time and memory bounded by the
    pairs in them), or, for dense small vocabularies, by inclusion-exclusion over the
    subsets each distinct set shares with another.

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

    def _scores_in(self, batches: Batches) -> FloatArray:
        """``score`` for every item: ``touching`` counts, per tagged position, the
        positions whose set meets its own (its own included); the peers are that minus
        the positions holding the item itself, which ``score`` skips by identity."""
        items = batches.items
        n = len(items)
        if n <= 1:
            return np.zeros(n)
        found = _tag_rows(batches.column("tags"))
        if found is None:
            return np.zeros(n)
        row_starts, tags, vocabulary = found
        del found  # the rows' tags are replaced by the distinct sets' below
        lengths = np.diff(row_starts)
        tagged = lengths > 0
        starts = np.concatenate(([0], row_starts[1:][tagged]))
        if shared_subsets_pay(starts, tags):
            set_of_row, starts, tags = _distinct_sets(tags, row_starts, lengths)
            set_of_position = set_of_row[tagged]
            mult = np.bincount(set_of_position, minlength=len(starts) - 1)
            touching = by_shared_subsets(starts, tags, mult, vocabulary)[set_of_position]
        else:
            touching = by_postings(starts, tags)
        hits = np.zeros(n)
        hits[tagged] = touching
        hits -= _own_positions(items, tagged)
        hits /= n - 1
        return hits


def _tag_rows(rows: list[tuple[str, ...]]) -> tuple[Ints, Ints, int] | None:
    """The folded tag sets of a pass's positions: ``(row_starts, tags, vocabulary)``, where
    position ``i``'s sorted, distinct tag ids (below ``vocabulary``) are
    ``tags[row_starts[i]:row_starts[i + 1]]``; ``None`` when no position has a tag.
    """
    flat = list(chain.from_iterable(rows))
    if not flat:
        return None
    ids: dict[str, int] = {}
    flat_ids = np.fromiter(map(ids.setdefault, flat, count()), dtype=np.int64, count=len(flat))
    remap: dict[int, int] = {}
    for tag in list(filterfalse(str.islower, ids)):  # the only tags that may fold
        folded = ascii_fold(tag)
        if folded != tag:
            own = ids[tag]
            remap[own] = ids.setdefault(folded, own)
    if remap:
        lookup = np.arange(len(flat), dtype=np.int64)
        lookup[np.fromiter(remap, dtype=np.int64, count=len(remap))] = np.fromiter(
            remap.values(), dtype=np.int64, count=len(remap)
        )
        flat_ids = lookup[flat_ids]
    used = np.zeros(len(flat), dtype=np.bool_)  # ids are first positions: make them dense
    used[flat_ids] = True
    dense_id = np.cumsum(used) - 1
    vocabulary = int(dense_id[-1]) + 1
    flat_ids = dense_id[flat_ids]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    pairs = np.sort(
        np.repeat(np.arange(len(rows), dtype=np.int64), lengths) * vocabulary + flat_ids
    )
    if len(pairs) > 1:  # drop a tag repeated within a row
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    row_of, tags = np.divmod(pairs, vocabulary)
    row_starts = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=len(rows)), out=row_starts[1:])
    return row_starts, tags, vocabulary


def _distinct_sets(tags: Ints, row_starts: Ints, lengths: Ints) -> tuple[Ints, Ints, Ints]:
    """The rows' distinct sets: ``(set_of_row, starts, tags)``, where row ``r`` holds set
    ``set_of_row[r]`` (-1 for empty rows), whose tags are ``tags[starts[k]:starts[k + 1]]``.
    Equal rows (sorted tag ids) are found by their bytes."""
    buffer = tags.astype(np.int64).tobytes()
    canonical: dict[bytes, int] = {}
    set_of_row = np.fromiter(
        (
            canonical.setdefault(buffer[8 * a : 8 * a + 8 * n], len(canonical)) if n else -1
            for a, n in zip(row_starts.tolist(), lengths.tolist(), strict=False)
        ),
        dtype=np.int64,
        count=len(lengths),
    )
    first_rows = np.flatnonzero(set_of_row >= 0)
    first_rows = first_rows[np.unique(set_of_row[first_rows], return_index=True)[1]]
    set_lengths = lengths[first_rows]
    starts = np.zeros(len(first_rows) + 1, dtype=np.int64)
    np.cumsum(set_lengths, out=starts[1:])
    gather = np.repeat(row_starts[first_rows] - starts[:-1], set_lengths)
    gather += np.arange(len(gather))
    return set_of_row, starts, tags[gather]


def _own_positions(items: Sequence[ContextItem], tagged: npt.NDArray[np.bool_]) -> FloatArray:
    """For tagged items, the number of positions holding that very object (usually 1)."""
    own: FloatArray = tagged.astype(np.float64)
    if len(set(map(id, items))) == len(items):
        return own
    counts = Counter(map(id, items))
    return own * np.fromiter(
        (counts[id(item)] for item in items), dtype=np.float64, count=len(items)
    )
