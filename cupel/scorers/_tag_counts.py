"""Exact tag-set meeting counts for FrequencyScorer: for each distinct tag set, the number
of positions whose set shares a tag with it, by whichever of four methods is cheapest."""

from __future__ import annotations

from functools import cache, reduce
from itertools import combinations, pairwise
from math import comb
from operator import or_

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_SUBSET_SUM_TAGS = 22
"""Up to this many distinct (folded) tags in a pass, sets may be counted by a subset-sum
transform over all 2^tags masks (at most 4M counters, 32 MiB)."""
_DIRECT_KEYS = 2**22
"""Subset keys below this count directly (one bincount) instead of being sorted."""
_BITSET_BYTES = 32 * 2**20
"""The bitset method is used when one bitset per tag over all tagged positions fits in
this much memory."""


def touching_counts(
    starts: Ints, tags: Ints, mult: Ints, vocabulary: int, method: str | None = None
) -> Ints:
    """For each distinct non-empty tag set ``k`` (sorted tag ids
    ``tags[starts[k]:starts[k + 1]]``, below ``vocabulary``), held by ``mult[k]``
    positions: the number of positions whose set meets it (its own included).

    ``method`` forces ``"subset_sum"``, ``"bitsets"``, ``"combinations"`` (sets of at most
    12 tags) or ``"levels"`` (tests); by default the cheapest applicable one runs. All are
    exact.
    """
    if method is None:
        method = _cheapest(np.diff(starts), int(mult.sum()), vocabulary)
    if method == "subset_sum":
        return _by_subset_sum(starts, tags, mult, vocabulary)
    if method == "bitsets":
        return _by_bitsets(starts, tags, mult, vocabulary)
    if method == "combinations":
        return _by_combinations(starts, tags, mult, vocabulary)
    return _by_levels(starts, tags, mult, vocabulary)


def _cheapest(lengths: Ints, tagged: int, vocabulary: int) -> str:
    """The method with the lowest estimated cost (nanoseconds, measured roughly on CPython
    3.11 / NumPy 2.4, 2 shared CPUs): the subset-sum transform costs about 1.5 ns per mask
    and tag; bitsets about 0.3 ns per word per OR and 4 ns per word per popcount, plus
    1 µs per set; the combinations method at most about 25 ns per subset of each set plus
    50 µs per level (fewer subsets when tags are rarely shared). Inclusion-exclusion level
    by level is the fallback for sets of more than 12 tags when bitsets would not fit."""
    sets, tags = len(lengths), int(lengths.sum())
    longest = int(lengths.max()) if sets else 0
    words = tagged // 64 + 1
    bitsets = sets * ((tags / max(sets, 1)) * 0.3 + 4.0) * words + sets * 1000.0
    costs: dict[str, float] = {}
    if vocabulary <= _SUBSET_SUM_TAGS:
        costs["subset_sum"] = (1 << vocabulary) * vocabulary * 1.5
    if longest <= _COMBINATION_TAGS:
        costs["combinations"] = 25.0 * float(np.ldexp(1.0, lengths).sum()) + 50_000.0 * longest
    if vocabulary * words * 8 <= _BITSET_BYTES:
        costs["bitsets"] = bitsets
    return min(costs, key=costs.__getitem__) if costs else "levels"


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


def _by_combinations(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """Inclusion-exclusion over shared subsets (as :func:`_by_levels`), with the sets
    grouped by length so that level ``k`` is one ``(sets, comb(length, k))`` array of
    subset keys per group, computed from the level before by column gathers.

    A ``k``-subset's key is its rank among all ``k``-subsets (``sum comb(t_j, j)`` over its
    sorted tags, ``comb`` read from a table) or, past 2^62, the dense id of its
    ``(k-1)``-prefix times ``vocabulary`` plus its last tag. Small key ranges are counted
    by one bincount; otherwise a sort finds the keys held by more than one set (a key held
    once adds nothing; below 2^31 the 32-bit keys alone are sorted and the records holding
    a repeated key found through a hash table) and only those records are touched again.
    A subset is only generated when every subset one tag smaller is shared (apriori), and
    a set leaves once none of its subsets is. When few sets repeat, each position is
    counted as a set of its own (no weights).
    """
    extra = int(mult.sum()) - len(mult)
    if extra > 0 and 32 * extra <= len(mult):  # few repeated sets: one unit set per position
        return _unit_sets(starts, tags, mult, vocabulary)
    return _combinations(starts, tags, mult, vocabulary)


def _combinations(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """:func:`_by_combinations` itself."""
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
    share: Ints = np.bincount(r, held_by, minlength=shape[0]).astype(np.int64)
    return share


def _unit_sets(starts: Ints, tags: Ints, mult: Ints, vocabulary: int) -> Ints:
    """:func:`_by_combinations` with set ``k`` repeated ``mult[k]`` times, each copy held
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
