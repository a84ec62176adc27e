"""Chat messages <-> context items, with tool-call groups kept whole.

Mapping rules (one :class:`~cupel.ContextItem` per *unit*):

- A ``SystemMessage`` → kind ``SystemPrompt``, pinned unless ``keep_system=False``.
- The latest ``keep_last`` non-system units (default 1: the current question, or the
  tool result an agent just received) are pinned too.
- A ``HumanMessage`` / ``AIMessage`` without tool calls → kind ``Message``.
- An ``AIMessage`` with ``tool_calls`` and every ``ToolMessage`` answering it (matched
  by ``tool_call_id``) → **one** item of kind ``ToolOutput`` (``"tool_group"``): tokens
  summed, selected or dropped together, mapped back in the original order.
- A ``ToolMessage`` whose call no earlier ``AIMessage`` made (an *orphan*), and an
  ``AIMessage`` whose tool calls are not all answered in the input (*unanswered*), can
  never be sent to a provider; they are left out and reported as ``Filtered``
  (``orphan_tool_message`` / ``unanswered_tool_calls``).
- Timestamps follow message order (one microsecond apart). With ``timestamp_key`` set
  (e.g. ``"timestamp"``), a message carrying a timestamp under that key in
  ``additional_kwargs`` or ``response_metadata`` (a datetime, an ISO-8601 string or epoch
  seconds) keeps it and later messages follow it; a unit takes its first message's.
- ``metadata`` holds ``langchain.index`` (position), ``langchain.type`` and
  ``langchain.id`` (``message.id``) — for a group ``langchain.indices`` / ``langchain.ids``.
- Mapping back returns the very same message objects, in conversation order.

>>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
>>> history = [SystemMessage("Be brief."), HumanMessage("Weather?"),
...            AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
...            ToolMessage("Sunny", tool_call_id="c1"), AIMessage("It is sunny.")]
>>> mapped = messages_to_items(history)
>>> [(str(i.kind), i.pinned, i.metadata["langchain.type"]) for i in mapped.items]
[('SystemPrompt', True, 'system'), ('Message', False, 'human'), \
('ToolOutput', False, 'tool_group'), ('Message', True, 'ai')]
>>> mapped.messages_for(mapped.items[2:3]) == history[2:4]
True
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    MessageLikeRepresentation,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue

from cupel import (
    ConfigurationError,
    ContextItem,
    ContextKind,
    ContextSource,
    ExcludedItem,
    Filtered,
    ItemError,
    SelectionReport,
)
from cupel_langchain._items import (
    _FIELDS_SET,
    _STEP,
    _TEMPLATE,
    _fast_item,
    _new,
    _set_dict,
    _set_extra,
    _set_fields_set,
    _set_private,
    coerce_timestamp,
    new_item,
    synthetic_timestamps,
)
from cupel_langchain._tokens import (
    _ROLE_CHARS,
    CounterInput,
    MessageTokenCounter,
    _approximate_unit,
    approximate_message_tokens,
    resolve_message_counter,
)

__all__ = [
    "DEFAULT_MESSAGE_KINDS",
    "MessageItems",
    "MessagesInput",
    "StartOn",
    "as_messages",
    "check_keep_last",
    "check_kinds",
    "check_start_on",
    "messages_to_items",
    "tool_call_problems",
]

MessagesInput = PromptValue | Sequence[MessageLikeRepresentation]
"""What the message selectors accept: a prompt value or message-like objects."""

StartOn = str | type[BaseMessage] | Sequence[str | type[BaseMessage]] | None
"""Message types (``"human"``, ``HumanMessage``, ...) the selection may start on."""

DEFAULT_MESSAGE_KINDS: Mapping[str, str] = {
    "system": "SystemPrompt",
    "human": "Message",
    "ai": "Message",
    "tool_group": "ToolOutput",
    "tool": "ToolOutput",
    "function": "ToolOutput",
    "chat": "Message",
}
"""The kind of each unit type (``tool_group``: an AI tool call with its results)."""

_MESSAGE_TYPES = ("human", "ai", "system", "tool", "function", "chat")
ORPHAN = "orphan_tool_message"
UNANSWERED = "unanswered_tool_calls"


def check_kinds(kinds: Mapping[str, str] | None) -> dict[str, ContextKind]:
    """The kind table with ``kinds`` overriding the defaults, as interned kinds."""
    table = dict(DEFAULT_MESSAGE_KINDS)
    if kinds is not None:
        if not isinstance(kinds, Mapping):
            raise ConfigurationError(
                f"kinds must be a mapping of unit type to kind, got {type(kinds).__name__} "
                f"{kinds!r}",
                field="kinds",
                value=kinds,
            )
        for key, value in kinds.items():
            if key not in DEFAULT_MESSAGE_KINDS:
                raise ConfigurationError(
                    f"kinds: unknown unit type {key!r}; allowed: "
                    f"{', '.join(DEFAULT_MESSAGE_KINDS)}",
                    field=f"kinds[{key!r}]",
                    value=value,
                )
            table[key] = value
    out: dict[str, ContextKind] = {}
    for key, value in table.items():
        try:
            out[key] = ContextKind(value)
        except ItemError:
            raise ConfigurationError(
                f"kinds[{key!r}] must be a non-empty kind name, got {value!r}",
                field=f"kinds[{key!r}]",
                value=value,
            ) from None
    return out


def check_start_on(start_on: StartOn) -> tuple[str, ...]:
    """``start_on`` as a tuple of message type strings (empty: no constraint)."""
    if start_on is None:
        return ()
    entries: Sequence[Any] = [start_on] if isinstance(start_on, (str, type)) else list(start_on)
    types: list[str] = []
    for entry in entries:
        if isinstance(entry, str) and entry in _MESSAGE_TYPES:
            types.append(entry)
        elif isinstance(entry, type) and issubclass(entry, BaseMessage):
            types.append(str(entry.model_fields["type"].default))
        else:
            raise ConfigurationError(
                f"start_on must be a message type ({', '.join(_MESSAGE_TYPES)}), a message "
                f"class or a sequence of them, got {entry!r}",
                field="start_on",
                value=start_on,
            )
    return tuple(types)


def as_messages(messages: MessagesInput) -> list[BaseMessage]:
    """The input as a list of messages; ``BaseMessage`` objects are kept as they are."""
    if isinstance(messages, PromptValue):
        return messages.to_messages()
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        raise ConfigurationError(
            f"messages must be a sequence of messages or a prompt value, got "
            f"{type(messages).__name__}",
            field="messages",
            value=messages,
        )
    out = list(messages)
    # One check per distinct type, not per message.
    if all(isinstance(cls, type) and issubclass(cls, BaseMessage) for cls in set(map(type, out))):
        return out  # type: ignore[return-value]
    return convert_to_messages(out)


@dataclass(frozen=True, slots=True, eq=False)
class MessageItems:
    """Messages mapped to items: one item per unit, and the way back.

    ``items`` are the selectable units in conversation order; :attr:`units` gives the
    message indices behind each. ``invalid`` lists the units that can never be sent
    (orphan tool results, unanswered tool calls) with the reason's filter name.
    """

    messages: Sequence[BaseMessage]
    items: Sequence[ContextItem]
    invalid: Sequence[tuple[ContextItem, str]]
    contiguous: bool
    pinned: Sequence[int]
    """Positions (in ``items``) of the pinned items."""
    _firsts: Sequence[int] = dataclasses.field(repr=False)
    _members: Mapping[int, Sequence[int]] = dataclasses.field(repr=False)

    @property
    def units(self) -> list[tuple[int, ...]]:
        """The message indices of each item's unit (``units[i]`` for ``items[i]``)."""
        members = self._members
        return [
            tuple(members[k]) if k in members else (first,) for k, first in enumerate(self._firsts)
        ]

    def unit_of(self, item: ContextItem) -> tuple[BaseMessage, ...]:
        """The message(s) behind one of ``items`` (by identity)."""
        return tuple(self.messages_at([self._position(item)]))

    def _position(self, item: ContextItem) -> int:
        position = self.unit_positions([item])
        return position[0]

    def unit_positions(self, selected: Iterable[ContextItem]) -> list[int]:
        """Positions (in ``items``) of ``selected``, in conversation order. Each item is
        found from its ``langchain.index`` (its first message's index; ``_firsts`` is
        ascending) and checked by identity."""
        firsts = self._firsts
        items = self.items
        size = len(items)
        out: list[int] = []
        for item in selected:
            metadata = getattr(item, "metadata", None)
            index = metadata.get("langchain.index") if type(metadata) is dict else None
            position = bisect_left(firsts, index) if type(index) is int else size
            if position >= size or items[position] is not item:
                raise ConfigurationError(
                    f"item {getattr(item, 'content', item)!r:.60} is not one of this "
                    f"mapping's items",
                    field="items",
                    value=item,
                )
            out.append(position)
        out.sort()
        return out

    def first_message(self, position: int) -> BaseMessage:
        """The first message of the unit at ``position``."""
        return self.messages[self._firsts[position]]

    def messages_at(self, positions: Iterable[int]) -> list[BaseMessage]:
        """The messages of the units at ``positions`` (ascending), in conversation order."""
        messages = self.messages
        firsts = self._firsts
        members = self._members
        if not members:
            return [messages[firsts[position]] for position in positions]
        if self.contiguous:
            out: list[BaseMessage] = []
            for position in positions:
                group = members.get(position)
                if group is None:
                    out.append(messages[firsts[position]])
                else:
                    out.extend(messages[i] for i in group)
            return out
        indices: list[int] = []
        for position in positions:
            group = members.get(position)
            if group is None:
                indices.append(firsts[position])
            else:
                indices.extend(group)
        indices.sort()
        return [messages[i] for i in indices]

    def messages_for(self, selected: Iterable[ContextItem]) -> list[BaseMessage]:
        """The same message objects behind ``selected``, in conversation order."""
        return self.messages_at(self.unit_positions(selected))


def check_keep_last(keep_last: object) -> int:
    """``keep_last`` as a count of trailing units to pin (an int >= 0)."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        raise ConfigurationError(
            f"keep_last must be a non-negative int (the number of latest message units "
            f"always kept), got {keep_last!r}",
            field="keep_last",
            value=keep_last,
        )
    return keep_last


def _latest_units(
    messages: Sequence[BaseMessage],
    firsts: Sequence[int],
    invalid_at: Mapping[int, str],
    keep_last: int,
) -> set[int]:
    """Positions of the last ``keep_last`` non-system units that can be sent."""
    latest: set[int] = set()
    position = len(firsts) - 1
    while len(latest) < keep_last and position >= 0:
        if position not in invalid_at and messages[firsts[position]].type != "system":
            latest.add(position)
        position -= 1
    return latest


def _unit_text(message: BaseMessage) -> str:
    content = message.content
    if type(content) is str and content:
        return content
    text = str(message.text)
    if text:
        return text
    if isinstance(message, AIMessage) and message.tool_calls:
        return "[tool calls: " + ", ".join(call["name"] for call in message.tool_calls) + "]"
    return f"[{message.type} message]"


def _carried_timestamp(message: BaseMessage, key: str) -> datetime | None:
    extra = message.additional_kwargs
    if extra and key in extra:
        return coerce_timestamp(extra[key])
    meta = message.response_metadata
    if meta and key in meta:
        return coerce_timestamp(meta[key])
    return None


def _timestamps(messages: Sequence[BaseMessage], key: str | None) -> list[datetime]:
    count = len(messages)
    if key is None:
        return synthetic_timestamps(count)
    if not any(
        (m.additional_kwargs and key in m.additional_kwargs)
        or (m.response_metadata and key in m.response_metadata)
        for m in messages
    ):
        return synthetic_timestamps(count)
    carried = [_carried_timestamp(m, key) for m in messages]
    out: list[datetime] = []
    previous: datetime | None = None
    base = synthetic_timestamps(count)
    for index, moment in enumerate(carried):
        if moment is None:
            moment = base[index] if previous is None else previous + _STEP
        out.append(moment)
        previous = moment
    return out


def messages_to_items(
    messages: MessagesInput,
    *,
    token_counter: MessageTokenCounter = "approximate",
    token_counter_input: CounterInput | str = "auto",
    keep_system: bool = True,
    keep_last: int = 1,
    kinds: Mapping[str, str] | None = None,
    timestamp_key: str | None = None,
) -> MessageItems:
    """Map messages to one context item per unit (see the module docstring for the rules).

    Each unit is counted once with ``token_counter`` (see :mod:`cupel_langchain._tokens`).
    """
    return _map_messages(
        as_messages(messages),
        resolve_message_counter(token_counter, token_counter_input),
        keep_system=keep_system,
        keep_last=check_keep_last(keep_last),
        kinds=check_kinds(kinds),
        timestamp_key=timestamp_key,
    )


def _map_messages(
    messages: list[BaseMessage],
    count: Callable[[Sequence[BaseMessage]], int],
    *,
    keep_system: bool,
    keep_last: int,
    kinds: Mapping[str, ContextKind],
    timestamp_key: str | None,
) -> MessageItems:
    """One pass over the messages: a single message becomes its item at once; an AI
    message with tool calls opens a group that its tool messages join (by
    ``tool_call_id``), and groups become items after the pass, when they are complete.
    Then the invalid units are set aside and the latest ``keep_last`` units pinned."""
    stamps = _timestamps(messages, timestamp_key)
    approximate = count is _approximate_unit
    fast = new_item is _fast_item
    by_class: dict[type, _ClassInfo] = {}
    items: list[ContextItem | None] = []
    append = items.append
    firsts: list[int] = []
    add_first = firsts.append
    members: dict[int, list[int]] = {}  # unit position -> message indices of a group
    owner: dict[str, int] = {}  # tool_call_id -> unit position of the AI message
    open_calls: dict[int, set[str | None]] = {}
    invalid_at: dict[int, str] = {}
    pinned_at: list[int] = []
    for index, message in enumerate(messages):
        cls = type(message)
        info = by_class.get(cls)
        if info is None:
            info = by_class[cls] = _class_info(message, kinds, keep_system, approximate)
        kind_name, kind, source, pinned, role, category = info
        if category is _AI:
            calls = message.tool_calls  # type: ignore[attr-defined]
            if calls:
                position = len(firsts)
                ids = {call.get("id") for call in calls}
                open_calls[position] = ids
                for call_id in ids:
                    if call_id is not None:
                        owner[call_id] = position
                members[position] = [index]
                add_first(index)
                append(None)  # built after the pass
                continue
        elif category is _TOOL:
            call_id = message.tool_call_id  # type: ignore[attr-defined]
            position_or_none = owner.get(call_id)
            if position_or_none is not None:
                members[position_or_none].append(index)
                open_calls[position_or_none].discard(call_id)
                continue
            invalid_at[len(firsts)] = ORPHAN
        if pinned:
            pinned_at.append(len(firsts))
        content = message.content
        if role is None or type(content) is not str:
            tokens = approximate_message_tokens(message) if approximate else count([message])
        else:
            # approximate_message_tokens, inlined (one call less per message) for a human,
            # AI (without tool calls, here) or tool message.
            chars = len(content) + role
            name = message.name
            if name:
                chars += len(name)
            if category is _TOOL:
                chars += len(message.tool_call_id)  # type: ignore[attr-defined]
            tokens = -(-chars // 4) + 3
        if type(content) is not str or not content:
            content = _unit_text(message)
        message_id = message.id
        metadata: dict[str, Any] = (
            {"langchain.index": index, "langchain.type": kind_name}
            if message_id is None
            else {"langchain.index": index, "langchain.type": kind_name, "langchain.id": message_id}
        )
        add_first(index)
        if not fast:
            append(new_item(content, tokens, kind, source, stamps[index], metadata, pinned))
            continue
        # _fast_item, inlined (the same four steps): a copy of the template __dict__, the
        # unit's values, then the model's storage slots.
        item = _new(ContextItem)
        fields = _TEMPLATE.copy()
        fields["content"] = content
        fields["tokens"] = tokens
        fields["kind"] = kind
        fields["source"] = source
        fields["metadata"] = metadata
        fields["timestamp"] = stamps[index]
        if pinned:
            fields["pinned"] = True
        _set_dict(item, fields)
        _set_fields_set(item, _FIELDS_SET)
        _set_extra(item, None)
        _set_private(item, None)
        append(item)

    contiguous = True
    group_kind = kinds["tool_group"]
    for position, group in members.items():
        if open_calls[position]:
            invalid_at[position] = UNANSWERED
        if group[-1] - group[0] != len(group) - 1:
            contiguous = False
        items[position] = _group_item(messages, group, count, group_kind, stamps[group[0]])
    for position in _latest_units(messages, firsts, invalid_at, keep_last):
        pinned_at.append(position)
        items[position] = _pinned(cast(ContextItem, items[position]))
    pinned_at.sort()
    built = cast(list[ContextItem], items)
    if not invalid_at:
        return MessageItems(messages, built, [], contiguous, pinned_at, firsts, members)
    kept = [k for k in range(len(firsts)) if k not in invalid_at]
    renumber = {old: new for new, old in enumerate(kept)}
    return MessageItems(
        messages,
        [built[k] for k in kept],
        [(built[k], invalid_at[k]) for k in sorted(invalid_at)],
        contiguous,
        [renumber[k] for k in pinned_at],  # invalid units are never pinned
        [firsts[k] for k in kept],
        {renumber[k]: group for k, group in members.items() if k in renumber},
    )


def _pinned(item: ContextItem) -> ContextItem:
    """The same item, pinned (its tokens are not counted again)."""
    return new_item(
        item.content,
        item.tokens,
        item.kind,
        item.source,
        item.timestamp,
        item.metadata,
        True,
    )


_AI = "ai"
_TOOL = "tool"
_OTHER = "other"


_ClassInfo = tuple[str, ContextKind, ContextSource, bool, "int | None", str]
"""Per message class: type name, kind, source, pinned as a system message, the role's
length for the inlined approximate count (``None``: count with the function), and the
category (``_AI``, ``_TOOL`` or ``_OTHER``) that decides grouping."""


def _class_info(
    message: BaseMessage, kinds: Mapping[str, ContextKind], keep_system: bool, approximate: bool
) -> _ClassInfo:
    cls = type(message)
    name = str(message.type)
    source = ContextSource.TOOL if name in ("tool", "function") else ContextSource.CHAT
    role = _ROLE_CHARS.get(cls) if approximate and cls is not SystemMessage else None
    kind = kinds.get(name, kinds["chat"])
    category = (
        _TOOL
        if isinstance(message, ToolMessage)
        else _AI
        if isinstance(message, AIMessage)
        else _OTHER
    )
    return name, kind, source, keep_system and name == "system", role, category


def _group_item(
    messages: Sequence[BaseMessage],
    group: Sequence[int],
    count: Callable[[Sequence[BaseMessage]], int],
    kind: ContextKind,
    timestamp: datetime,
) -> ContextItem:
    """The item of an AI tool call with its answers."""
    unit = [messages[i] for i in group]
    metadata = {
        "langchain.index": group[0],
        "langchain.type": "tool_group",
        "langchain.indices": list(group),
        "langchain.ids": [m.id for m in unit],
    }
    content = "\n".join(_unit_text(m) for m in unit)
    return new_item(content, count(unit), kind, ContextSource.TOOL, timestamp, metadata)


def add_filtered(
    report: SelectionReport,
    *,
    dropped: Sequence[tuple[ContextItem, str]] = (),
    upfront: Sequence[tuple[ContextItem, str]] = (),
) -> SelectionReport:
    """The report with the adapter's own decisions: ``dropped`` items move from included
    to excluded and ``upfront`` items (never offered to the pipeline) join the excluded
    and the totals; both with reason ``Filtered(filter_name)``."""
    if not dropped and not upfront:
        return report
    dropped_ids = {id(item): name for item, name in dropped}
    included = []
    excluded = list(report.excluded)
    for entry in report.included:
        name = dropped_ids.get(id(entry.item))
        if name is None:
            included.append(entry)
        else:
            excluded.append(ExcludedItem(entry.item, entry.score, Filtered(name)))
    excluded.extend(ExcludedItem(item, 0.0, Filtered(name)) for item, name in upfront)
    excluded.sort(key=lambda e: -e.score)  # stable: ties keep their order
    return dataclasses.replace(
        report,
        included=tuple(included),
        excluded=tuple(excluded),
        total_candidates=report.total_candidates + len(upfront),
        total_tokens_considered=report.total_tokens_considered
        + sum(item.tokens for item, _ in upfront),
    )


def tool_call_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Why a chat-model provider would reject these messages' tool calls (empty: valid).

    The rule providers enforce: every ``ToolMessage`` answers a call of the ``AIMessage``
    right before its run of tool results, and every tool call of an ``AIMessage`` is
    answered before the next non-tool message (or the end).

    >>> from langchain_core.messages import AIMessage, ToolMessage
    >>> call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    >>> tool_call_problems([call, ToolMessage("ok", tool_call_id="c1")])
    []
    >>> tool_call_problems([ToolMessage("ok", tool_call_id="c1")])
    ["message 0: ToolMessage answers tool_call_id 'c1', which no preceding AIMessage left open"]
    >>> tool_call_problems([call])
    ["end: tool call(s) ['c1'] of message 0 are unanswered"]
    """
    problems: list[str] = []
    pending: dict[str | None, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if message.tool_call_id in pending:
                del pending[message.tool_call_id]
            else:
                problems.append(
                    f"message {index}: ToolMessage answers tool_call_id "
                    f"{message.tool_call_id!r}, which no preceding AIMessage left open"
                )
            continue
        if pending:
            problems.append(
                f"message {index}: {message.type} message arrives while tool call(s) "
                f"{sorted(map(str, pending))} of message {min(pending.values())} are unanswered"
            )
            pending.clear()
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                pending[call.get("id")] = index
    if pending:
        problems.append(
            f"end: tool call(s) {sorted(map(str, pending))} of message "
            f"{min(pending.values())} are unanswered"
        )
    return problems
