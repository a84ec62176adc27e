"""Cache-stable windows: the option (:func:`check_cache_stable`), the pipeline it implies
(:func:`cache_stable_pipeline`, whose recency window's mark makes :meth:`HistoryItems.select`
replay the cut) and the cut replayed from the history itself (:func:`stable_cut`), so any
process or object computes the same window for the same history.

>>> from cupel import Pipeline
>>> cache_stable_pipeline(Pipeline.from_policy("chat"), check_cache_stable(True, "demo")).slicer
RecencyWindowSlice(low_water=0.5, partial_blocks=True)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING

from cupel._errors import ConfigurationError
from cupel._model import ContextBudget
from cupel._pipeline import Pipeline
from cupel._pipeline.slice import effective_limits
from cupel.conversation._structure import ASSISTANT, SYSTEM, USER
from cupel.slicers.recency_window import RecencyWindowSlice

if TYPE_CHECKING:
    from cupel.conversation._columns import HistoryColumns

__all__ = [
    "DEFAULT_LOW_WATER",
    "StableCut",
    "cache_stable_pipeline",
    "check_cache_stable",
    "stable_cut",
    "window_budget",
]

DEFAULT_LOW_WATER = 0.5
"""The low-water mark of ``cache_stable=True``: when the window overflows, it is cut back
to 60% of the budget, then only appended to until it overflows again."""


def check_cache_stable(value: object, owner: str) -> float | None:
    """The low-water mark of a ``cache_stable`` option: ``None`` for ``False`` (off),
    :data:`DEFAULT_LOW_WATER` for ``True``, the number itself for ``0 < value <= 1``.

    >>> check_cache_stable(False, "x"), check_cache_stable(0.75, "x")
    (None, 0.75)
    """
    if value is False:
        return None
    if value is True:
        return DEFAULT_LOW_WATER
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 < value <= 1
    ):
        return float(value)
    raise ConfigurationError(
        f"{owner}: cache_stable must be False (off), True (low-water mark "
        f"{DEFAULT_LOW_WATER}) or a low-water mark with 0 < mark <= 1 (the share of the "
        f"budget an overflowing window is cut back to), got {value!r}",
        field="cache_stable",
        value=value,
    )


def cache_stable_pipeline(pipeline: Pipeline, low_water: float | None) -> Pipeline:
    """``pipeline`` with its recency window refilling to ``low_water`` (unchanged for
    ``None``, or when its window already has that mark).

    A pipeline whose slicer is not a :class:`~cupel.RecencyWindowSlice` has no window
    to keep stable: :class:`~cupel.ConfigurationError`.
    """
    if low_water is None:
        return pipeline
    slicer = pipeline.slicer
    if type(slicer) is not RecencyWindowSlice:
        raise ConfigurationError(
            f"cache_stable needs a recency-window policy (the presets chat, tool_use, "
            f"long_running, recall, or a RecencyWindowSlice); this pipeline's slicer is "
            f"{slicer!r}, which selects by score and has no cut to keep stable",
            field="cache_stable",
            value=low_water,
        )
    if slicer.low_water == low_water:
        return pipeline
    window = RecencyWindowSlice(
        slicer.block_key,
        scored_share=slicer.scored_share,
        low_water=low_water,
        partial_blocks=slicer.partial_blocks,
    )
    return Pipeline(
        pipeline.scorer,
        window,
        pipeline.placer,
        deduplication=pipeline.deduplication,
        overflow_strategy=pipeline.overflow_strategy,
        on_overflow=pipeline.on_overflow,
    )


@dataclass(frozen=True, slots=True)
class StableCut:
    """The replayed cut of a history (:func:`stable_cut`).

    ``cut``: the position (in :attr:`HistoryColumns.units`) where the window's stretch of
    the conversation starts — the window is the units pinned at the end of the history and
    every unit from ``cut`` on (``len(units)``: none but the pinned). ``previous``: the
    positions of the window of the *previous request* — the history before its newest
    assistant message, which answered that request — or ``None`` when the history has no
    assistant message (or that request's pinned messages alone exceeded the budget).
    ``head``: with partial blocks, the first unit of the earlier turn the cut falls inside
    (its question or task), kept before the stretch; ``None`` otherwise.
    """

    cut: int
    previous: tuple[int, ...] | None
    head: int | None = None


def stable_cut(
    history: HistoryColumns,
    budget: ContextBudget,
    low_water: float,
    *,
    blocks: bool = True,
    partial: bool = False,
    earlier: Sequence[tuple[int, ContextBudget]] = (),
    share: float = 0.0,
) -> StableCut:
    """Replay the cache-stable cut of ``history`` (linear in its units).

    After each unit is appended (a *step*), the window is what is pinned then (system
    messages, the latest user message so far, the latest ``keep_last`` units so far) and
    every unit from the cut on. While that fits the step's target (the budget less what is
    pinned, as the pipeline computes it) the cut stays; when it does not, the cut moves
    forward, by whole blocks, to the oldest block from which the unpinned units fit
    ``floor(low_water * target)`` — or to the newest unpinned block when that alone exceeds
    the mark but fits the target (the newest unit is kept whenever it fits). With ``blocks``,
    each earlier turn than the step's latest is one block: a cut inside a turn that has become
    an earlier one first widens to the whole turn (an earlier turn is kept whole or not at all);
    with ``partial`` (:class:`~cupel.RecencyWindowSlice` ``partial_blocks``) a cut may fall
    inside an earlier turn instead, whose first unit (its question or task) is then kept
    before the stretch and counted in it.
    A step whose pinned units alone exceed the budget, or leave no room, keeps nothing else
    (the cut passes it).

    ``earlier`` gives the budgets of earlier requests: ``(message index, budget)`` pairs,
    ascending — a step whose newest unit starts before the index uses that budget (the first
    such pair); later steps use ``budget`` (e.g. a calibration that changed at an assistant
    message applies from that message on, so earlier cuts never move).

    ``share`` (a recency window's ``scored_share``): the window keeps to the budget less
    that share of ``min(target_tokens, max_tokens - output_reserve)`` (:func:`window_budget`;
    the rest is for recalled units) — but the newest unit is still kept whenever it fits the
    whole budget.

    >>> from cupel.conversation import Conversation, HistoryItems
    >>> roles = ["system", "user", "assistant", "user", "assistant", "user"]
    >>> history = HistoryItems.from_conversation(Conversation(roles), ["x"] * 6,
    ...                                          [10, 30, 30, 30, 30, 30])
    >>> stable_cut(history, ContextBudget(max_tokens=150, target_tokens=150), 0.6)
    StableCut(cut=3, previous=(0, 1, 2, 3), head=None)
    """
    partial = partial and blocks  # without blocks every unit stands alone
    columns = _Columns(history)
    starts = [index for index, _ in earlier]
    budgets = [b for _, b in earlier]
    firsts = history.conversation.unit_firsts
    units = history.units
    size = len(units)
    newest_assistant = columns.newest_assistant
    keep_last = columns.keep_last
    tokens = history.tokens
    turns = columns.turns
    total = columns.total
    system_total = columns.system_total
    turn_start = columns.turn_start
    next_turn = columns.next_turn
    is_user = columns.is_user
    pinned_system = columns.pinned_system
    keep_latest_user = columns.keep_latest_user
    system_role = columns.system_role

    cut = 0
    user = -1  # the latest user position so far (pinned with keep_latest_user)
    last: deque[int] = deque(maxlen=keep_last or None)
    previous: tuple[int, ...] | None = None
    failed = False  # the pinned units of the last step exceeded the budget
    limits: dict[tuple[int, int], tuple[int, int, int]] = {}
    for k in range(size):
        if k == newest_assistant and not failed:  # (no request when the pinned did not fit)
            previous = _window(cut, k - 1, user, last, columns, partial)
        if is_user[k] and keep_latest_user:
            user = k
        if keep_last and not system_role[k]:
            last.append(k)
        pins = set(last)
        if user >= 0:
            pins.add(user)
        pinned_tokens = system_total[k + 1] + sum(tokens[p] for p in pins)
        step = bisect_right(starts, firsts[units[k]])
        step_budget = budgets[step] if step < len(budgets) else budget
        key = (step, pinned_tokens)
        known = limits.get(key)
        if known is None:
            limit = min(
                step_budget.target_tokens, step_budget.max_tokens - step_budget.output_reserve
            )
            target = effective_limits(step_budget, pinned_tokens)[1]
            window_target = (
                effective_limits(window_budget(step_budget, share), pinned_tokens)[1]
                if share
                else target
            )
            known = limits[key] = (limit, target, window_target)
        limit, target, window_target = known
        latest = turns[k]
        start = cut
        if blocks and not partial and start <= k and turns[start] < latest:
            start = turn_start[turns[start]]  # an earlier turn is offered whole
        end = total[k + 1]

        def after(position: int, latest: int = latest) -> int:
            """The first position after the block (with ``partial``: the unit) holding it."""
            if blocks and not partial and turns[position] < latest:
                return next_turn[position]
            return position + 1

        def need(
            b: int, k: int = k, latest: int = latest, pins: set[int] = pins, end: int = end
        ) -> int:
            """The unpinned tokens of the window from ``b`` on after step ``k``."""
            out = end - total[b] - sum(tokens[p] for p in pins if p >= b)
            head = _head(b, k, latest, pins, columns) if partial else -1
            return out if head < 0 else out + tokens[head]

        q = _newest_unpinned(k, start, pins, pinned_system)
        failed = pinned_tokens > limit
        if failed or target <= 0:  # no room for any unpinned unit
            cut = start if q < start else after(q)
            continue
        if need(start) <= window_target:
            cut = start  # everything fits: the cut stays
            continue
        low = math.floor(low_water * window_target)
        b = start
        while b <= k and need(b) > low:
            b = after(b)
        newest = turn_start[turns[q]] if blocks and not partial and turns[q] < latest else q
        if newest < b and need(newest) <= target:
            # the newest block (or unit) alone, with the pinned units right before it
            r = _newest_unpinned(newest - 1, start, pins, pinned_system)
            b = start if r < start else after(r)
        cut = b
    if newest_assistant == size and not failed:  # the newest assistant message is last
        previous = _window(cut, size - 1, user, last, columns, partial)
    head = -1
    if partial and size:
        pins = set(last)
        if user >= 0:
            pins.add(user)
        head = _head(cut, size - 1, turns[size - 1], pins, columns)
    return StableCut(cut, previous, None if head < 0 else head)


def window_budget(budget: ContextBudget, share: float) -> ContextBudget:
    """The budget a recency window with a scored ``share`` keeps its window to: the share
    of ``min(target_tokens, max_tokens - output_reserve)`` set aside (for recalled units).

    >>> window_budget(ContextBudget(max_tokens=1000, target_tokens=800), 0.5).target_tokens
    400
    """
    limit = max(0, min(budget.target_tokens, budget.max_tokens - budget.output_reserve))
    return budget.model_copy(update={"target_tokens": limit - math.floor(share * limit)})


def _head(cut: int, k: int, latest: int, pins: set[int], columns: _Columns) -> int:
    """With partial blocks, the first unpinned unit of the earlier turn a cut at ``cut``
    falls inside after step ``k`` (the turn's question or task — or, when that is pinned,
    the turn's first unit that is not: the head of the block the recency window sees), kept
    before the stretch when an unpinned unit of that turn is kept; or ``-1``."""
    if cut > k:
        return -1
    turns = columns.turns
    if turns[cut] >= latest:
        return -1
    head = columns.turn_head.get(turns[cut], cut)
    pinned_system = columns.pinned_system
    while head < cut and (head in pins or pinned_system[head]):
        head += 1  # the head is the turn's first unit the window may leave out
    if head >= cut:
        return -1
    # only with a part of the turn to keep: an unpinned unit from the cut to the turn's end
    stop = min(columns.next_turn[cut], k + 1)
    if _newest_unpinned(stop - 1, cut, pins, columns.pinned_system) < cut:
        return -1
    return head


def _newest_unpinned(k: int, start: int, pins: set[int], pinned_system: Sequence[bool]) -> int:
    """The newest position from ``k`` back to ``start`` that is not pinned (``start - 1``:
    none)."""
    while k >= start and (pinned_system[k] or k in pins):
        k -= 1
    return k


def _window(
    cut: int, end: int, user: int, last: deque[int], columns: _Columns, partial: bool
) -> tuple[int, ...]:
    """The window after the step of ``end``: pinned then, the head of the earlier turn
    the cut falls inside (``partial``), and ``cut``..``end``."""
    if end < 0:
        return ()
    pinned_system = columns.pinned_system
    out = [p for p in range(min(cut, end + 1)) if pinned_system[p]]
    extra = {p for p in last if p < cut}
    if 0 <= user < cut:
        extra.add(user)
    if partial:
        pins = {*last, user}
        head = _head(cut, end, columns.turns[end], pins, columns)
        if head >= 0:
            extra.add(head)
    out.extend(extra)
    out.extend(range(cut, end + 1))
    out.sort()
    return tuple(out)


class _Columns:
    """What the replay reads of a history, per position."""

    __slots__ = (
        "is_user",
        "keep_last",
        "keep_latest_user",
        "newest_assistant",
        "next_turn",
        "pinned_system",
        "system_role",
        "system_total",
        "total",
        "turn_head",
        "turn_start",
        "turns",
    )

    def __init__(self, history: HistoryColumns) -> None:
        conversation = history.conversation
        roles = conversation.unit_roles
        unit_turns = conversation.unit_turns
        keep_system, self.keep_latest_user, self.keep_last = history.keeps
        units = history.units
        tokens = history.tokens
        size = len(units)
        self.turns = turns = [unit_turns[k] for k in units]
        unit_roles = [roles[k] for k in units]
        self.is_user = [role == USER for role in unit_roles]
        self.system_role = [role == SYSTEM for role in unit_roles]
        self.pinned_system = pinned_system = [keep_system and role == SYSTEM for role in unit_roles]
        # the tokens before each position: of the units other than pinned system ones, and of those
        pairs = list(zip(pinned_system, tokens, strict=True))
        self.total = [0, *accumulate(0 if system else n for system, n in pairs)]
        self.system_total = [0, *accumulate(n if system else 0 for system, n in pairs)]
        self.turn_start: dict[int, int] = {}
        self.turn_head: dict[int, int] = {}  # each turn's first unit but pinned system ones
        for p, turn in enumerate(turns):
            self.turn_start.setdefault(turn, p)
            if not pinned_system[p]:
                self.turn_head.setdefault(turn, p)
        next_turn = [size] * size
        following = size
        for p in range(size - 1, -1, -1):
            if p + 1 < size and turns[p + 1] != turns[p]:
                following = p + 1
            next_turn[p] = following
        self.next_turn = next_turn
        newest = max((k for k, role in enumerate(roles) if role == ASSISTANT), default=-1)
        # the first position at or after the newest assistant unit (valid or not)
        self.newest_assistant = (
            -1 if newest < 0 else next((p for p, k in enumerate(units) if k >= newest), size)
        )
