"""A conversation's selection columns and, built on first use, its context items."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from cupel._errors import ConfigurationError, ItemError, PinnedBudgetError
from cupel._model import ContextBudget, ContextItem, ContextKind, ContextSource, freeze_metadata
from cupel._text import is_unicode_text
from cupel.conversation._structure import ASSISTANT, SYSTEM, TOOL, USER, Conversation
from cupel.counting import MessageParts, fit_unit
from cupel.diagnostics._reasons import InvalidToolCall

__all__ = [
    "HistoryColumns",
    "ItemSource",
    "PinnedOptions",
    "identity_positions",
    "synthetic_timestamps",
]

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
    option), and how it names the budget they are held against (``budget``)."""

    system: str | None = "keep_system=False"
    latest_user: str | None = None
    last: str | None = None
    budget: str = "max_tokens - output_reserve"


M = TypeVar("M")


class HistoryColumns:
    """The selection columns of a conversation mapped to items, and the items built on
    first use: the base of :class:`~cupel.conversation.HistoryItems` (see there), which
    builds it and selects."""

    __slots__ = (
        "_bare",
        "_invalid",
        "_items",
        "_position",
        "_source",
        "block_key",
        "blocks",
        "conversation",
        "keeps",
        "pinned",
        "pinned_flags",
        "pinned_tokens",
        "rejected",
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
        source: ItemSource,
        keeps: tuple[bool, bool, int] = (True, True, 0),
    ) -> None:
        self.conversation = conversation
        self.keeps = keeps
        """What is pinned: ``(keep_system, keep_latest_user, keep_last)``."""
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
        flags = [False] * len(units)
        for position in pinned:
            flags[position] = True
        self.pinned_flags: Sequence[bool] = flags
        """Whether each position is pinned."""
        self.rejected: Sequence[tuple[int, int]] = bad
        """``(unit, tokens)`` of each unit providers would reject."""
        self._source = source
        self._items: list[ContextItem] | None = None
        self._bare: list[ContextItem] | None = None
        self._invalid: list[tuple[ContextItem, InvalidToolCall]] | None = None
        self._position: dict[int, int] | None = None

    def __repr__(self) -> str:
        return (
            f"HistoryItems({len(self.units)} items, {len(self.rejected)} invalid, "
            f"{len(self.pinned)} pinned)"
        )

    @property
    def query(self) -> str:
        """The query an unbound :class:`~cupel.RelevanceScorer` is bound to: the one given
        when this was built, else the latest user message's text (``""`` when there is
        none), lone surrogates replaced by U+FFFD as in the items."""
        query = self._source.query
        if query is None:
            latest = self.conversation.latest_user
            if latest < 0:
                return ""
            query = self._source.texts[self.conversation.unit_firsts[latest]]
        return query if is_unicode_text(query) else _replaced(query)

    def is_pinned(self, position: int) -> bool:
        """Whether the item at ``position`` is pinned."""
        return self.pinned_flags[position]

    @property
    def items(self) -> list[ContextItem]:
        """One item per position (built on first use, then the same objects)."""
        items = self._items
        if items is None:
            items, bad = self._source.build(self, with_metadata=True)
            problems = self.conversation.unit_problems
            reasons = [InvalidToolCall(*problems[k]) for k, _ in self.rejected]
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

    def oversized(self, budget: ContextBudget) -> list[tuple[int, int]]:
        """The units too large for any window that a caller may cut to fit, as
        ``(position, tokens it may keep)``: the pinned units other than system messages
        (the latest user message, the latest units kept), largest first, while the pinned
        units together exceed ``min(target_tokens, max_tokens - output_reserve)``; then the
        newest unit when it alone exceeds what the pinned units leave. Empty when
        everything fits, or when system messages alone leave no room (never cut).

        >>> from cupel import ContextBudget
        >>> from cupel.conversation import Conversation, HistoryItems
        >>> history = HistoryItems.from_conversation(
        ...     Conversation(["system", "user", "assistant", "tool"],
        ...                  calls={2: ["c1"]}, answers={3: "c1"}),
        ...     ["Be brief.", "Summarize the log.", "", "log " * 500], [5, 6, 10, 900])
        >>> history.oversized(ContextBudget(max_tokens=300, target_tokens=300))
        [(2, 289)]
        """
        limit = min(budget.target_tokens, budget.max_tokens - budget.output_reserve)
        tokens = self.tokens
        roles = self.conversation.unit_roles
        units = self.units
        system = [p for p in self.pinned if roles[units[p]] == SYSTEM]
        left = limit - sum(tokens[p] for p in system)
        if left <= 0 or not units:
            return []
        kept = {p: tokens[p] for p in self.pinned if p not in system}
        cuts: dict[int, int] = {}
        excess = sum(kept.values()) - left
        for position in sorted(kept, key=lambda p: (-kept[p], -p)):
            if excess <= 0:
                break
            allowed = max(kept[position] - excess, 0)
            excess -= kept[position] - allowed
            kept[position] = cuts[position] = allowed
        newest = len(units) - 1
        if newest not in kept:
            room = left - sum(kept.values())
            if tokens[newest] > room > 0:
                cuts[newest] = room
        return sorted(cuts.items())

    def fitted(
        self,
        messages: Sequence[M],
        budget: ContextBudget,
        count: Callable[[Sequence[M]], int],
        count_text: Callable[[str], int],
        parts: MessageParts[M],
    ) -> tuple[list[M], dict[int, int]] | None:
        """``messages`` (the history this was built from) with cut copies of the units
        :meth:`oversized` plans (:func:`cupel.counting.fit_unit`: media first, then the
        longest texts), and the tokens cut by the index of each cut unit's first message;
        ``None`` when nothing is cut. ``count`` counts a unit's messages, ``parts`` reads
        and copies them."""
        plan = self.oversized(budget)
        if not plan:
            return None
        listed = list(messages)
        cuts: dict[int, int] = {}
        for position, allowed in plan:
            members = self.conversation.messages_of(self.units[position])
            fitted = fit_unit([listed[i] for i in members], allowed, count, count_text, parts)
            if fitted is not None:
                for index, message in zip(members, fitted[0], strict=True):
                    listed[index] = message
                cuts[members[0]] = fitted[1]
        return (listed, cuts) if cuts else None

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
            f"but the budget allows {available} ({options.budget}); "
            f"{', '.join(remedies[:-1])} or {remedies[-1]}",
        )
        raise error


_BARE_LIMIT = 1 << 14
_BARE_CHARACTERS = 1 << 23


class _Kept(dict[tuple[Any, ...], ContextItem]):
    """The kept items, with the characters of their contents (``held``)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        super().__init__()
        self.held = 0

    def keep(self, key: tuple[Any, ...], item: ContextItem) -> None:
        """Keep ``item`` under ``key``, first emptying the map when it is full."""
        size = len(item.content)
        if len(self) >= _BARE_LIMIT or self.held + size > _BARE_CHARACTERS:
            self.clear()
            self.held = 0
        self.held += size
        self[key] = item


_BARE = _Kept()
"""Items without caller metadata, by everything they hold (content, tokens, kind as spelt,
source, timestamp, pinned, block key and block): a conversation re-read on every turn
reuses the items of the units it already had instead of validating them anew (equal keys
make equal immutable items). Emptied once it holds 16,384 items or 8 Mi characters. Items
with the caller's metadata are not kept: it names each conversation's messages."""


@dataclass(frozen=True, slots=True, eq=False)
class ItemSource:
    """What the items are made of, kept until they are first built."""

    texts: Sequence[str]
    timestamps: Sequence[datetime | None] | None
    kinds: Mapping[str, ContextKind]
    metadata: Callable[[int], Mapping[str, Any]] | None
    block_key: str | None
    query: str | None = None

    def build(
        self, history: HistoryColumns, *, with_metadata: bool
    ) -> tuple[list[ContextItem], list[ContextItem]]:
        """The items of ``history``'s positions, and (``with_metadata``) of its invalid
        units. A message text holding a lone surrogate (half of an emoji cut in a stream,
        say), which no item may hold, is given to its item with U+FFFD in that place; the
        message itself is untouched."""
        try:
            return self._build(history, self.texts, with_metadata=with_metadata)
        except ItemError:
            if all(map(is_unicode_text, self.texts)):
                raise
        texts = [text if is_unicode_text(text) else _replaced(text) for text in self.texts]
        return self._build(history, texts, with_metadata=with_metadata)

    def _build(
        self, history: HistoryColumns, texts: Sequence[str], *, with_metadata: bool
    ) -> tuple[list[ContextItem], list[ContextItem]]:
        conversation = history.conversation
        n = conversation.n_messages
        stamps = synthetic_timestamps(n) if self.timestamps is None else _ordered(self.timestamps)
        firsts = conversation.unit_firsts
        groups = conversation.unit_members
        roles = conversation.unit_roles
        turns = conversation.unit_turns
        table = self.kinds
        # Per role: its kind and the kind as spelt (the key's: kinds compare without case).
        kind_of = {
            role: (table[role], str(table[role])) for role in (SYSTEM, USER, ASSISTANT, TOOL)
        }
        exchange_kind = (table["exchange"], str(table["exchange"]))
        other_kind = (table["other"], str(table["other"]))
        tool_source = ContextSource.TOOL
        block_key = self.block_key
        metadata = self.metadata if with_metadata else None
        # Without adapter metadata, the units of one turn share one read-only block dict.
        shared: dict[int, Mapping[str, Any]] = {}

        def item(k: int, need: int, pinned: bool, block: int | None) -> ContextItem:
            role = roles[k]
            first = firsts[k]
            group = groups.get(k)
            source = None
            if group is None:
                content = texts[first] or f"[{role} message]"
                kind, spelt = kind_of.get(role, other_kind)
                if role == TOOL:
                    source = tool_source
            else:
                content = "\n".join(texts[i] or f"[{role} message]" for i in group)
                kind, spelt = exchange_kind
                source = tool_source
            stamp = stamps[first]
            kept = metadata is None and type(need) is int  # (not a count: the item refuses it)
            key = (content, need, spelt, source, stamp, pinned, block_key, block) if kept else ()
            known = _BARE.get(key) if kept else None
            if known is not None:
                return known
            out: dict[str, Any] = {"content": content, "tokens": need, "kind": kind}
            out["timestamp"] = stamp
            if source is not None:
                out["source"] = source
            if pinned:
                out["pinned"] = True
            if metadata is not None:
                meta = metadata(k)
                if block_key is not None:
                    meta = {**meta, block_key: block}
                    if block is None:
                        del meta[block_key]
                out["metadata"] = meta
            elif block is not None:
                frozen = shared.get(block)
                if frozen is None:
                    frozen = shared[block] = freeze_metadata({block_key: block})  # type: ignore[dict-item]
                out["metadata"] = frozen
            made = ContextItem(**out)
            if kept:
                _BARE.keep(key, made)
            return made

        flags = history.pinned_flags
        items = [
            item(k, need, flags[p], block)
            for p, (k, need, block) in enumerate(
                zip(history.units, history.tokens, history.blocks, strict=True)
            )
        ]
        bad: list[ContextItem] = []
        if with_metadata:
            latest_user = conversation.latest_user
            latest_turn = turns[latest_user] if latest_user >= 0 else 0
            for k, need in history.rejected:
                turn = turns[k]
                blocked = block_key is not None and turn < latest_turn
                bad.append(item(k, need, False, turn if blocked else None))
        return items, bad


def _replaced(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def identity_positions(position: Mapping[int, int], selected: Sequence[ContextItem]) -> list[int]:
    """The positions of ``selected`` by ``position`` (``id(item)`` → position), ascending;
    an item not in it is a :class:`~cupel.ConfigurationError`."""
    try:
        out = [position[id(item)] for item in selected]
    except KeyError:
        stranger = next(item for item in selected if id(item) not in position)
        raise ConfigurationError(
            f"item {getattr(stranger, 'content', stranger)!r:.60} was not built from this history",
            field="items",
            value=stranger,
        ) from None
    out.sort()
    return out
