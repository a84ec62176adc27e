"""FrequencyScorer: the share of an item's peers that share a tag with it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from itertools import chain, count, filterfalse, pairwise
from operator import attrgetter, or_

import numpy as np
import numpy.typing as npt

from cupel._model import ContextItem, ascii_fold
from cupel.scorers._base import ArrayScorer, FloatArray

__all__ = ["FrequencyScorer"]

_TAGS = attrgetter("tags")
Ints = npt.NDArray[np.int64]

_SUBSET_SUM_TAGS = 22
"""Up to this many distinct (folded) tags in a pass, sets may be counted by a subset-sum
transform over all 2^tags masks (at most 4M counters, 32 MiB)."""
_DIRECT_KEYS = 2**22
"""Subset keys below this count directly (one bincount) instead of being sorted."""
_BITSET_BYTES = 32 * 2**20
"""The bitset method is used when one bitset per tag over all tagged positions fits in
this much memory."""


class FrequencyScorer(ArrayScorer):
    """``peers sharing at least one tag / (len(all_items) - 1)``.

    Tags compare case-insensitively (ASCII folding). The scored item is skipped by
    identity (every position holding that very object), never by equality, while the
    denominator stays ``len(all_items) - 1``. Tagless items score 0.0 and never count as
    peers; a pass of one item scores 0.0.

    ``score_all`` works on the distinct folded tag sets of the pass and counts, for each,
    the positions whose set meets it, exactly, with whichever of three methods is
    estimated cheapest:

    - few distinct tags (at most 22): a subset-sum transform over tag masks,
      O(N + 2^tags · tags);
    - otherwise, when one bitset per tag over the positions fits in 32 MiB: the union of
      the set's tag bitsets, O(total tags · N / 64) machine-word operations;
    - otherwise (a large, sparse vocabulary): inclusion-exclusion over the subsets of each
      set that some *other* set also contains, grown level by level, which for sparse
      tags is O(total tags · pairs per set).

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

        The distinct folded tag sets of the pass are found with a few C-level passes
        (:func:`_tag_sets`); ``touching[s]`` is the number of positions whose set meets
        ``s`` (the item's own positions included); the item's peers are that minus the
        positions holding the item itself, which the per-item definition skips by
        identity.
        """
        n = len(items)
        if n <= 1:
            return np.zeros(n)
        found = _tag_sets(list(map(_TAGS, items)))
        if found is None:
            return np.zeros(n)
        set_of_position, starts, tags, vocabulary = found
        tagged = set_of_position >= 0
        mult = np.bincount(set_of_position[tagged], minlength=len(starts) - 1).astype(np.int64)
        touching = touching_counts(starts, tags, mult, vocabulary).astype(np.float64)
        hits = np.zeros(n)
        hits[tagged] = touching[set_of_position[tagged]]
        hits -= _own_positions(items, tagged)
        hits /= n - 1
        return hits

    def __repr__(self) -> str:
        return "FrequencyScorer()"


def _tag_sets(tag_tuples: list[tuple[str, ...]]) -> tuple[Ints, Ints, Ints, int] | None:
    """The distinct folded tag sets of a pass: ``(set_of_position, starts, tags,
    vocabulary)``, where set ``k``'s sorted, distinct tag ids (below ``vocabulary``) are
    ``tags[starts[k]:starts[k + 1]]`` and ``set_of_position[i]`` is position ``i``'s set
    (-1 for untagged positions); ``None`` when no position has a tag.

    Strings are touched once per distinct tags tuple and once per distinct tag (dict
    passes at C level); the rest is integer array work. Only tags with an upper-case
    letter are folded.
    """
    first_of: dict[tuple[str, ...], int] = {}
    raw_of_position = np.fromiter(
        map(first_of.setdefault, tag_tuples, count()), dtype=np.int64, count=len(tag_tuples)
    )
    rows = list(first_of)
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
        old = np.fromiter(remap, dtype=np.int64, count=len(remap))
        new = np.fromiter(remap.values(), dtype=np.int64, count=len(remap))
        lookup = np.arange(max(ids.values()) + 1, dtype=np.int64)
        lookup[old] = new
        flat_ids = lookup[flat_ids]
    _, flat_ids = np.unique(flat_ids, return_inverse=True)
    vocabulary = int(flat_ids.max()) + 1
    # Canonical rows: each raw tuple's ids sorted and made distinct, then equal rows merged.
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    pairs = np.sort(row_of * vocabulary + flat_ids)
    if len(pairs) > 1:  # drop a tag repeated within a row
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    row_of, tags = np.divmod(pairs, vocabulary)
    bounds = np.searchsorted(row_of, np.arange(len(rows) + 1)).tolist()
    buffer = tags.astype(np.int64).tobytes()
    canonical: dict[bytes, int] = {}
    set_of_row = np.fromiter(
        (
            canonical.setdefault(buffer[8 * a : 8 * b], len(canonical)) if b > a else -1
            for a, b in pairwise(bounds)
        ),
        dtype=np.int64,
        count=len(rows),
    )
    keep = np.zeros(len(rows), dtype=np.bool_)
    first_rows = np.unique(set_of_row, return_index=True)[1]
    keep[first_rows] = True
    keep &= set_of_row >= 0
    kept_lengths = np.diff(bounds)[keep]
    order = np.argsort(set_of_row[keep], kind="stable")
    kept_starts = np.array(bounds[:-1], dtype=np.int64)[keep][order]
    kept_lengths = kept_lengths[order]
    starts = np.zeros(len(kept_lengths) + 1, dtype=np.int64)
    np.cumsum(kept_lengths, out=starts[1:])
    gather = np.repeat(kept_starts - starts[:-1], kept_lengths) + np.arange(int(starts[-1]))
    _, dense = np.unique(raw_of_position, return_inverse=True)
    return set_of_row[dense], starts, tags[gather], vocabulary


def touching_counts(
    starts: Ints, tags: Ints, mult: Ints, vocabulary: int, method: str | None = None
) -> Ints:
    """For each distinct non-empty tag set ``k`` (sorted tag ids
    ``tags[starts[k]:starts[k + 1]]``, below ``vocabulary``), held by ``mult[k]``
    positions: the number of positions whose set meets it (its own included).

    ``method`` forces ``"subset_sum"``, ``"bitsets"`` or ``"levels"`` (tests); by
    default the cheapest applicable one runs. All three are exact.
    """
    if method is None:
        method = _cheapest(len(starts) - 1, len(tags), int(mult.sum()), vocabulary)
    if method == "subset_sum":
        return _by_subset_sum(starts, tags, mult, vocabulary)
    if method == "bitsets":
        return _by_bitsets(starts, tags, mult, vocabulary)
    return _by_levels(starts, tags, mult, vocabulary)


def _cheapest(sets: int, tags: int, tagged: int, vocabulary: int) -> str:
    """The method with the lowest estimated cost (nanoseconds, measured roughly on CPython
    3.11 / NumPy 2): the subset-sum transform costs about 1.5 ns per mask and tag; bitsets
    about 0.3 ns per word per OR and 4 ns per word per popcount, plus 1 µs per set;
    inclusion-exclusion is the fallback when bitsets would not fit in memory."""
    words = tagged // 64 + 1
    bitsets = sets * ((tags / max(sets, 1)) * 0.3 + 4.0) * words + sets * 1000.0
    if vocabulary <= _SUBSET_SUM_TAGS and (1 << vocabulary) * vocabulary * 1.5 < bitsets:
        return "subset_sum"
    if vocabulary * words * 8 <= _BITSET_BYTES:
        return "bitsets"
    return "levels"


def _by_subset_sum(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """``within[m]`` starts as the positions whose set is exactly mask ``m``; after the
    subset-sum (zeta) transform it is the positions whose set lies within ``m``. A set
    is met by every tagged position except those within its complement."""
    masks = np.bitwise_or.reduceat(np.left_shift(1, tags), starts[:-1]) if len(tags) else tags
    size = 1 << vocabulary
    within = np.bincount(masks, weights=mult, minlength=size).astype(np.int64)
    for bit in range(vocabulary):
        view = within.reshape(-1, 2, 1 << bit)
        view[:, 1, :] += view[:, 0, :]
    result: Ints = int(mult.sum()) - within[(size - 1) ^ masks]
    return result


def _bitset(indices: Ints) -> int:
    """The Python ``int`` whose set bits are ``indices`` (ascending, distinct)."""
    if len(indices) == 0:
        return 0
    buffer = np.zeros(int(indices[-1]) // 8 + 1, dtype=np.uint8)
    np.bitwise_or.at(buffer, indices >> 3, np.left_shift(1, indices & 7).astype(np.uint8))
    return int.from_bytes(buffer.tobytes(), "little")


def _by_bitsets(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """Set ``k`` owns ``mult[k]`` consecutive bits; each tag's bitset holds the bits of
    the sets containing it. A set's count is the popcount of the OR of its tags'
    bitsets (Python integers: one C loop over machine words per OR)."""
    lengths = np.diff(starts)
    owners = np.repeat(np.arange(len(lengths)), lengths)
    ends = np.cumsum(mult)
    first_bit = ends - mult
    by_tag = np.argsort(tags, kind="stable")  # owners stay ascending within a tag
    owners, sorted_tags = owners[by_tag], tags[by_tag]
    counts = mult[owners]
    bits = np.repeat(first_bit[owners], counts) + (
        np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    )
    bounds = np.searchsorted(np.repeat(sorted_tags, counts), np.arange(vocabulary + 1)).tolist()
    bitsets = [_bitset(bits[bounds[t] : bounds[t + 1]]) for t in range(vocabulary)]
    get = bitsets.__getitem__
    tag_list = tags.tolist()
    edges = starts.tolist()
    return np.fromiter(
        (reduce(or_, map(get, tag_list[a:b])).bit_count() for a, b in pairwise(edges)),
        dtype=np.int64,
        count=len(lengths),
    )


def _by_levels(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """Inclusion-exclusion over shared subsets, level by level.

    The positions of *other* sets meeting ``s`` number
    ``sum over non-empty subsets u of s of (-1)^(|u|+1) * other(u, s)``, where
    ``other(u, s)`` counts the positions of sets other than ``s`` that contain ``u``. Only
    subsets with ``other > 0`` contribute, and a subset can have one only if the subset
    one tag smaller does, so records ``(s, u)`` are grown one tag at a time (``u`` as a
    prefix of ``s``'s sorted tags) from the survivors of the level before; subsets are
    identified level by level by dense ids. For sparse tags few subsets beyond single
    tags survive.
    """
    lengths = np.diff(starts)
    count = len(lengths)
    owner = np.repeat(np.arange(count), lengths)
    last = np.arange(len(tags)) - starts[owner]  # index of the subset's last tag in its set
    keys = tags
    result: Ints = mult.copy()
    sign = 1
    key_range = vocabulary  # keys lie in [0, key_range)
    while len(keys):
        if key_range <= _DIRECT_KEYS:  # small keys are their own ids: no sort
            inverse, ids_count = keys, key_range
        else:
            ids, inverse = np.unique(keys, return_inverse=True)
            ids_count = len(ids)
        held = np.bincount(inverse, weights=mult[owner], minlength=ids_count).astype(np.int64)
        others = held[inverse] - mult[owner]
        alive = others > 0
        owner, last, inverse, others = owner[alive], last[alive], inverse[alive], others[alive]
        result += sign * np.bincount(owner, weights=others, minlength=count).astype(np.int64)
        extensions = lengths[owner] - 1 - last
        grow = extensions > 0
        owner, last, inverse, extensions = owner[grow], last[grow], inverse[grow], extensions[grow]
        total = int(extensions.sum())
        if total == 0:
            break
        parent = np.repeat(np.arange(len(owner)), extensions)
        step = np.arange(total) - np.repeat(np.cumsum(extensions) - extensions, extensions)
        owner = owner[parent]
        last = last[parent] + 1 + step
        keys = inverse[parent].astype(np.int64) * vocabulary + tags[starts[owner] + last]
        key_range = ids_count * vocabulary
        sign = -sign
    return result


def _own_positions(items: Sequence[ContextItem], tagged: npt.NDArray[np.bool_]) -> FloatArray:
    """For tagged items, the number of positions holding that very object (usually 1)."""
    own: FloatArray = tagged.astype(np.float64)
    if len(set(map(id, items))) == len(items):
        return own
    counts: dict[int, int] = {}
    for item in items:
        counts[id(item)] = counts.get(id(item), 0) + 1
    return own * np.fromiter(
        (counts[id(item)] for item in items), dtype=np.float64, count=len(items)
    )
