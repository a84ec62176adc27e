"""A conversation as context items: the selection columns now, the items on first use."""

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
from cupel.conversation._window import HistoryWindow, identity_positions, select_window
from cupel.diagnostics._events import OverflowEvent
from cupel.diagnostics._reasons import InvalidToolCall
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY

__all__ = [
    "DEFAULT_UNIT_KINDS",
    "UNIT_TYPES",
    "HistoryItems",
    "PinnedOptions",
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


class HistoryItems:
    """A :class:`Conversation` mapped to context items: one item per unit.

    The selection columns are computed up front — ``units`` (the unit behind each
    position: the units that can be sent, in history order), ``tokens``, ``blocks`` (the
    turn a unit's block is, ``None``: a block of its own) and the pinned positions — and
    the :class:`~cupel.ContextItem` s themselves on first use: :attr:`items` (what a
    pipeline selects from) and :attr:`invalid` (each unit providers would reject with its
    :class:`~cupel.InvalidToolCall` reason). :meth:`select` maps a window back to message
    indices; a plain recency window selected without a report never builds the items.
    Build it with :meth:`from_conversation`.
    """

    __slots__ = (
        "_bad",
        "_bare",
        "_flags",
        "_invalid",
        "_items",
        "_position",
        "_source",
        "block_key",
        "blocks",
        "conversation",
        "pinned",
        "pinned_tokens",
        "tokens",
        "units",
    )

    def __init__(
        self,
        conversation: Conversation,
        units: list[int],
        tokens: list[int],
        blocks: list[int | None],
        pinned: list[int],
        pinned_tokens: Mapping[str, int],
        bad: list[tuple[int, int]],
        source: _Source,
    ) -> None:
        self.conversation = conversation
        self.units = units
        """The unit of each position."""
        self.tokens = tokens
        """The tokens of each position's unit."""
        self.blocks = blocks
        """The block of each position (its turn) under ``block_key``; ``None``: alone."""
        self.block_key = source.block_key
        self.pinned = pinned
        """The pinned positions (ascending)."""
        self.pinned_tokens = pinned_tokens
        """Pinned tokens by cause: ``system``, ``latest_user``, ``last``."""
        self._flags = [False] * len(units)
        for position in pinned:
            self._flags[position] = True
        self._bad = bad  # (unit, tokens) of the units providers would reject
        self._source = source
        self._items: list[ContextItem] | None = None
        self._bare: list[ContextItem] | None = None
        self._invalid: list[tuple[ContextItem, InvalidToolCall]] | None = None
        self._position: dict[int, int] | None = None

    def __repr__(self) -> str:
        return (
            f"HistoryItems({len(self.units)} items, {len(self._bad)} invalid, "
            f"{len(self.pinned)} pinned)"
        )

    def is_pinned(self, position: int) -> bool:
        """Whether the item at ``position`` is pinned."""
        return self._flags[position]

    @property
    def items(self) -> list[ContextItem]:
        """One item per position (built on first use, then the same objects)."""
        items = self._items
        if items is None:
            items, bad = self._source.build(self, with_metadata=True)
            problems = self.conversation._problems
            reasons = [InvalidToolCall(*problems[k]) for k, _ in self._bad]
            self._invalid = list(zip(bad, reasons, strict=True))
            self._items = items
        return items

    @property
    def invalid(self) -> list[tuple[ContextItem, InvalidToolCall]]:
        """The units providers would reject, as items with why (built on first use)."""
        if self._invalid is None:
            self.items  # noqa: B018 - builds both
        return self._invalid  # type: ignore[return-value]

    def bare_items(self) -> list[ContextItem]:
        """Like :attr:`items` but without the caller's per-unit metadata (the block key
        stays): for a pipeline that reads no metadata and builds no report, whose items
        never leave the selection (:func:`reads_unit_metadata`)."""
        if self._source.metadata is None:
            return self.items
        bare = self._bare
        if bare is None:
            bare = self._bare = self._source.build(self, with_metadata=False)[0]
        return bare

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
        - ``metadata(k)`` gives unit ``k``'s metadata (copied); ``block_key`` in it is
          the layer's own: units of earlier turns than the latest user message's get
          their turn number there, so a :class:`~cupel.RecencyWindowSlice` keeps each
          earlier turn whole, and the latest turn's units stand alone (an agent's tool
          rounds are taken newest first) — a ``block_key`` entry from ``metadata`` is
          dropped.
        - Pinned: system units (``keep_system``), the latest user message
          (``keep_latest_user``: the question, or an agent's task) and the latest
          ``keep_last`` valid units.

        Texts, timestamps, kinds and metadata are read when the items are first built
        (:attr:`items`); pass values that do not change until then.

        >>> from cupel.conversation import Conversation
        >>> conversation = Conversation(["system", "user", "assistant", "user"])
        >>> mapped = HistoryItems.from_conversation(
        ...     conversation, ["Be brief.", "Hi", "Hello!", "Bye"], [3, 1, 2, 1])
        >>> [(i.content, i.pinned, dict(i.metadata)) for i in mapped.items]
        [('Be brief.', True, {'cupel:turn': 0}), ('Hi', False, {'cupel:turn': 1}), \
('Hello!', False, {'cupel:turn': 1}), ('Bye', True, {})]
        >>> mapped.tokens, mapped.blocks, mapped.pinned
        ([3, 1, 2, 1], [0, 1, 1, None], [0, 3])
        """
        n = conversation.n_messages
        if len(texts) != n:
            raise ConfigurationError(
                f"texts: expected one per message ({n}), got {len(texts)}",
                field="texts",
                value=len(texts),
            )
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
        per_message = tokens if unit_tokens is None else None
        count: Callable[[tuple[int, ...]], int] = unit_tokens if unit_tokens is not None else len
        units: list[int] = []
        unit_counts: list[int] = []
        blocks: list[int | None] = []
        pinned: list[int] = []
        pinned_tokens = {"system": 0, "latest_user": 0, "last": 0}
        bad: list[tuple[int, int]] = []
        blocking = block_key is not None
        for k, first in enumerate(firsts):
            group = groups.get(k)
            if per_message is not None:
                need = per_message[first] if group is None else sum(per_message[i] for i in group)
            else:
                need = count((first,) if group is None else group)
            if k in problems:
                bad.append((k, need))
                continue
            cause = pins.get(k)
            if cause is not None:
                pinned.append(len(units))
                pinned_tokens[cause] += need
            units.append(k)
            unit_counts.append(need)
            turn = turns[k]
            blocks.append(turn if blocking and turn < latest_turn else None)
        source = _Source(texts, timestamps, table, metadata, block_key)
        return cls(conversation, units, unit_counts, blocks, pinned, pinned_tokens, bad, source)

    def positions(self, selected: Sequence[ContextItem]) -> list[int]:
        """The positions (in :attr:`items`) of ``selected``, ascending, found by identity.

        Raises :class:`~cupel.ConfigurationError` for an item not built here."""
        position = self._position
        if position is None:
            position = self._position = {id(item): k for k, item in enumerate(self.items)}
        return identity_positions(position, selected)

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
        its :class:`~cupel.InvalidToolCall` reason; without it,
        :meth:`HistoryWindow.explain` builds the same report when first asked.
        ``on_overflow`` is passed to the pipeline's run.

        ``previous``: the message indices of the previous window of the same
        conversation (the history may only have grown since: the caller checks that). The
        selection is then *cache-stable*: only units from the previous window's cut on
        are offered — the cut is where its stretch of the conversation starts — pinned
        ones always, and whole earlier turns, so none is ever split; the others are
        reported as ``Filtered("before_stable_cut")``. With a
        :class:`~cupel.RecencyWindowSlice` that has a ``low_water`` mark, the window then
        grows by appending until it overflows and is cut back once, to the mark.

        A plain recency window (a :class:`~cupel.RecencyWindowSlice` without
        ``scored_share``, no deduplication, cupel's own scorers and placer) selected
        without a report is computed from the token and block columns alone; it is the
        pipeline's window exactly (property-tested), the items are never built.
        """
        return select_window(
            self,
            pipeline,
            budget,
            with_report=with_report,
            start_on=start_on,
            options=options if options is not None else PinnedOptions(),
            on_overflow=on_overflow,
            previous=previous,
        )


class _Source:
    """What the items are made of, kept until they are first built."""

    __slots__ = ("block_key", "kinds", "metadata", "texts", "timestamps")

    def __init__(
        self,
        texts: Sequence[str],
        timestamps: Sequence[datetime | None] | None,
        kinds: Mapping[str, ContextKind],
        metadata: Callable[[int], Mapping[str, Any]] | None,
        block_key: str | None,
    ) -> None:
        self.texts = texts
        self.timestamps = timestamps
        self.kinds = kinds
        self.metadata = metadata
        self.block_key = block_key

    def build(
        self, history: HistoryItems, *, with_metadata: bool
    ) -> tuple[list[ContextItem], list[ContextItem]]:
        """The items of ``history``'s positions, and (``with_metadata``) of its invalid
        units."""
        conversation = history.conversation
        texts = self.texts
        n = conversation.n_messages
        stamps = synthetic_timestamps(n) if self.timestamps is None else _ordered(self.timestamps)
        firsts = conversation._firsts
        groups = conversation._members
        roles = conversation._roles
        turns = conversation._turns
        table = self.kinds
        # Per unit type: its kind and whether its source is Tool; other roles are "other".
        kind_of = {role: table[role] for role in (SYSTEM, USER, ASSISTANT, TOOL)}
        exchange_kind = table["exchange"]
        other_kind = table["other"]
        tool_source = ContextSource.TOOL
        block_key = self.block_key
        metadata = self.metadata if with_metadata else None
        # Without adapter metadata, the units of one turn share one read-only block dict.
        shared: dict[int, Mapping[str, Any]] = {}
        template = item_row("", 0)

        def row(k: int, need: int, pinned: bool, block: int | None) -> dict[str, Any]:
            role = roles[k]
            first = firsts[k]
            group = groups.get(k)
            out = template.copy()
            if group is None:
                text = texts[first]
                out["content"] = text if text else f"[{role} message]"
                kind = kind_of.get(role)
                if kind is None:
                    out["kind"] = other_kind
                else:
                    out["kind"] = kind
                    if role == TOOL:
                        out["source"] = tool_source
            else:
                out["content"] = "\n".join(texts[i] or f"[{role} message]" for i in group)
                out["kind"] = exchange_kind
                out["source"] = tool_source
            out["tokens"] = need
            out["timestamp"] = stamps[first]
            if pinned:
                out["pinned"] = True
            if metadata is not None:
                meta = dict(metadata(k))
                if block_key is not None:
                    if block is None:
                        meta.pop(block_key, None)
                    else:
                        meta[block_key] = block
                out["metadata"] = meta
            elif block is not None:
                frozen = shared.get(block)
                if frozen is None:
                    frozen = shared[block] = freeze_metadata({block_key: block})  # type: ignore[dict-item]
                out["metadata"] = frozen
            return out

        flags = history._flags
        rows = [
            row(k, need, flags[p], block)
            for p, (k, need, block) in enumerate(
                zip(history.units, history.tokens, history.blocks, strict=True)
            )
        ]
        bad_rows: list[dict[str, Any]] = []
        if with_metadata:
            latest_user = conversation.latest_user
            latest_turn = turns[latest_user] if latest_user >= 0 else 0
            for k, need in history._bad:
                turn = turns[k]
                blocked = block_key is not None and turn < latest_turn
                bad_rows.append(row(k, need, False, turn if blocked else None))
        return trusted_items(rows), trusted_items(bad_rows)


def _last_units(conversation: Conversation, count: int) -> set[int]:
    """The latest ``count`` valid non-system units."""
    out: set[int] = set()
    k = len(conversation) - 1
    while len(out) < count and k >= 0:
        if conversation.problem(k) is None and conversation.role(k) != SYSTEM:
            out.add(k)
        k -= 1
    return out
