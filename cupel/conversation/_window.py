"""The window a pipeline selects from a history's items, mapped back to messages."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from cupel._errors import CupelError
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import Pipeline
from cupel._pipeline.slice import effective_limits
from cupel.conversation._columns import HistoryColumns, PinnedOptions, identity_positions
from cupel.conversation._plain import plain_pipeline, reads_unit_metadata, split_start
from cupel.conversation._stable import StableCut, stable_cut
from cupel.conversation._structure import SYSTEM, USER
from cupel.diagnostics._events import OverflowEvent
from cupel.diagnostics._reasons import Filtered
from cupel.diagnostics._report import SelectionReport
from cupel.slicers.recency_window import GivenWindowShare, RecencyWindowSlice, plain_window

__all__ = [
    "STABLE_CUT_FILTER",
    "START_ON_FILTER",
    "HistoryWindow",
    "identity_positions",
    "select_window",
]

START_ON_FILTER = "start_on"
"""The ``Filtered`` name of units dropped so that the window starts on a given role."""
STABLE_CUT_FILTER = "before_stable_cut"
"""The ``Filtered`` name of units before a cache-stable window's cut."""


class HistoryWindow:
    """A selected window: ``messages`` (indices into the history, ascending),
    ``positions`` (of the selected units in :attr:`HistoryColumns.items`, ascending),
    their ``tokens``, and the ``report`` when the selection built one (else
    :meth:`explain` builds it on demand).

    For a cache-stable selection (a recency window with a ``low_water`` mark): ``stable_prefix``
    is how many of its leading messages are those of the previous request's window — the
    window of the history before its newest assistant message, replayed from the history —
    in the same order: the prefix a provider's prompt cache can reuse; ``cut_moved`` says
    whether that window is no longer a prefix of this one (always ``True`` without one).
    ``cut`` is where the window's stretch of the conversation starts (a message index; for
    other windows found when first read). ``plain``: the window was computed from the columns alone
    (a plain recency window without a report, see :func:`plain_key`).

    ``recalled``: the message indices (ascending) of the units a scored share brought back
    from before the recent window (a recall policy: :func:`cupel.presets.recall`); the
    recent window is the rest. In ``messages`` they are in their place in the conversation
    — except in a cache-stable window, where they come right before the latest user
    message, after the recent window's stretch (the provider's cached prefix stays the
    replayed window's): ``messages`` is then not ascending.
    """

    __slots__ = (
        "_cut",
        "_rerun",
        "cut_moved",
        "history",
        "messages",
        "plain",
        "positions",
        "recalled",
        "report",
        "stable_prefix",
        "tokens",
    )

    def __init__(
        self,
        messages: list[int],
        positions: list[int],
        tokens: int,
        report: SelectionReport | None,
        cut: int | None = None,
        stable_prefix: int = 0,
        cut_moved: bool = True,
        history: HistoryColumns | None = None,
        rerun: _Rerun | None = None,
        plain: bool = False,
        recalled: list[int] | None = None,
    ) -> None:
        self.messages = messages
        self.positions = positions
        self.tokens = tokens
        self.report = report
        self._cut = cut
        self.stable_prefix = stable_prefix
        self.cut_moved = cut_moved
        self.history = history
        self._rerun = rerun
        self.plain = plain
        self.recalled = [] if recalled is None else recalled

    def __repr__(self) -> str:
        return (
            f"HistoryWindow(messages={self.messages!r}, positions={self.positions!r}, "
            f"tokens={self.tokens!r}, report={self.report!r}, cut={self.cut!r}, "
            f"stable_prefix={self.stable_prefix!r}, cut_moved={self.cut_moved!r})"
        )

    @property
    def cut(self) -> int:
        """Where the window's stretch of the conversation starts (a message index)."""
        if self._cut is None:
            self._cut = 0 if self.history is None else _cut(self.history, self.positions)
        return self._cut

    def stable_fields(self) -> dict[str, Any]:
        """``stable_prefix``, ``cut_moved`` and ``cut``: what the adapters' report events
        say of a cache-stable window."""
        return {"stable_prefix": self.stable_prefix, "cut_moved": self.cut_moved, "cut": self.cut}

    @property
    def items(self) -> list[ContextItem]:
        """The selected units' items, in history order."""
        if self.history is None:
            return []
        items = self.history.items
        return [items[p] for p in self.positions]

    def explain(self) -> SelectionReport:
        """The selection's report: the one built with it, or — for a selection made
        without — the report of the same selection made again with a trace (once; the
        pipeline's overflow callback does not run again). Raises
        :class:`~cupel.CupelError` if the pipeline then picks a different window (a
        scorer, slicer or placer that is not deterministic)."""
        if self.report is not None:
            return self.report
        rerun = self._rerun
        if rerun is None or self.history is None:
            raise CupelError("this window was not selected by HistoryColumns.select")
        if rerun.report is None:
            again = select_window(
                self.history,
                rerun.pipeline,
                rerun.budget,
                with_report=True,
                start_on=rerun.start_on,
                options=rerun.options,
                on_overflow=lambda event: None,
                earlier=rerun.earlier,
            )
            if again.messages != self.messages or again.report is None:
                raise CupelError(
                    "the pipeline selected a different window when run again to build the "
                    "report; its scorer, slicer and placer must be deterministic (same "
                    "items and budget -> same selection)"
                )
            rerun.report = again.report
        return rerun.report


@dataclass(slots=True)
class _Rerun:
    """A report-less selection's arguments, to make it again with a trace."""

    pipeline: Pipeline
    budget: ContextBudget
    start_on: Collection[str]
    options: PinnedOptions
    earlier: Sequence[tuple[int, ContextBudget]]
    report: SelectionReport | None = None


def select_window(
    history: HistoryColumns,
    pipeline: Pipeline,
    budget: ContextBudget,
    *,
    with_report: bool,
    start_on: Collection[str],
    options: PinnedOptions,
    on_overflow: Callable[[OverflowEvent], Any] | None,
    earlier: Sequence[tuple[int, ContextBudget]] = (),
) -> HistoryWindow:
    """:meth:`HistoryColumns.select` (see there)."""
    history.check_pinned(budget, options)
    asked = pipeline  # what a rerun selects with (binding the query again)
    offered: list[int] | None = None  # positions offered to the pipeline (None: all)
    before_cut: list[int] = []
    stable: StableCut | None = None
    given: set[int] | None = None  # a stable window with a share: the replayed window
    slicer = pipeline.slicer
    if isinstance(slicer, RecencyWindowSlice) and slicer.low_water is not None:
        blocks = history.block_key is not None and slicer.block_key == history.block_key
        share = slicer.scored_share
        flags = history.pinned_flags
        stable = stable_cut(
            history,
            budget,
            slicer.low_water,
            blocks=blocks,
            partial=slicer.partial_blocks,
            earlier=earlier,
            share=share,
        )
        offered = []
        for position in range(len(history.units)):
            if flags[position] or position >= stable.cut or position == stable.head:
                offered.append(position)
            else:
                before_cut.append(position)
        if share:
            # the replayed window is kept as it is; the share recalls older units with
            # the tokens it leaves (every unit is offered, those before the cut that are
            # not recalled are reported as before the cut)
            pipeline = _bound(pipeline, history)
            items = history.items
            given = {p for p in offered if not flags[p]}
            window = GivenWindowShare(
                slicer,
                [items[p] for p in sorted(given)],
                [items[p] for p in _recallable(history, before_cut, stable.head)],
                STABLE_CUT_FILTER,
            )
            pipeline = Pipeline(
                pipeline.scorer,
                window,
                pipeline.placer,
                deduplication=pipeline.deduplication,
                overflow_strategy=pipeline.overflow_strategy,
                on_overflow=pipeline.on_overflow,
            )
            offered = None
            before_cut = []
    positions = None if with_report else _plain(history, pipeline, budget, offered)
    plain = positions is not None
    report: SelectionReport | None = None
    if positions is None:
        pipeline = _bound(pipeline, history)
        full = with_report or on_overflow is not None or reads_unit_metadata(pipeline)
        items = history.items if full else history.bare_items()
        candidates = items if offered is None else [items[p] for p in offered]
        run = pipeline.dry_run if with_report else pipeline.run
        result = run(candidates, budget, on_overflow=on_overflow)
        if full:  # (reading history.items here would build them)
            positions = history.positions(result.items)
        else:
            by_id = {id(item): k for k, item in enumerate(items)}
            positions = identity_positions(by_id, result.items)
        report = result.report
    dropped: list[int] = []
    if start_on:
        positions, dropped = _start_on(history, positions, start_on)
    if report is not None:
        items = history.items
        start_on_reason = Filtered(START_ON_FILTER)
        cut_reason = Filtered(STABLE_CUT_FILTER)
        report = report.with_excluded(
            moved=[(items[p], start_on_reason) for p in dropped],
            added=[*((items[p], cut_reason) for p in before_cut), *history.invalid],
        )
    shared = isinstance(slicer, RecencyWindowSlice) and slicer.scored_share > 0
    recalled = _recalled(history, positions, given) if shared else []
    messages = history.messages_at(positions)
    recalled_messages = history.messages_at(recalled) if recalled else []
    if given is not None and recalled:
        messages = _before_latest_user(history, messages, recalled_messages)
    prefix = 0
    cut_moved = True
    cut: int | None = None
    if stable is not None:
        conversation = history.conversation
        cut = (
            conversation.unit_firsts[history.units[stable.cut]]
            if stable.cut < len(history.units)
            else conversation.n_messages
        )
        if stable.previous is not None:
            before = list(stable.previous)
            if start_on:
                before = _start_on(history, before, start_on)[0]
            earlier_messages = history.messages_at(before)
            for then, now in zip(earlier_messages, messages, strict=False):
                if then != now:
                    break
                prefix += 1
            cut_moved = prefix < len(earlier_messages)
    if cut is None and recalled:  # the recent window's stretch, without the recalled units
        taken = set(recalled)
        cut = _cut(history, [p for p in positions if p not in taken])
    tokens = history.tokens
    return HistoryWindow(
        messages,
        positions,
        sum(tokens[p] for p in positions),
        report,
        cut,
        prefix,
        cut_moved,
        history,
        None if report is not None else _Rerun(asked, budget, start_on, options, earlier),
        plain,
        recalled_messages,
    )


def _bound(pipeline: Pipeline, history: HistoryColumns) -> Pipeline:
    """``pipeline`` with its unbound relevance scorers bound to the history's query (the
    latest user message), before it scores: the plain window reads no score."""
    return pipeline.with_query(history.query) if pipeline.needs_query else pipeline


def _recallable(history: HistoryColumns, before: list[int], head: int | None) -> list[int]:
    """The positions before a cache-stable window's cut its share may recall: units of
    turns earlier than the latest user message's (they come back before it), whole turns
    — not the turn the cut falls inside (its ``head`` is kept in the window)."""
    conversation = history.conversation
    latest = conversation.latest_user
    if latest < 0:
        return []
    turns = conversation.unit_turns
    units = history.units
    newest = turns[latest]
    split = -1 if head is None else turns[units[head]]
    return [p for p in before if turns[units[p]] < newest and turns[units[p]] != split]


def _recalled(history: HistoryColumns, positions: list[int], given: set[int] | None) -> list[int]:
    """The selected positions a scored share recalled from before the recent window: those
    outside the replayed window ``given`` (cache-stable), else the unpinned non-system units
    selected before the stretch from the newest unit back to the first one left out —
    but the first unit of the turn the stretch starts inside (a partly kept turn's head)."""
    flags = history.pinned_flags
    if given is not None:
        return [p for p in positions if p not in given and not flags[p]]
    if not positions:
        return []
    roles = history.conversation.unit_roles
    units = history.units
    chosen = set(positions)
    start = len(units)
    for p in range(len(units) - 1, -1, -1):
        if roles[units[p]] == SYSTEM:
            continue
        if p not in chosen:
            break
        start = p
    earlier = [p for p in positions if p < start and not flags[p] and roles[units[p]] != SYSTEM]
    if earlier and start < len(units):
        turns = history.conversation.unit_turns
        turn = turns[units[start]]
        head = next(
            (p for p in range(start) if turns[units[p]] == turn and roles[units[p]] != SYSTEM),
            None,
        )
        earlier = [p for p in earlier if p != head]
    return earlier


def _before_latest_user(
    history: HistoryColumns, messages: list[int], recalled: list[int]
) -> list[int]:
    """``messages`` with the ``recalled`` ones moved right before the latest user message
    (kept in their order; where they are when it is not in the window)."""
    latest = history.conversation.latest_user
    anchor = history.conversation.unit_firsts[latest] if latest >= 0 else -1
    if anchor not in messages:
        return messages
    moved = set(recalled)
    rest = [i for i in messages if i not in moved]
    at = rest.index(anchor)
    return [*rest[:at], *recalled, *rest[at:]]


def _plain(
    history: HistoryColumns, pipeline: Pipeline, budget: ContextBudget, offered: list[int] | None
) -> list[int] | None:
    """The window of a plain recency window (:func:`plain_pipeline`: cupel's own scorers
    only order equal timestamps, and a history's are distinct), from the columns alone; or
    ``None`` when the pipeline is not one or the pinned units exceed the target (then the
    pipeline runs)."""
    if not plain_pipeline(pipeline, history.block_key):
        return None
    slicer: RecencyWindowSlice = pipeline.slicer  # type: ignore[assignment]  # plain
    pinned_tokens = sum(history.pinned_tokens.values())
    if pinned_tokens > min(budget.target_tokens, budget.max_tokens - budget.output_reserve):
        return None
    target = effective_limits(budget, pinned_tokens)[1]
    flags, tokens, blocks = history.pinned_flags, history.tokens, history.blocks
    order = range(len(flags) - 1, -1, -1) if offered is None else offered[::-1]
    walk = [p for p in order if not flags[p]]  # newest first
    taken = plain_window(slicer, [tokens[p] for p in walk], [blocks[p] for p in walk], target)
    chosen = [walk[i] for i in taken]
    chosen.extend(history.pinned)
    chosen.sort()
    return chosen


def _cut(history: HistoryColumns, positions: list[int]) -> int:
    """Where the window's stretch starts: the first message of its oldest non-system
    unit — a user message kept before a gap (the latest: the task; or the question of a
    partly kept turn) is not part of it: included only when no unit between it and the
    window's newest unit is left out (units newer than the window are not a gap) — or the
    history's length when no non-system message is kept."""
    conversation = history.conversation
    firsts = conversation.unit_firsts
    roles = conversation.unit_roles
    units = history.units
    stretch = [p for p in positions if roles[units[p]] != SYSTEM]
    if not stretch:
        return conversation.n_messages
    head = stretch[0]
    if roles[units[head]] == USER:  # a task, or the question of a partly kept turn
        kept = set(stretch)
        after = [p for p in range(head + 1, stretch[-1]) if roles[units[p]] != SYSTEM]
        if any(p not in kept for p in after):  # a gap after the task: not the stretch
            rest = stretch[1:]
            return firsts[units[rest[0]]] if rest else conversation.n_messages
    return firsts[units[head]]


def _start_on(
    history: HistoryColumns, positions: list[int], start_on: Collection[str]
) -> tuple[list[int], list[int]]:
    return split_start(positions, history.conversation.unit_roles, history.units, start_on)
