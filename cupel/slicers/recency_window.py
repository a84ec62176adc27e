"""RecencyWindowSlice: the newest items that fit, without holes (a cupel extension).

The spec's slicers choose by score, so neighbouring items with nearly equal scores are
kept or dropped by their *length*: a chat window fills with short messages of one role
and has holes. A recency window instead walks from the newest item back in time and takes
every item while it fits; it stops at the first one that does not. What it keeps is one
contiguous stretch of the timeline, ending at the newest item.

Walk order: items with a timestamp, newest first (equal timestamps in the Sort stage's
order: score descending, then input order), then items without a timestamp in the Sort
stage's order.

Blocks: with ``block_key`` set (default ``"cupel:turn"``), consecutive items in walk order
whose ``metadata[block_key]`` holds the same value form a *block*, taken whole or not at
all — a chat turn (the question with its answer and tool calls) is never split. Items
without the key are blocks of their own. Block values must be strings or integers.

Partial blocks (opt-in, ``partial_blocks=True``; the history presets use it): the first
block that does not fit whole keeps its oldest item — its *head*: a turn's question, or an
agent's task — and its newest items that fit with it, contiguously, when at least one does;
the walk stops there. A long agent turn interrupted by a follow-up question keeps its task
and its latest tool rounds instead of disappearing whole.

Older important items (opt-in): with ``scored_share`` = *s* > 0 the walk first fills
``(1 - s)`` of the target; then the best units *older than that window* by score per token
(as :class:`~cupel.GreedySlice` picks items) get up to ``floor(s * target)`` tokens; then
the walk continues where it stopped with whatever budget is left (with ``partial_blocks``
only this last walk may keep a block in part). When the first walk takes nothing (the
newest block needs more than its part), the window starts with the newest block alone when
it fits the target, and the share gets what that leaves (at most ``floor(s * target)``);
when it does not fit whole, there is no share: the window is the plain one (the newest
block is kept, or kept in part, whenever it fits). A unit is a block,
taken whole (a recalled turn keeps its question with its answer), or an item without a
block; its score is the best of its members' scores, and a unit scoring 0 is never taken
(its tokens go back to the walk). Those older units are the only holes
the window can have; :meth:`RecencyWindowSlice.recalled` lists them (the pipeline's report
gives them as ``recalled``).

Cache-stable refills (opt-in): with ``low_water`` = *L*, when every candidate fits the target
all are taken; when they do not, the rule above runs with the target lowered to
``floor(L * target)`` — except that the newest block is kept whenever it fits the target:
when it alone exceeds the lowered target, the window is that block (with ``partial_blocks``:
its newest item and its head; without ``scored_share``). :mod:`cupel.conversation`
replays this rule over a history, unit by unit, so that a cache-stable window grows by
appending until it overflows and is then cut back to the low-water mark — the prompt's
prefix stays byte-identical between cuts, and providers' prompt caches keep hitting.

Zero-token items are taken when the walk reaches them (they always fit) and left out
behind the cut. The report explains every item behind the cut as
:class:`~cupel.OutsideWindow` (the tokens the unit at the cut needed, the tokens left).

>>> from datetime import datetime, timedelta, timezone
>>> from cupel import ContextBudget, ContextItem, ScoredItem
>>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> turns = [(1, "Q1", 10), (1, "A1", 30), (2, "Q2", 10), (2, "A2", 5)]
>>> items = [ContextItem(content=text, tokens=tokens, metadata={"cupel:turn": turn},
...                      timestamp=t0 + timedelta(minutes=i))
...          for i, (turn, text, tokens) in enumerate(turns)]
>>> scored = [ScoredItem(item, 0.5) for item in items]
>>> budget = ContextBudget(max_tokens=45, target_tokens=45)
>>> sorted(i.content for i in RecencyWindowSlice().slice(scored, budget))  # turn 1 is 40
['A2', 'Q2']

Without blocks the answer A1 would be kept without its question Q1:

>>> sorted(i.content for i in RecencyWindowSlice(block_key=None).slice(scored, budget))
['A1', 'A2', 'Q2']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from operator import itemgetter

import numpy as np

from cupel._errors import ItemError, SlicerConfigError
from cupel._fastpath import IntArray
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.diagnostics._reasons import ExclusionReason, Filtered, OutsideWindow
from cupel.slicers._base import BaseSlicer, Candidates, fail, is_number
from cupel.slicers.greedy import greedy_positions

__all__ = ["DEFAULT_BLOCK_KEY", "GivenWindowShare", "RecencyWindowSlice", "plain_window"]

DEFAULT_BLOCK_KEY = "cupel:turn"
"""The metadata key whose value groups items into blocks (a chat turn)."""

_NO_BLOCK = object()

BlockOf = Callable[[int], object]
"""The block of the candidate at a position (``_NO_BLOCK``: a block of its own)."""


class RecencyWindowSlice(BaseSlicer):
    """Take the newest items while they fit, contiguously; stop at the first that does not.

    Parameters:
        block_key: metadata key grouping consecutive items into blocks taken whole
            (default ``"cupel:turn"``); ``None``: every item stands alone.
        scored_share: share of the target, ``0 <= scored_share < 1``, that may go to the
            best-scored units (blocks whole) older than the window (default 0: a pure
            window).
        low_water: ``0 < low_water <= 1``, or ``None`` (default): when the candidates do
            not all fit, refill only to this share of the target (cache-stable windows).
        partial_blocks: the first block that does not fit whole keeps its oldest item and
            its newest items that fit (default ``False``: blocks whole or not at all).

    See the module documentation for the walk order and the exact rule.
    """

    __slots__ = ("block_key", "low_water", "partial_blocks", "scored_share")

    def __init__(
        self,
        block_key: str | None = DEFAULT_BLOCK_KEY,
        *,
        scored_share: float = 0.0,
        low_water: float | None = None,
        partial_blocks: bool = False,
    ) -> None:
        if block_key is not None and (not isinstance(block_key, str) or not block_key):
            rule = "must be a non-empty string or None"
            raise fail("RecencyWindowSlice", "block_key", rule, block_key)
        if not (is_number(scored_share) and 0.0 <= scored_share < 1.0):
            rule = "must be a number with 0 <= scored_share < 1"
            raise fail("RecencyWindowSlice", "scored_share", rule, scored_share)
        if low_water is not None and not (is_number(low_water) and 0.0 < low_water <= 1.0):
            rule = "must be None or a number with 0 < low_water <= 1"
            raise fail("RecencyWindowSlice", "low_water", rule, low_water)
        if not isinstance(partial_blocks, bool):
            raise fail("RecencyWindowSlice", "partial_blocks", "must be a bool", partial_blocks)
        self.block_key = block_key
        self.scored_share = float(scored_share)
        self.low_water = None if low_water is None else float(low_water)
        self.partial_blocks = partial_blocks

    def _key(self) -> tuple[str | None, float, float | None, bool]:
        return (self.block_key, self.scored_share, self.low_water, self.partial_blocks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecencyWindowSlice) or type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self), *self._key()))

    # -- the spec's list interface ----------------------------------------------------
    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        if not scored or budget.target_tokens <= 0:
            return []
        items = [entry.item for entry in scored]
        return [items[p] for p in self._choose_scored(items, scored, budget)[0]]

    def _choose_scored(
        self, items: list[ContextItem], scored: Sequence[ScoredItem], budget: ContextBudget
    ) -> tuple[list[int], list[list[int]]]:
        """:meth:`_choose` over the spec's list interface (``items``: ``scored``'s items)."""
        tokens = [item.tokens for item in items]
        order = _walk_order(items)
        scores = [entry.score for entry in scored]
        return self._choose(items, tokens, order, budget.target_tokens, scores)

    def recalled(
        self, scored: Sequence[ScoredItem], budget: ContextBudget
    ) -> list[tuple[list[ContextItem], float]]:
        """The units the scored share recalled from behind the window (not those the walk
        reached after it), in the order it took them: each unit's items (newest first) and
        its score (its best member's). Empty without a share; the report's ``recalled``."""
        if not self.scored_share or not scored or budget.target_tokens <= 0:
            return []
        items = [entry.item for entry in scored]
        picked = self._choose_scored(items, scored, budget)[1]
        return [([items[p] for p in unit], max(scored[p].score for p in unit)) for unit in picked]

    def exclusion_reasons(
        self,
        scored: Sequence[ScoredItem],
        selected: Sequence[ContextItem],
        budget: ContextBudget,
    ) -> dict[int, ExclusionReason]:
        """Why each candidate behind the window's cut was left out, by ``id(item)``:
        :class:`~cupel.OutsideWindow` (the tokens the unit at the cut needed, those left)."""
        items = [entry.item for entry in scored]
        taken = {id(item) for item in selected}
        target = self._target([item.tokens for item in items], budget.target_tokens)
        available = target - sum(item.tokens for item in selected)
        order = _walk_order(items)
        blocks = _blocks(self.block_key, items)
        cut = next((position for position in order if id(items[position]) not in taken), None)
        if cut is None:
            return {}
        # the unit at the cut: its block's members that were not taken
        members = _block_at(order, order.index(cut), blocks)[0]
        needed = sum(items[p].tokens for p in members if id(items[p]) not in taken)
        reason = OutsideWindow(cut_tokens=needed, available_tokens=available)
        return {id(item): reason for item in items if id(item) not in taken}

    # -- the array route (the pipeline's fast path) -------------------------------------
    def _select_positions(self, candidates: Candidates, budget: ContextBudget) -> IntArray:
        """The window as candidate positions, in walk order."""
        target = budget.target_tokens
        if len(candidates) == 0 or target <= 0:
            return np.zeros(0, dtype=np.intp)
        items = candidates.item_list()
        tokens: list[int] = candidates.tokens.tolist()
        order = _fast_walk_order(candidates) or _walk_order(items)
        scores: list[float] = candidates.scores.tolist() if self.scored_share else []
        chosen = self._choose(items, tokens, order, target, scores)[0]
        return np.array(chosen, dtype=np.intp)

    # -- the rule ---------------------------------------------------------------------------
    def _choose(
        self,
        items: Sequence[ContextItem],
        tokens: Sequence[int],
        order: Sequence[int],
        target: int,
        scores: Sequence[float],
    ) -> tuple[list[int], list[list[int]]]:
        """Positions (into ``items``) of the window, in walk order (then the units the
        scored share took from behind it, then the rest of the walk), and those units;
        ``scores`` are read only with a share."""
        full = target
        target = self._target(tokens, target)
        blocks = _blocks(self.block_key, items)
        share = self.scored_share
        partial = self.partial_blocks
        if not share:
            return _walk_newest(order, target, full, tokens, blocks, partial), []
        reserve = math.floor(share * target)
        # whole blocks only before the share: a block kept in part would leave a hole
        # inside its turn once the walk continues behind it
        window, cut, used = _walk(order, 0, target - reserve, tokens, blocks, frozenset())
        if not window and order:  # the newest block needs more than the window's part:
            newest, end = _block_at(order, 0, blocks)  # it alone, the share gets the rest
            need = sum(tokens[p] for p in newest)
            if need > target:  # it does not fit whole: the plain window, no share
                return _walk_newest(order, target, full, tokens, blocks, partial), []
            window, cut, used = newest, end, need
            reserve = min(reserve, target - need)
        units = _share(order[cut:], reserve, tokens, scores, blocks) if reserve > 0 else []
        picked = [p for unit in units for p in unit]
        spent = used + sum(tokens[p] for p in picked)
        more, end, _ = _walk(
            order, cut, target - spent, tokens, blocks, frozenset(picked), partial=partial
        )
        if end > cut:  # units the walk then reached are in its stretch, not recalled
            reached = frozenset(order[cut:end])
            units = [unit for unit in units if unit[0] not in reached]
        return [*window, *picked, *more], units

    def _target(self, tokens: Sequence[int], target: int) -> int:
        """The target the walk uses: lowered to the low-water mark when the candidates do
        not all fit."""
        if self.low_water is not None and sum(tokens) > target:
            return math.floor(self.low_water * target)
        return target


class GivenWindowShare(RecencyWindowSlice):
    """A recency window given item by item (the conversation layer's replayed cache-stable
    one), and the scored share of ``slicer`` over the candidates outside it: every
    candidate in ``window`` (by identity) is taken, then the units of those in
    ``recallable`` as the share picks them, with the tokens left. The others are reported
    as ``Filtered(filter_name)``.
    """

    __slots__ = ("_filter", "_recallable", "_window")

    def __init__(
        self,
        slicer: RecencyWindowSlice,
        window: Sequence[ContextItem],
        recallable: Sequence[ContextItem],
        filter_name: str,
    ) -> None:
        super().__init__(
            slicer.block_key,
            scored_share=slicer.scored_share,
            low_water=slicer.low_water,
            partial_blocks=slicer.partial_blocks,
        )
        self._window = frozenset(map(id, window))
        self._recallable = frozenset(map(id, recallable))
        self._filter = filter_name

    def _choose(
        self,
        items: Sequence[ContextItem],
        tokens: Sequence[int],
        order: Sequence[int],
        target: int,
        scores: Sequence[float],
    ) -> tuple[list[int], list[list[int]]]:
        window = [p for p in order if id(items[p]) in self._window]
        rest = [p for p in order if id(items[p]) in self._recallable]
        left = target - sum(tokens[p] for p in window)
        blocks = _blocks(self.block_key, items)
        units = _share(rest, left, tokens, scores, blocks) if left > 0 and rest else []
        return [*window, *(p for unit in units for p in unit)], units

    def exclusion_reasons(
        self,
        scored: Sequence[ScoredItem],
        selected: Sequence[ContextItem],
        budget: ContextBudget,
    ) -> dict[int, ExclusionReason]:
        """Every candidate left out is ``Filtered(filter_name)``."""
        taken = {id(item) for item in selected}
        reason = Filtered(self._filter)
        return {id(e.item): reason for e in scored if id(e.item) not in taken}


def plain_window(
    slicer: RecencyWindowSlice,
    tokens: Sequence[int],
    blocks: Sequence[int | str | None],
    target: int,
) -> list[int]:
    """The window ``slicer`` (with ``scored_share == 0``) takes from candidates given
    newest first as columns: ``tokens[i]`` and ``blocks[i]`` (the block value, ``None``:
    a block of its own), within ``target``. Returns the indices taken, in walk order, by
    the walk :meth:`RecencyWindowSlice.slice` runs (for the conversation layer).

    >>> plain_window(RecencyWindowSlice(), [5, 30, 10], [2, 1, 1], 40)  # block 1 needs 40
    [0]
    """
    if slicer.scored_share:
        raise SlicerConfigError(
            "plain_window: the slicer picks older items by score (scored_share > 0)",
            field="scored_share",
            value=slicer.scored_share,
        )
    if not tokens or target <= 0:
        return []

    def block_of(position: int) -> object:
        value = None if slicer.block_key is None else blocks[position]
        return _NO_BLOCK if value is None else (type(value), value)

    low = slicer._target(tokens, target)
    return _walk_newest(range(len(tokens)), low, target, tokens, block_of, slicer.partial_blocks)


def _blocks(key: str | None, items: Sequence[ContextItem]) -> BlockOf:
    """``metadata[key]`` of each item, read on demand and checked."""
    if key is None:
        return lambda position: _NO_BLOCK
    known: dict[int, object] = {}

    def of(position: int) -> object:
        if position in known:
            return known[position]
        item = items[position]
        value = item.metadata.get(key, _NO_BLOCK)
        if value is not _NO_BLOCK:
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ItemError(
                    f"RecencyWindowSlice: metadata[{key!r}] of item {item.content[:40]!r} "
                    f"must be a string or an integer (the block it belongs to), got "
                    f"{type(value).__name__} {value!r}",
                    field=f"metadata[{key!r}]",
                    value=value,
                )
            value = (type(value), value)  # 1 and "1" are different blocks
        known[position] = value
        return value

    return of


def _walk(
    order: Sequence[int],
    start: int,
    budget: int,
    tokens: Sequence[int],
    blocks: BlockOf,
    skip: frozenset[int],
    *,
    partial: bool = False,
) -> tuple[list[int], int, int]:
    """Walk ``order`` from ``start``, taking each block while it fits ``budget`` (items in
    ``skip`` are already taken and cost nothing). With ``partial``, the first block that
    does not fit keeps its head and its newest items that fit with it, if any. Returns the
    taken positions, the walk index of the cut and the tokens used."""
    taken: list[int] = []
    used = 0
    remaining = budget
    index = start
    end = len(order)
    while index < end:
        members, following = _block_at(order, index, blocks)
        if skip:
            members = [p for p in members if p not in skip]
        need = sum(map(tokens.__getitem__, members))
        if need > remaining:
            if partial and len(members) > 1:
                head = members[-1]  # walk order is newest first: the block's oldest item
                room = remaining - tokens[head]
                tail: list[int] = []
                for p in members[:-1]:
                    if tokens[p] > room:
                        break
                    tail.append(p)
                    room -= tokens[p]
                if tail:
                    taken.extend((*tail, head))
                    return taken, following, used + remaining - room
            return taken, index, used
        taken.extend(members)
        used += need
        remaining -= need
        index = following
    return taken, end, used


def _walk_newest(
    order: Sequence[int],
    budget: int,
    full: int,
    tokens: Sequence[int],
    blocks: BlockOf,
    partial: bool,
) -> list[int]:
    """:func:`_walk`'s positions from the newest item with ``budget``; when that takes
    nothing (a low-water mark below the newest block), the newest block alone (with
    ``partial``: its newest item and its head) if it fits ``full``, the target before the
    mark."""
    taken = _walk(order, 0, budget, tokens, blocks, frozenset(), partial=partial)[0]
    if taken or budget >= full or not order:
        return taken
    newest = _block_at(order, 0, blocks)[0]
    if partial and len(newest) > 2:
        newest = [newest[0], newest[-1]]
    return newest if sum(tokens[p] for p in newest) <= full else taken


def _block_at(order: Sequence[int], index: int, blocks: BlockOf) -> tuple[list[int], int]:
    """The block starting at walk index ``index``: its positions and the walk index after it."""
    block = blocks(order[index])
    members = [order[index]]
    following = index + 1
    if block is not _NO_BLOCK:
        while following < len(order) and blocks(order[following]) == block:
            members.append(order[following])
            following += 1
    return members, following


def _walk_order(items: Sequence[ContextItem]) -> list[int]:
    """The positions of ``items`` newest first by timestamp (ties keep their order), then
    the undated ones in their order."""
    stamps = [item.timestamp for item in items]
    dated = [(stamp, p) for p, stamp in enumerate(stamps) if stamp is not None]
    # A reverse sort is stable too: equal timestamps keep their (score) order.
    dated.sort(key=itemgetter(0), reverse=True)
    return [p for _, p in dated] + [p for p, stamp in enumerate(stamps) if stamp is None]


def _fast_walk_order(candidates: Candidates) -> list[int] | None:
    """The walk order (descending input position) when the pipeline's items' timestamps
    strictly increase in input order (a conversation), else ``None``."""
    stamps = [item.timestamp for item in candidates.items]
    if None in stamps or any(a >= b for a, b in pairwise(stamps)):  # type: ignore[operator]
        return None
    descending: IntArray = np.argsort(-candidates.index, kind="stable")
    return list(descending.tolist())


def _share(
    older: Sequence[int],
    reserve: int,
    tokens: Sequence[int],
    scores: Sequence[float],
    blocks: BlockOf,
) -> list[list[int]]:
    """The scored share's picks among ``older`` (the walk behind the window's cut) within
    ``reserve`` tokens: whole units (a block, or an item without one), picked as
    :class:`~cupel.GreedySlice` picks items by their best member's score per token (ties
    in the Sort stage's order of their first members); a unit scoring 0 or less is never
    taken. Returns the units taken, in greedy order, each in walk order."""
    units: list[list[int]] = []
    previous: object = _NO_BLOCK
    for position in older:
        block = blocks(position)
        if block is not _NO_BLOCK and block == previous:
            units[-1].append(position)
        else:
            units.append([position])
        previous = block
    best = [max(scores[p] for p in unit) for unit in units]
    units = [unit for unit, score in zip(units, best, strict=True) if score > 0]
    units.sort(key=min)  # the Sort stage's order (positions are Sort-stage ranks)
    unit_scores = np.array([max(scores[p] for p in unit) for unit in units], dtype=np.float64)
    sizes = [sum(tokens[p] for p in unit) for unit in units]
    column = np.array(sizes, dtype=np.int64 if sum(sizes) < 2**63 else object)
    taken = greedy_positions(unit_scores, column, reserve)
    return [units[u] for u in taken.tolist()]
