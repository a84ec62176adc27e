"""Exact tag-set meeting counts for FrequencyScorer: for each tag set, the number of
positions whose set shares a tag with it. Two exact methods: :func:`by_postings` (pairs
found in the tags' posting lists; bounded by those pairs, nothing exponential in the tags
per set) and, for dense small vocabularies, :func:`by_shared_subsets` (inclusion-exclusion
over shared subsets; :func:`shared_subsets_pay` decides).
"""

from __future__ import annotations

from functools import cache
from itertools import combinations
from math import comb

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_DIRECT_KEYS = 2**22
"""Subset keys below this count directly (one bincount) instead of being sorted."""
_CHUNK_PAIRS = 2**21
"""Posting-list pairs sorted at once by :func:`by_postings` (about 16 bytes each)."""
_DENSE_RATIO = 4
"""Shared subsets are counted instead of posting-list pairs when those pairs outnumber the
sets' tag pairs (the records of the subsets' second level) this many times."""


def shared_subsets_pay(starts: Ints, tags: Ints) -> bool:
    """Whether :func:`by_shared_subsets` applies and beats :func:`by_postings` for the sets
    ``tags[starts[k]:starts[k + 1]]`` (one per position): every set has at most
    ``_COMBINATION_TAGS`` tags, and the pairs in the posting lists outnumber the sets' tag
    pairs ``_DENSE_RATIO`` times (long posting lists: a dense, small vocabulary)."""
    lengths = np.diff(starts)
    if len(lengths) == 0 or int(lengths.max()) > _COMBINATION_TAGS:
        return False
    held = np.bincount(tags)
    posting_pairs = int((held * (held - 1) // 2).sum())
    tag_pairs = int((lengths * (lengths - 1) // 2).sum())
    return posting_pairs > _DENSE_RATIO * max(tag_pairs, len(lengths))


def by_postings(starts: Ints, tags: Ints) -> Ints:
    """For each non-empty set ``k`` (distinct tag ids ``tags[starts[k]:starts[k + 1]]``):
    the number of sets that share a tag with it, itself included. The pairs of a chunk of
    sets with the later sets of their tags' posting lists are keyed
    ``(k - first) << shift | other`` and sorted: each distinct key is one pair sharing a
    tag, whichever tags they share, and counts for both."""
    count = len(starts) - 1
    narrow = np.int32 if count < 2**31 else np.int64
    owner = np.repeat(np.arange(count, dtype=narrow), np.diff(starts))
    order = np.argsort(tags, kind="stable")  # posting lists, sets ascending within each
    members = owner[order]
    ends = np.cumsum(np.bincount(tags))
    place = np.empty(len(tags), dtype=np.int64)
    place[order] = np.arange(len(tags))
    later = ends[tags] - place - 1  # the members after this entry's set
    result: Ints = np.ones(count, dtype=np.int64)
    per_set = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.add.reduceat(later, starts[:-1]), out=per_set[1:])
    shift = max(count - 1, 1).bit_length()
    first = 0
    while first < count:
        last = int(np.searchsorted(per_set, per_set[first] + _CHUNK_PAIRS, side="right")) - 1
        last = min(max(last, first + 1), count)
        a, b = int(starts[first]), int(starts[last])
        counts = later[a:b]
        total = int(per_set[last] - per_set[first])
        if total:
            offsets = np.cumsum(counts) - counts
            source = np.repeat(place[a:b] + 1 - offsets, counts)
            source += np.arange(total)
            dtype = np.int32 if (last - first) << shift < 2**31 else np.int64
            keys = np.repeat((owner[a:b] - first).astype(dtype) << shift, counts)
            keys |= members[source]
            keys.sort()
            fresh = np.empty(total, dtype=np.bool_)
            fresh[0] = True
            np.not_equal(keys[1:], keys[:-1], out=fresh[1:])
            pairs = keys[fresh]
            bounds = np.searchsorted(pairs, np.arange(last - first + 1, dtype=dtype) << shift)
            result[first:last] += np.diff(bounds)
            result += np.bincount(pairs & ((1 << shift) - 1), minlength=count)
        first = last
    return result


def by_shared_subsets(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """For each distinct non-empty tag set ``k`` (sorted tag ids
    ``tags[starts[k]:starts[k + 1]]``, below ``vocabulary``, at most ``_COMBINATION_TAGS``
    of them), held by ``mult[k]`` positions: the number of positions whose set meets it
    (its own included), by inclusion-exclusion over shared subsets.

    The positions of *other* sets meeting ``s`` number
    ``sum over non-empty subsets u of s of (-1)^(|u|+1) * other(u, s)``, where
    ``other(u, s)`` counts the positions of sets other than ``s`` that contain ``u``. A
    ``k``-subset is only generated when every subset one tag smaller is shared (apriori),
    a set leaves once none of its subsets is, and the sets are grouped by length so that
    level ``k`` is one ``(sets, comb(length, k))`` array of subset keys per group. A key is
    the subset's rank among all ``k``-subsets or, past 2^62, the dense id of its prefix
    times ``vocabulary`` plus its last tag.
    """
    extra = int(mult.sum()) - len(mult)
    if extra > 0 and 32 * extra <= len(mult):  # few repeated sets: one unit set per position
        return _unit_sets(starts, tags, mult, vocabulary)
    return _combinations(starts, tags, mult, vocabulary)


_RANKED = 2**62
"""Subsets of ``k`` tags are keyed by their rank among all ``k``-subsets of the vocabulary
(combinatorial number system) while there are fewer than this many."""
_COMBINATION_TAGS = 12
"""The combinations method handles passes whose sets have at most this many tags."""
_BINOMIAL_TAGS = 2**16
"""Up to this many tags, ``comb(tag, k)`` is read from a table instead of computed."""
_NARROW_KEYS = 2**31
"""Subset keys below this count that are not counted directly are sorted as 32-bit ints
(when there are at least ``_NARROW_RECORDS`` of them; fewer are sorted with their index)."""
_NARROW_RECORDS = 2**18


@cache
def _combination_tables(length: int, k: int) -> tuple[Ints, Ints, Ints]:
    """The ``k``-combinations of ``range(length)`` in lexicographic order, as ``(last,
    prefix, subs)``: each one's last index, the rank of its first ``k - 1`` indices among
    the ``(k - 1)``-combinations, and the ranks of its ``k`` subsets one index smaller."""
    combos = list(combinations(range(length), k))
    last = np.array([c[-1] for c in combos], dtype=np.int64)
    if k == 1:
        return last, np.zeros(len(combos), dtype=np.int64), np.zeros((len(combos), 1), np.int64)
    index = {c: i for i, c in enumerate(combinations(range(length), k - 1))}
    prefix = np.array([index[c[:-1]] for c in combos], dtype=np.int64)
    subs = np.array([[index[c[:i] + c[i + 1 :]] for i in range(k)] for c in combos], np.int64)
    return last, prefix, subs


def _binomials(values: Ints, k: int) -> Ints:
    """``comb(v, k)`` for each ``v`` (exact: each step's product is divisible)."""
    result: Ints = values.copy()
    for i in range(1, k):
        result *= values - i
        result //= i + 1
    return result


class _Group:
    """The sets of one length in the combinations method: their indices, tags (one row
    each), multiplicities, and for the level just counted each subset's key (or dense id)
    and whether another set shares it."""

    __slots__ = ("alive", "length", "mult", "prefix", "rows", "tags")

    def __init__(self, length: int, rows: Ints, tags: Ints, mult: Ints) -> None:
        self.length, self.rows, self.tags, self.mult = length, rows, tags, mult
        self.prefix: Ints = tags
        self.alive: npt.NDArray[np.bool_] = np.ones(tags.shape, dtype=np.bool_)


def _combinations(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """:func:`by_shared_subsets` itself."""
    lengths = np.diff(starts)
    count = len(lengths)
    result: Ints = mult.copy()
    groups = []
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        where = starts[rows][:, None] + np.arange(length)
        groups.append(_Group(length, rows, tags[where], mult[rows]))
    unit = bool((mult == 1).all())
    small = np.int32 if mult.sum() < 2**31 else np.int64  # counts of positions
    sign, k, id_range = 1, 1, 0
    complete = True  # every key of the level before was computed (not only shared ones)
    # comb(v, k) for every tag v (hockey stick: the sums of comb(u, k - 1) over u < v);
    # int64 wraps consistently, so a level whose ranks fit reads them exactly.
    table = np.arange(vocabulary, dtype=np.int64) if vocabulary <= _BINOMIAL_TAGS else None
    while groups:
        if table is not None and k > 1:
            table[1:] = np.cumsum(table[:-1])
            table[0] = 0
        ranked = k == 1 or comb(vocabulary, k) < _RANKED
        key_range = comb(vocabulary, k) if ranked else id_range * vocabulary
        direct = key_range <= _DIRECT_KEYS
        chosen: list[tuple[Ints, Ints] | None] = []
        sizes: list[int] = []
        for group in groups:
            dense = k == 1 or (direct and complete)
            chosen.append(None if dense else _candidates(group, k, complete))
            picked = chosen[-1]
            sizes.append(
                group.alive.shape[0] * comb(group.length, k) if picked is None else len(picked[0])
            )
        offsets = np.cumsum([0, *sizes]).tolist()
        narrow = not direct and key_range <= _NARROW_KEYS and offsets[-1] >= _NARROW_RECORDS
        keys = np.empty(offsets[-1], dtype=np.int32 if narrow else np.int64)
        weights = None if unit else np.empty(offsets[-1])
        for group, picked, offset, size in zip(groups, chosen, offsets[:-1], sizes, strict=True):
            last, prefix, _ = _combination_tables(group.length, k)
            if not ranked:
                lasts = group.tags
            else:
                lasts = _binomials(group.tags, k) if table is None else table[group.tags]
            out = keys[offset : offset + size]
            if picked is None:
                out = out.reshape(len(group.rows), len(last))
                before = np.take(group.prefix, prefix, axis=1)
                after = np.take(lasts, last, axis=1)
                if weights is not None:
                    weights[offset : offset + size].reshape(out.shape)[...] = group.mult[:, None]
            else:
                r, c = picked
                before, after = group.prefix[r, prefix[c]], lasts[r, last[c]]
                if weights is not None:
                    weights[offset : offset + size] = group.mult[r]
            if k == 1:
                out[...] = after
            elif ranked:
                np.add(before, after, out=out, dtype=out.dtype)
            else:
                np.multiply(before, vocabulary, out=out, dtype=out.dtype)
                out += after
        if direct:
            held = np.bincount(keys, weights, minlength=key_range).astype(small)
            sparse = False
            others = held[keys]
            values = keys
            id_range = key_range
        else:
            pos, gid, id_range = _shared(keys, key_range)
            w = np.ones(len(pos)) if weights is None else weights[pos]
            held_by: FloatArray = np.bincount(gid, w, minlength=id_range)[gid] - w  # others
            sparse = 4 * len(pos) < len(keys)  # else spread over all records, as direct
            if not sparse:
                others = np.zeros(len(keys), dtype=small)
                others[pos] = held_by
            values = keys  # read only where shared
            if comb(vocabulary, k + 1) >= _RANKED:
                values[pos] = gid
        complete = direct and all(picked is None for picked in chosen)
        survivors = []
        for group, picked, offset, size in zip(groups, chosen, offsets[:-1], sizes, strict=True):
            columns = comb(group.length, k)
            value = values[offset : offset + size]
            if not direct and sparse:  # only the shared records count
                mine = (pos >= offset) & (pos < offset + size)
                shape = (len(group.rows), columns)
                local, counted = pos[mine] - offset, held_by[mine]
                share = _sparse_level(group, picked, shape, value, local, counted)
                result[group.rows] += sign * share
            elif picked is None:
                own = others[offset : offset + size]
                own = own.reshape(len(group.rows), columns)
                total = own.sum(axis=1, dtype=np.int64)
                if direct:  # the counts include the set's own positions
                    total -= columns * group.mult
                    group.alive = own > group.mult[:, None]
                else:
                    group.alive = own > 0
                result[group.rows] += sign * total
                group.prefix = value.reshape(len(group.rows), columns)
            else:
                own = others[offset : offset + size]
                if direct:
                    own = own - group.mult[picked[0]]
                share = np.bincount(group.rows[picked[0]], own, minlength=count)
                result += sign * share.astype(np.int64)
                group.alive = np.zeros((len(group.rows), columns), dtype=np.bool_)
                group.alive[picked] = own > 0
                group.prefix = np.zeros((len(group.rows), columns), dtype=np.int64)
                group.prefix[picked] = value
            if group.length > k:
                keep = group.alive.any(axis=1)
                kept = int(np.count_nonzero(keep))
                if kept and 4 * kept < 3 * len(group.rows):
                    group.rows, group.tags, group.mult = (
                        group.rows[keep],
                        group.tags[keep],
                        group.mult[keep],
                    )
                    group.prefix, group.alive = group.prefix[keep], group.alive[keep]
                if kept:
                    survivors.append(group)
        groups = survivors
        sign = -sign
        k += 1
    return result


def _sparse_level(
    group: _Group,
    picked: tuple[Ints, Ints] | None,
    shape: tuple[int, int],
    value: Ints,
    local: Ints,
    held_by: FloatArray,
) -> Ints:
    """A sorted level's records of ``group`` (``shape`` sets by subsets, keys ``value``):
    ``local`` indexes the shared ones, held by ``held_by`` positions of other sets; the
    rest add nothing and are not alive. Returns the sum of each set in ``group.rows``."""
    if picked is None:
        r, c = np.divmod(local, shape[1])
        group.prefix = value.reshape(shape)
    else:
        r, c = picked[0][local], picked[1][local]
        group.prefix = np.zeros(shape, dtype=np.int64)
        group.prefix[picked] = value
    group.alive = np.zeros(shape, dtype=np.bool_)
    group.alive[r, c] = held_by > 0
    return np.bincount(r, held_by, minlength=shape[0]).astype(np.int64)


def _unit_sets(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """(:func:`by_shared_subsets`) with set ``k`` repeated ``mult[k]`` times, each copy held
    once (every count is then unweighted); each set's count is its first copy's."""
    lengths = np.diff(starts)
    owner = np.repeat(np.arange(len(mult)), mult)
    copied = lengths[owner]
    bounds = np.zeros(len(owner) + 1, dtype=np.int64)
    np.cumsum(copied, out=bounds[1:])
    gather = np.repeat(starts[owner] - bounds[:-1], copied) + np.arange(int(bounds[-1]))
    counts = _combinations(bounds, tags[gather], np.ones(len(owner), np.int64), vocabulary)
    result: Ints = counts[np.cumsum(mult) - mult]
    return result


def _candidates(group: _Group, k: int, complete: bool) -> tuple[Ints, Ints] | None:
    """The ``(row, column)`` of the ``k``-subsets whose ``k`` subsets one tag smaller are
    all shared, or ``None`` for all of them when most are and every key of the level
    before is known (a subset with an unshared part is never shared, so computing its key
    is harmless; but an unknown prefix key would give it a wrong one)."""
    if complete and group.alive.all():
        return None
    _, _, subs = _combination_tables(group.length, k)
    able: Ints | None = np.flatnonzero(np.count_nonzero(group.alive, axis=1) >= k)
    alive = group.alive
    if able is not None and 2 * len(able) < len(group.rows):
        alive = alive[able]
    else:
        able = None
    candidate = np.take(alive, subs[:, 0], axis=1)
    for i in range(1, k):
        candidate &= np.take(alive, subs[:, i], axis=1)
    if complete and able is None and 4 * np.count_nonzero(candidate) >= candidate.size:
        return None
    r, c = np.nonzero(candidate)
    return (r if able is None else able[r]), c


def _shared(keys: Ints | npt.NDArray[np.int32], key_range: int) -> tuple[Ints, Ints, int]:
    """The records whose key occurs more than once: ``(positions, group, groups)``, with
    ``group`` numbering their distinct keys densely in key order."""
    if keys.dtype == np.int32:
        return _shared_narrow(keys)
    n = len(keys)
    shift = max(n - 1, 1).bit_length()
    if key_range <= 1 << (62 - shift):  # one sort of packed (key, position)
        packed = keys << shift
        packed |= np.arange(n)
        packed.sort()
        ordered = packed >> shift
        packed &= (1 << shift) - 1
        position = packed
    else:
        position = np.argsort(keys)
        ordered = keys[position]
    equal = ordered[1:] != ordered[:-1]
    np.logical_not(equal, out=equal)
    repeated = np.zeros(n, dtype=np.bool_)
    repeated[1:] = equal
    repeated[:-1] |= equal
    kept = ordered[repeated]
    if len(kept) == 0:
        return position[:0], kept, 0
    fresh = np.concatenate(([True], kept[1:] != kept[:-1]))
    group = np.cumsum(fresh) - 1
    return position[repeated], group, int(group[-1]) + 1


_MIX32 = np.uint32(0x9E3779B1)


def _shared_narrow(keys: Ints | npt.NDArray[np.int32]) -> tuple[Ints, Ints, int]:
    """:func:`_shared` for 32-bit keys: the keys alone are sorted to find the repeated
    ones; a record is a candidate when a hash of its key hits a table of theirs, and the
    candidates, sorted, are looked up among them (exact: a false hit is dropped)."""
    ordered = np.sort(keys)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(repeated) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 0
    values = repeated[np.concatenate(([True], repeated[1:] != repeated[:-1]))]
    bits = min(max(32 * len(values), 2**10).bit_length(), 24)
    table = np.zeros(1 << bits, dtype=np.bool_)
    table[(values.view(np.uint32) * _MIX32) >> (32 - bits)] = True
    hashed = keys.view(np.uint32) * _MIX32
    hashed >>= 32 - bits
    candidates = np.flatnonzero(table[hashed])
    packed = keys[candidates].astype(np.int64) << 32
    packed |= np.arange(len(candidates))
    packed.sort()
    found = packed >> 32
    group = np.searchsorted(values, found)
    np.minimum(group, len(values) - 1, out=group)
    hit = values[group] == found
    return candidates[packed[hit] & 0xFFFFFFFF], group[hit], len(values)
