"""A conversation as context items, and the window a pipeline selects from them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from cupel._batch import item_row, trusted_items
from cupel._errors import ConfigurationError, PinnedBudgetError
from cupel._model import ContextBudget, ContextItem, ContextKind, ContextSource, freeze_metadata
from cupel._pipeline import Pipeline
from cupel.conversation._structure import ASSISTANT, SYSTEM, TOOL, USER, Conversation
from cupel.diagnostics._events import OverflowEvent
from cupel.diagnostics._reasons import Filtered, InvalidToolCall
from cupel.diagnostics._report import SelectionReport
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY

__all__ = [
    "DEFAULT_UNIT_KINDS",
    "STABLE_CUT_FILTER",
    "START_ON_FILTER",
    "UNIT_TYPES",
    "HistoryItems",
    "HistoryWindow",
    "PinnedOptions",
    "reads_unit_metadata",
    "synthetic_timestamps",
]

UNIT_TYPES = ("system", "user", "assistant", "exchange", "tool", "other")
"""The unit types a kind is chosen for (``exchange``: an assistant message calling tools
with its results; ``tool``: a stray tool result, never selected)."""

DEFAULT_UNIT_KINDS: Mapping[str, ContextKind] = {
    "system": ContextKind.SYSTEM_PROMPT,
    "user": ContextKind.MESSAGE,
    "assistant": ContextKind.MESSAGE,
    "exchange": ContextKind.TOOL_OUTPUT,
    "tool": ContextKind.TOOL_OUTPUT,
    "other": ContextKind.MESSAGE,
}
"""The kind of each unit type's item."""

START_ON_FILTER = "start_on"
"""The ``Filtered`` name of units dropped so that the window starts on a given role."""
STABLE_CUT_FILTER = "before_stable_cut"
"""The ``Filtered`` name of units before a cache-stable window's cut."""

_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_STEP = timedelta(microseconds=1)
_synthetic: list[datetime] = []


def synthetic_timestamps(count: int) -> list[datetime]:
    """``count`` increasing UTC timestamps one microsecond apart from 2000-01-01: the
    order of a conversation, for recency scorers, the recency window and the
    chronological placer (cached and shared; datetimes are immutable).

    >>> first, second = synthetic_timestamps(2)
    >>> second - first
    datetime.timedelta(microseconds=1)
    """
    have = len(_synthetic)
    if have < count:
        start = _EPOCH + _STEP * have
        _synthetic.extend([start + _STEP * i for i in range(count - have)])
    return _synthetic[:count]


def _ordered(carried: Sequence[datetime | None]) -> list[datetime]:
    """Per-message timestamps that follow message order: a carried (aware, UTC) timestamp
    is kept unless it is not after the previous message's, which then wins by one
    microsecond; a missing one follows the previous message by a microsecond."""
    out: list[datetime] = []
    previous: datetime | None = None
    base = synthetic_timestamps(len(carried))
    for index, moment in enumerate(carried):
        if moment is None:
            moment = base[index] if previous is None else previous + _STEP
        elif previous is not None and moment <= previous:
            moment = previous + _STEP
        out.append(moment)
        previous = moment
    return out


@dataclass(frozen=True, slots=True)
class PinnedOptions:
    """How a component names the options that pin messages, for the error raised when
    the pinned messages alone exceed the budget (``None``: the component has no such
    option)."""

    system: str | None = "keep_system=False"
    latest_user: str | None = None
    last: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """A selected window: ``messages`` (indices into the history, ascending), ``items``
    (the selected units' items in history order) and the ``report`` (when asked for).

    For a cache-stable selection (``previous`` given): ``stable_prefix`` is how many of
    its leading messages are those of the previous window, in the same order — the prefix a
    provider's prompt cache can reuse — and ``cut_moved`` says whether the previous window
    is no longer a prefix of this one (always ``True`` without a previous window). ``cut``
    is where the window's stretch of the conversation starts (see ``HistoryItems.select``).
    """

    messages: list[int]
    items: list[ContextItem]
    report: SelectionReport | None
    cut: int = 0
    stable_prefix: int = 0
    cut_moved: bool = True


class HistoryItems:
    """A :class:`Conversation` mapped to context items: one item per unit.

    ``items`` are the units that can be sent (history order) — what a pipeline selects
    from; ``invalid`` pairs each unit providers would reject with its
    :class:`~cupel.InvalidToolCall` reason. :meth:`select` runs a pipeline and maps the
    window back to message indices. Build it with :meth:`from_conversation`.
    """

    __slots__ = (
        "_position",
        "conversation",
        "invalid",
        "items",
        "pinned",
        "pinned_tokens",
        "units",
    )

    def __init__(
        self,
        conversation: Conversation,
        items: list[ContextItem],
        units: list[int],
        invalid: list[tuple[ContextItem, InvalidToolCall]],
        pinned: list[int],
        pinned_tokens: Mapping[str, int],
    ) -> None:
        self.conversation = conversation
        self.items = items
        self.units = units
        """The unit of each item."""
        self.invalid = invalid
        self.pinned = pinned
        """Positions (in ``items``) of the pinned items."""
        self.pinned_tokens = pinned_tokens
        """Pinned tokens by cause: ``system``, ``latest_user``, ``last``."""
        self._position: dict[int, int] | None = None

    def __repr__(self) -> str:
        return (
            f"HistoryItems({len(self.items)} items, {len(self.invalid)} invalid, "
            f"{len(self.pinned)} pinned)"
        )

    @classmethod
    def from_conversation(
        cls,
        conversation: Conversation,
        texts: Sequence[str],
        tokens: Sequence[int] | None = None,
        *,
        unit_tokens: Callable[[tuple[int, ...]], int] | None = None,
        timestamps: Sequence[datetime | None] | None = None,
        kinds: Mapping[str, ContextKind] | None = None,
        metadata: Callable[[int], Mapping[str, Any]] | None = None,
        keep_system: bool = True,
        keep_latest_user: bool = True,
        keep_last: int = 0,
        block_key: str | None = DEFAULT_BLOCK_KEY,
    ) -> HistoryItems:
        """One item per unit of ``conversation``.

        - ``texts`` (one per message) make the content, joined by newlines for an exchange;
          an empty text reads ``[<role> message]``.
        - ``tokens`` (one per message) are summed per unit; ``unit_tokens`` instead counts
          a unit from its message indices (for counters that are not additive).
        - ``timestamps`` (one per message, ``None`` where unknown, aware UTC) are made to
          follow message order (a timestamp not after its predecessor's becomes that plus
          a microsecond); without them the timestamps are synthetic, a microsecond apart.
          A unit takes its first message's.
        - ``kinds`` override :data:`DEFAULT_UNIT_KINDS` per unit type (:data:`UNIT_TYPES`).
        - ``metadata(k)`` gives unit ``k``'s metadata (copied); units of earlier turns than
          the latest user message's also get ``block_key``: their turn number, so a
          :class:`~cupel.RecencyWindowSlice` keeps each earlier turn whole. The latest
          turn's units stand alone (an agent's tool rounds are taken newest first).
        - Pinned: system units (``keep_system``), the latest user message
          (``keep_latest_user``: the question, or an agent's task) and the latest
          ``keep_last`` valid units.

        >>> from cupel.conversation import Conversation
        >>> conversation = Conversation(["system", "user", "assistant", "user"])
        >>> mapped = HistoryItems.from_conversation(
        ...     conversation, ["Be brief.", "Hi", "Hello!", "Bye"], [3, 1, 2, 1])
        >>> [(i.content, i.pinned, dict(i.metadata)) for i in mapped.items]
        [('Be brief.', True, {'cupel:turn': 0}), ('Hi', False, {'cupel:turn': 1}), \
('Hello!', False, {'cupel:turn': 1}), ('Bye', True, {})]
        """
        n = conversation.n_messages
        if len(texts) != n:
            raise ConfigurationError(
                f"texts: expected one per message ({n}), got {len(texts)}",
                field="texts",
                value=len(texts),
            )
        per_message = tokens if unit_tokens is None else None
        count: Callable[[tuple[int, ...]], int] = unit_tokens if unit_tokens is not None else len
        if tokens is None and unit_tokens is None:
            raise ConfigurationError(
                "to_items needs tokens (one count per message) or unit_tokens (a counter of "
                "a unit's message indices), got neither",
                field="tokens",
                value=None,
            )
        if tokens is not None and len(tokens) != n:
            raise ConfigurationError(
                f"tokens: expected one per message ({n}), got {len(tokens)}",
                field="tokens",
                value=len(tokens),
            )
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
            raise ConfigurationError(
                f"keep_last must be an int >= 0 (the number of latest units always kept), "
                f"got {keep_last!r}",
                field="keep_last",
                value=keep_last,
            )
        table = dict(DEFAULT_UNIT_KINDS) if kinds is None else {**DEFAULT_UNIT_KINDS, **kinds}
        stamps = synthetic_timestamps(n) if timestamps is None else _ordered(timestamps)
        latest_user = conversation.latest_user
        latest_turn = conversation.turn(latest_user) if latest_user >= 0 else 0
        pins: dict[int, str] = {}  # unit -> why it is pinned
        for k in _last_units(conversation, keep_last):
            pins[k] = "last"
        if keep_latest_user and latest_user >= 0:
            pins[latest_user] = "latest_user"
        # The structure's columns, read directly: this loop runs once per unit.
        firsts = conversation._firsts
        groups = conversation._members
        roles = conversation._roles
        turns = conversation._turns
        problems = conversation._problems
        if keep_system:
            for k, role in enumerate(roles):
                if role == SYSTEM:
                    pins[k] = "system"
        # Per unit type: its kind and whether its source is Tool; other roles are "other".
        kind_of = {role: table[role] for role in (SYSTEM, USER, ASSISTANT, TOOL)}
        exchange_kind = table["exchange"]
        other_kind = table["other"]
        tool_source = ContextSource.TOOL
        # Without adapter metadata, the units of one turn share one read-only block dict.
        shared: dict[int, Mapping[str, Any]] = {}
        template = item_row("", 0)
        rows: list[dict[str, Any]] = []
        units: list[int] = []
        bad_rows: list[dict[str, Any]] = []
        bad: list[InvalidToolCall] = []
        pinned: list[int] = []
        pinned_tokens = {"system": 0, "latest_user": 0, "last": 0}
        for k, first in enumerate(firsts):
            role = roles[k]
            group = groups.get(k)
            row = template.copy()
            if group is None:
                text = texts[first]
                row["content"] = text if text else f"[{role} message]"
                row["tokens"] = per_message[first] if per_message is not None else count((first,))
                kind = kind_of.get(role)
                if kind is None:
                    row["kind"] = other_kind
                else:
                    row["kind"] = kind
                    if role == TOOL:
                        row["source"] = tool_source
            else:
                row["content"] = "\n".join(texts[i] or f"[{role} message]" for i in group)
                row["tokens"] = (
                    sum(per_message[i] for i in group) if per_message is not None else count(group)
                )
                row["kind"] = exchange_kind
                row["source"] = tool_source
            row["timestamp"] = stamps[first]
            turn = turns[k]
            blocked = block_key is not None and turn < latest_turn
            if metadata is not None:
                meta = dict(metadata(k))
                if blocked:
                    meta[block_key] = turn  # type: ignore[index]
                row["metadata"] = meta
            elif blocked:
                block = shared.get(turn)
                if block is None:
                    block = shared[turn] = freeze_metadata({block_key: turn})  # type: ignore[dict-item]
                row["metadata"] = block
            problem = problems.get(k)
            if problem is not None:
                bad_rows.append(row)
                bad.append(InvalidToolCall(problem[0], problem[1]))
                continue
            cause = pins.get(k)
            if cause is not None:
                row["pinned"] = True
                pinned.append(len(rows))
                pinned_tokens[cause] += row["tokens"]
            rows.append(row)
            units.append(k)
        items = trusted_items(rows)
        invalid = list(zip(trusted_items(bad_rows), bad, strict=True))
        return cls(conversation, items, units, invalid, pinned, pinned_tokens)

    def positions(self, selected: Sequence[ContextItem]) -> list[int]:
        """The positions (in ``items``) of ``selected``, ascending, found by identity.

        Raises :class:`~cupel.ConfigurationError` for an item not built here."""
        position = self._position
        if position is None:
            position = self._position = {id(item): k for k, item in enumerate(self.items)}
        try:
            out = [position[id(item)] for item in selected]
        except KeyError:
            stranger = next(item for item in selected if id(item) not in position)
            raise ConfigurationError(
                f"item {getattr(stranger, 'content', stranger)!r:.60} was not built from "
                f"this history",
                field="items",
                value=stranger,
            ) from None
        out.sort()
        return out

    def messages_at(self, positions: Sequence[int]) -> list[int]:
        """The message indices of the items at ``positions`` (ascending)."""
        conversation = self.conversation
        units = self.units
        out: list[int] = []
        for position in positions:
            out.extend(conversation.messages_of(units[position]))
        out.sort()
        return out

    def check_pinned(self, budget: ContextBudget, options: PinnedOptions) -> None:
        """Raise :class:`~cupel.PinnedBudgetError` when the pinned items alone exceed
        ``max_tokens - output_reserve``, naming what they need and the options (as the
        component spells them) that would unpin them."""
        need = sum(self.pinned_tokens.values())
        available = budget.max_tokens - budget.output_reserve
        if need <= available:
            return
        parts = []
        remedies = ["raise the budget", "shorten them"]
        for cause, label, option in (
            ("system", "system messages", options.system),
            ("latest_user", "the latest user message", options.latest_user),
            ("last", "the latest units kept", options.last),
        ):
            tokens = self.pinned_tokens.get(cause, 0)
            if tokens:
                parts.append(f"{label}: {tokens}")
                if option is not None:
                    remedies.append(f"pass {option}")
        error = PinnedBudgetError(need, available)
        error.args = (
            f"The messages that are always kept need {need} tokens ({', '.join(parts)}), "
            f"but the budget allows {available} (max_tokens - output_reserve); "
            f"{', '.join(remedies[:-1])} or {remedies[-1]}",
        )
        raise error

    def select(
        self,
        pipeline: Pipeline,
        budget: ContextBudget,
        *,
        with_report: bool,
        start_on: Collection[str] = (),
        options: PinnedOptions | None = None,
        on_overflow: Callable[[OverflowEvent], Any] | None = None,
        previous: Collection[int] | None = None,
    ) -> HistoryWindow:
        """Run ``pipeline`` on the items within ``budget`` and map the window back.

        ``start_on``: roles the window may start on after system messages (e.g.
        ``{"user"}``); selected units before the first such unit are dropped (reported
        as ``Filtered("start_on")``) — unless the window holds no such unit, then it is
        kept as it is. The report (``with_report``) also lists every invalid unit with
        its :class:`~cupel.InvalidToolCall` reason. ``on_overflow`` is passed to the
        pipeline's run.

        ``previous``: the message indices of the previous window of the same
        conversation (the history may only have grown since: the caller checks that). The
        selection is then *cache-stable*: only units from the previous window's cut on
        are offered — the cut is where its stretch of the conversation starts — pinned
        ones always, and whole earlier turns, so none is ever split; the others are
        reported as ``Filtered("before_stable_cut")``. With a
        :class:`~cupel.RecencyWindowSlice` that has a ``low_water`` mark, the window then
        grows by appending until it overflows and is cut back once, to the mark.
        """
        self.check_pinned(budget, options if options is not None else PinnedOptions())
        items = self.items
        offered = items
        before_cut: list[int] = []
        if previous is not None:
            offered, before_cut = self._since(self._cut(self._unit_positions(previous)))
        if with_report:
            result = pipeline.dry_run(offered, budget, on_overflow=on_overflow)
        else:
            result = pipeline.run(offered, budget, on_overflow=on_overflow)
        positions = self.positions(result.items)
        dropped: list[int] = []
        if start_on:
            positions, dropped = self._start_on(positions, start_on)
        report = result.report
        if report is not None:
            start_on_reason = Filtered(START_ON_FILTER)
            cut_reason = Filtered(STABLE_CUT_FILTER)
            report = report.with_excluded(
                moved=[(items[p], start_on_reason) for p in dropped],
                added=[*((items[p], cut_reason) for p in before_cut), *self.invalid],
            )
        messages = self.messages_at(positions)
        prefix = 0
        if previous is not None:
            for before, now in zip(sorted(previous), messages, strict=False):
                if before != now:
                    break
                prefix += 1
        return HistoryWindow(
            messages,
            [items[p] for p in positions],
            report,
            self._cut(positions),
            prefix,
            previous is None or prefix < len(previous),
        )

    def _unit_positions(self, messages: Collection[int]) -> list[int]:
        """The positions (in ``items``) of the valid units holding any of ``messages``."""
        conversation = self.conversation
        unit_of: dict[int, int] = {}
        for position, k in enumerate(self.units):
            for index in conversation.messages_of(k):
                unit_of[index] = position
        return sorted({unit_of[m] for m in messages if m in unit_of})

    def _since(self, since: int) -> tuple[list[ContextItem], list[int]]:
        """The items offered after a previous cut, and the positions left before it.

        Offered: pinned units, units starting at or after ``since``, and — so that no
        earlier turn is ever split — every unit of an earlier turn than the latest from
        the turn holding ``since`` on."""
        conversation = self.conversation
        firsts = conversation._firsts
        turns = conversation._turns
        latest = conversation.latest_user
        latest_turn = turns[latest] if latest >= 0 else 0
        cut_turn = next((turns[k] for k, first in enumerate(firsts) if first >= since), None)
        units = self.units
        offered: list[ContextItem] = []
        before: list[int] = []
        for position, item in enumerate(self.items):
            k = units[position]
            if (
                item.pinned
                or firsts[k] >= since
                or (cut_turn is not None and cut_turn <= turns[k] < latest_turn)
            ):
                offered.append(item)
            else:
                before.append(position)
        return offered, before

    def _cut(self, positions: list[int]) -> int:
        """Where the window's stretch starts: the first message of its oldest non-system
        unit — the pinned latest user message included only when no unit between it and
        the window's newest unit is left out (no gap after it; units newer than the
        window, such as those added since it was selected, are not a gap) — or the
        history's length when no non-system message is kept."""
        conversation = self.conversation
        firsts = conversation._firsts
        roles = conversation._roles
        units = self.units
        stretch = [p for p in positions if roles[units[p]] != SYSTEM]
        if not stretch:
            return conversation.n_messages
        head = stretch[0]
        if units[head] == conversation.latest_user and self.items[head].pinned:
            kept = set(stretch)
            after = [p for p in range(head + 1, stretch[-1]) if roles[units[p]] != SYSTEM]
            if any(p not in kept for p in after):  # a gap after the task: not the stretch
                rest = stretch[1:]
                return firsts[units[rest[0]]] if rest else conversation.n_messages
        return firsts[units[head]]

    def _start_on(
        self, positions: list[int], start_on: Collection[str]
    ) -> tuple[list[int], list[int]]:
        conversation = self.conversation
        units = self.units
        leading: list[int] = []
        for position in positions:
            role = conversation.role(units[position])
            if role == SYSTEM:
                continue
            if role in start_on:
                break
            leading.append(position)
        else:
            return positions, []  # nothing to start on: the window stays as it is
        if not leading:
            return positions, []
        gone = set(leading)
        return [p for p in positions if p not in gone], leading


def _last_units(conversation: Conversation, count: int) -> set[int]:
    """The latest ``count`` valid non-system units."""
    out: set[int] = set()
    k = len(conversation) - 1
    while len(out) < count and k >= 0:
        if conversation.problem(k) is None and conversation.role(k) != SYSTEM:
            out.add(k)
        k -= 1
    return out


def reads_unit_metadata(pipeline: Pipeline) -> bool:
    """Whether running ``pipeline`` may read an item's metadata beyond the recency window's
    block key (which :class:`HistoryItems` always sets): ``False`` only when its scorer
    tree, slicer and placer are all cupel's own components that look at other fields
    (exact classes: a subclass could read anything; the metadata scorers do read it) and
    no overflow callback receives the items. A history selection that builds no report
    can then leave the adapter's per-unit metadata out: its items never leave the
    selection.

    >>> from cupel import MetadataKeyScorer
    >>> reads_unit_metadata(Pipeline.from_policy("chat"))
    False
    >>> reads_unit_metadata(Pipeline(MetadataKeyScorer("role", "user", 2.0)))
    True
    """
    from cupel.placers import ChronologicalPlacer, UShapedPlacer
    from cupel.scorers import (
        CompositeScorer,
        DecayScorer,
        FrequencyScorer,
        KindScorer,
        PriorityScorer,
        RecencyScorer,
        ReflexiveScorer,
        ScaledScorer,
        TagScorer,
    )
    from cupel.slicers import GreedySlice, KnapsackSlice, RecencyWindowSlice

    blind_scorers = {
        CompositeScorer,
        DecayScorer,
        FrequencyScorer,
        KindScorer,
        PriorityScorer,
        RecencyScorer,
        ReflexiveScorer,
        ScaledScorer,
        TagScorer,
    }
    slicer = pipeline.slicer
    if (
        pipeline.on_overflow is not None
        or type(pipeline.placer) not in (ChronologicalPlacer, UShapedPlacer)
        or type(slicer) not in (GreedySlice, KnapsackSlice, RecencyWindowSlice)
        or (type(slicer) is RecencyWindowSlice and slicer.block_key != DEFAULT_BLOCK_KEY)
    ):
        return True
    pending: list[object] = [pipeline.scorer]
    while pending:
        scorer = pending.pop()
        if type(scorer) not in blind_scorers:
            return True
        pending.extend(scorer.children())  # type: ignore[attr-defined]
    return False
