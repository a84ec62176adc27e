"""Chat messages <-> context items, with tool-call groups kept whole.

Mapping rules (one :class:`~cupel.ContextItem` per *unit*):

- A ``SystemMessage`` → kind ``SystemPrompt``, pinned unless ``keep_system=False``.
- The latest ``keep_last`` non-system units (default 1: the current question, or the
  tool result an agent just received) are pinned too.
- A ``HumanMessage`` / ``AIMessage`` without tool calls → kind ``Message``.
- An ``AIMessage`` with ``tool_calls`` and the ``ToolMessage`` s answering it (matched by
  ``tool_call_id``) → **one** item of kind ``ToolOutput`` (``"tool_group"``): tokens
  summed, selected or dropped together, mapped back in the original order.
- Tool calls are matched the way chat-model providers check them: a ``ToolMessage``
  answers a call of the ``AIMessage`` before its run of tool messages (no other message
  in between), and every call is answered within that run. A ``ToolMessage`` that answers
  nothing open there (an *orphan*: unknown id, a duplicate answer, or an answer arriving
  after another message) and an ``AIMessage`` whose calls are not all answered in time
  (*unanswered*) can never be sent to a provider; they are left out and reported as
  ``Filtered`` (``orphan_tool_message`` / ``unanswered_tool_calls``).
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from operator import attrgetter
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    MessageLikeRepresentation,
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
    _STEP,
    coerce_timestamp,
    fields_template,
    item_fields,
    new_items,
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
    allowed = (
        f"start_on must be a message type ({', '.join(_MESSAGE_TYPES)}), a message class "
        f"or a sequence of them"
    )
    if isinstance(start_on, (str, type)):
        entries: list[Any] = [start_on]
    elif isinstance(start_on, Iterable) and not isinstance(start_on, (bytes, Mapping)):
        entries = list(start_on)
    else:
        raise ConfigurationError(
            f"{allowed}, got {type(start_on).__name__} {start_on!r}",
            field="start_on",
            value=start_on,
        )
    types: list[str] = []
    for entry in entries:
        if isinstance(entry, str) and entry in _MESSAGE_TYPES:
            types.append(entry)
        elif isinstance(entry, type) and issubclass(entry, BaseMessage):
            types.append(str(entry.model_fields["type"].default))
        else:
            raise ConfigurationError(f"{allowed}, got {entry!r}", field="start_on", value=start_on)
    return tuple(types)


def as_messages(messages: MessagesInput) -> list[BaseMessage]:
    """The input as a list of messages; ``BaseMessage`` objects are kept as they are,
    other message-likes (``("human", "hi")``, dicts, strings) are converted."""
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
    converted: list[BaseMessage] = []
    for index, message in enumerate(out):
        try:
            converted.extend(convert_to_messages([message]))
        except (NotImplementedError, ValueError, TypeError, KeyError) as exc:
            raise ItemError(
                f"messages[{index}] must be a message or a message-like (a BaseMessage, a "
                f"(role, content) pair, a dict with role and content, or a string), got "
                f"{type(message).__name__} {message!r:.80}",
                field=f"messages[{index}]",
                value=message,
            ) from exc
    return converted


_ID = attrgetter("id")


@dataclass(frozen=True, slots=True, eq=False)
class MessageItems:
    """Messages mapped to items: one item per unit, and the way back.

    ``items`` are the selectable units in conversation order; :attr:`units` gives the
    message indices behind each. ``invalid`` lists the units that can never be sent
    (orphan tool results, unanswered tool calls) with the reason's filter name.

    A valid group's messages are its AI message and the tool messages right after it
    (only invalid units can sit between them), so the units' messages, taken in unit
    order, are in conversation order.
    """

    messages: Sequence[BaseMessage]
    items: Sequence[ContextItem]
    invalid: Sequence[tuple[ContextItem, str]]
    pinned: Sequence[int]
    """Positions (in ``items``) of the pinned items."""
    _firsts: Sequence[int] = dataclasses.field(repr=False)
    _members: Mapping[int, Sequence[int]] = dataclasses.field(repr=False)
    _positions: dict[int, int] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def units(self) -> list[tuple[int, ...]]:
        """The message indices of each item's unit (``units[i]`` for ``items[i]``)."""
        members = self._members
        return [
            tuple(members[k]) if k in members else (first,) for k, first in enumerate(self._firsts)
        ]

    def unit_of(self, item: ContextItem) -> tuple[BaseMessage, ...]:
        """The message(s) behind one of ``items`` (by identity)."""
        return tuple(self.messages_at(self.unit_positions([item])))

    def unit_positions(self, selected: Iterable[ContextItem]) -> list[int]:
        """Positions (in ``items``) of ``selected``, ascending, each found by identity
        (the items' metadata plays no part); an item not of this mapping is refused."""
        position_of = self._positions
        if not position_of:  # built on first use: {id(item): position}
            position_of.update(zip(map(id, self.items), range(len(self.items)), strict=True))
        chosen = list(selected)
        try:
            positions = list(map(position_of.__getitem__, map(id, chosen)))
        except KeyError:
            stranger = next(item for item in chosen if id(item) not in position_of)
            raise ConfigurationError(
                f"item {getattr(stranger, 'content', stranger)!r:.60} is not one of this "
                f"mapping's items",
                field="items",
                value=stranger,
            ) from None
        positions.sort()
        return positions

    def first_message(self, position: int) -> BaseMessage:
        """The first message of the unit at ``position``."""
        return self.messages[self._firsts[position]]

    def messages_at(self, positions: Iterable[int]) -> list[BaseMessage]:
        """The messages of the units at ``positions`` (ascending), in conversation order."""
        messages = self.messages
        firsts = self._firsts
        members = self._members
        if not members:
            return list(map(messages.__getitem__, map(firsts.__getitem__, positions)))
        out: list[BaseMessage] = []
        for position in positions:
            group = members.get(position)
            if group is None:
                out.append(messages[firsts[position]])
            else:
                out.extend(map(messages.__getitem__, group))
        return out

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


_AI = "ai"
_TOOL = "tool"
_OTHER = "other"

_ClassInfo = tuple[str, ContextKind, ContextSource, bool, str]
"""Per message class: type name, kind, source, pinned as a system message, and the
category (``_AI``, ``_TOOL`` or ``_OTHER``) that decides grouping."""


def _class_info(
    message: BaseMessage, kinds: Mapping[str, ContextKind], keep_system: bool
) -> _ClassInfo:
    name = str(message.type)
    source = ContextSource.TOOL if name in ("tool", "function") else ContextSource.CHAT
    kind = kinds.get(name, kinds["chat"])
    category = (
        _TOOL
        if isinstance(message, ToolMessage)
        else _AI
        if isinstance(message, AIMessage)
        else _OTHER
    )
    return name, kind, source, keep_system and name == "system", category


_UNREAD: dict[str, Any] = {}
"""The metadata shared by the items of a selection nothing reads metadata from (never
exposed: those items stay inside the selection)."""

_Plain = tuple[dict[str, Any], int, str, bool]
"""A plain message class's template fields, token offset, type name, and whether it is
an ``AIMessage`` (whose tool calls must be checked)."""


@lru_cache(maxsize=64)
def _plain_classes(human: str, ai: str) -> dict[type, _Plain]:
    """The classes the fast path of :func:`_map_messages` maps on its own: exactly
    ``HumanMessage`` and ``AIMessage`` (here of kinds ``human`` and ``ai``, as spelled).
    For one with non-empty ``str`` content, no name and no tool calls,
    ``count_tokens_approximately([m])`` is ``ceil((len(content) + len(role)) / 4) + 3`` =
    ``(len(content) + len(role) + 15) // 4``. Cached: the templates are only copied (their
    metadata is the shared unread one, replaced when metadata is built)."""
    return {
        cls: (_template(ContextKind(kind), ContextSource.CHAT), offset, name, is_ai)
        for cls, kind, offset, name, is_ai in (
            (HumanMessage, human, _ROLE_CHARS[HumanMessage] + 15, "human", False),
            (AIMessage, ai, _ROLE_CHARS[AIMessage] + 15, "ai", True),
        )
    }


def _template(kind: ContextKind, source: ContextSource) -> dict[str, Any]:
    template = fields_template(kind, source)
    template["metadata"] = _UNREAD
    return template


def _map_messages(
    messages: list[BaseMessage],
    count: Callable[[Sequence[BaseMessage]], int],
    *,
    keep_system: bool,
    keep_last: int,
    kinds: Mapping[str, ContextKind],
    timestamp_key: str | None,
    with_metadata: bool = True,
) -> MessageItems:
    """One pass over the messages builds each unit's item fields; then the groups are
    completed, the invalid units set aside, the latest ``keep_last`` units pinned, and
    all items built at once (:func:`~cupel_langchain._items.new_items`).

    Fast path: with the approximate counter, a ``HumanMessage`` or ``AIMessage`` with
    plain text (no name, no tool calls) — nearly every message of a conversation — is
    mapped inline, its tokens computed as ``count_tokens_approximately`` would. Every
    other message takes the general path (:func:`_single_fields`, groups). Both give
    the same items (a property test maps random histories with the approximate counter
    and with a plain callable wrapping ``count_tokens_approximately``).

    ``with_metadata=False`` is for selections whose items nobody but a pipeline that
    never reads metadata will see (see :func:`~cupel_langchain._selection.
    metadata_unread`): the fast path then gives its items one shared empty metadata dict
    instead of building one per message. Nothing else changes (a property test checks
    that such selections equal the full ones).
    """
    stamps = _timestamps(messages, timestamp_key)
    approximate = count is _approximate_unit
    plain = _plain_classes(str(kinds["human"]), str(kinds["ai"])) if approximate else {}
    by_class: dict[type, _ClassInfo] = {}
    units: list[dict[str, Any] | None] = []  # the item fields of each unit; None: a group
    add_unit = units.append
    firsts: list[int] = []  # the first message index of each unit
    add_first = firsts.append
    members: dict[int, list[int]] = {}  # unit position -> message indices of a group
    open_calls: dict[int, set[str | None]] = {}  # group position -> unanswered call ids
    current: int | None = None  # the group whose tool messages may still arrive
    invalid_at: dict[int, str] = {}
    pinned_at: list[int] = []  # system messages (kept by keep_system), then the latest units
    for index, message in enumerate(messages):
        known = plain.get(type(message))
        if known is not None:
            template, offset, type_name, ai = known
            content = message.content
            if (
                type(content) is str
                and content
                and not message.name
                and not (ai and message.tool_calls)  # type: ignore[attr-defined]
            ):
                current = None
                fields = template.copy()
                fields["content"] = content
                fields["tokens"] = (len(content) + offset) // 4
                if with_metadata:  # else the template's shared, unread metadata stays
                    message_id = message.id
                    fields["metadata"] = (
                        {"langchain.index": index, "langchain.type": type_name}
                        if message_id is None
                        else {
                            "langchain.index": index,
                            "langchain.type": type_name,
                            "langchain.id": message_id,
                        }
                    )
                fields["timestamp"] = stamps[index]
                add_unit(fields)
                add_first(index)
                continue
        cls = type(message)
        info = by_class.get(cls)
        if info is None:
            info = by_class[cls] = _class_info(message, kinds, keep_system)
        category = info[4]
        if category is _TOOL:
            call_id = message.tool_call_id  # type: ignore[attr-defined]
            if current is not None and call_id in open_calls[current]:
                open_calls[current].discard(call_id)
                members[current].append(index)
                continue
            invalid_at[len(firsts)] = ORPHAN  # a tool message does not end the run
        else:
            current = None
            if category is _AI and message.tool_calls:  # type: ignore[attr-defined]
                current = len(firsts)
                open_calls[current] = {call.get("id") for call in message.tool_calls}  # type: ignore[attr-defined]
                members[current] = [index]
                add_unit(None)  # built below, once complete
                add_first(index)
                continue
        if info[3]:
            pinned_at.append(len(firsts))
        add_unit(_single_fields(message, index, info, count, approximate, stamps[index]))
        add_first(index)

    group_kind = kinds["tool_group"]
    for position, group in members.items():
        if open_calls[position]:
            invalid_at[position] = UNANSWERED
        units[position] = _group_fields(
            messages, group, count, group_kind, stamps[group[0]], with_metadata
        )
    filled: list[dict[str, Any]] = units  # type: ignore[assignment]
    for position in _latest_units(messages, firsts, invalid_at, keep_last):
        if not filled[position]["pinned"]:
            filled[position]["pinned"] = True
            pinned_at.append(position)
    pinned_at.sort()
    built = new_items(filled)
    if not invalid_at:
        return MessageItems(messages, built, [], pinned_at, firsts, members)
    kept = [k for k in range(len(firsts)) if k not in invalid_at]
    renumber = {old: new for new, old in enumerate(kept)}
    return MessageItems(
        messages,
        [built[k] for k in kept],
        [(built[k], invalid_at[k]) for k in sorted(invalid_at)],
        [renumber[k] for k in pinned_at],  # invalid units are never pinned
        [firsts[k] for k in kept],
        {renumber[k]: group for k, group in members.items() if k in renumber},
    )


def _latest_units(
    messages: Sequence[BaseMessage],
    firsts: Sequence[int],
    invalid_at: Mapping[int, str],
    keep_last: int,
) -> list[int]:
    """Positions of the last ``keep_last`` non-system units that can be sent."""
    latest: list[int] = []
    position = len(firsts) - 1
    while len(latest) < keep_last and position >= 0:
        if position not in invalid_at and messages[firsts[position]].type != "system":
            latest.append(position)
        position -= 1
    return latest


def _single_fields(
    message: BaseMessage,
    index: int,
    info: _ClassInfo,
    count: Callable[[Sequence[BaseMessage]], int],
    approximate: bool,
    timestamp: datetime,
) -> dict[str, Any]:
    """The item fields of a message that is a unit on its own (the general path)."""
    type_name, kind, source, pinned, _ = info
    tokens = approximate_message_tokens(message) if approximate else count([message])
    metadata: dict[str, Any] = {"langchain.index": index, "langchain.type": type_name}
    if message.id is not None:
        metadata["langchain.id"] = message.id
    return item_fields(_unit_text(message), tokens, kind, source, timestamp, metadata, pinned)


def _group_fields(
    messages: Sequence[BaseMessage],
    group: Sequence[int],
    count: Callable[[Sequence[BaseMessage]], int],
    kind: ContextKind,
    timestamp: datetime,
    with_metadata: bool,
) -> dict[str, Any]:
    """The item fields of an AI tool call with its answers (counted once, as a unit)."""
    unit = list(map(messages.__getitem__, group))
    content = "\n".join(map(_unit_text, unit))
    if not with_metadata:
        return item_fields(content, count(unit), kind, ContextSource.TOOL, timestamp, _UNREAD)
    metadata = {
        "langchain.index": group[0],
        "langchain.type": "tool_group",
        "langchain.indices": list(group),
        "langchain.ids": list(map(_ID, unit)),
    }
    return item_fields(content, count(unit), kind, ContextSource.TOOL, timestamp, metadata)


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
