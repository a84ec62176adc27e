"""Chat messages ⇄ cupel's conversation layer (:mod:`cupel.conversation`).

Each message is read once for what the conversation layer needs — its role, text, token
count and tool-call links — and the layer does the rest: units (an ``AIMessage`` with
``tool_calls`` — and ``invalid_tool_calls``, which providers receive as calls too — plus
the ``ToolMessage`` s answering it is **one** unit, kept or dropped together), turns,
the providers' validity rule, the pinned set, and one :class:`~cupel.ContextItem` per unit.

- ``SystemMessage`` → kind ``SystemPrompt``, pinned unless ``keep_system=False``; the
  latest ``HumanMessage`` (the question, or an agent's task) is pinned unless
  ``keep_last_human=False``; ``keep_last`` pins the latest units too.
- ``HumanMessage`` / ``AIMessage`` → kind ``Message``; a tool-call group → ``ToolOutput``.
- Units providers would reject — unanswered or partly answered calls, tool results that
  are late (another message came between), duplicate or unknown — are never selected;
  the report lists them as :class:`~cupel.InvalidToolCall`.
- Timestamps follow message order (one microsecond apart). With ``timestamp_key`` set
  (e.g. ``"timestamp"``), a timestamp carried in ``additional_kwargs`` or
  ``response_metadata`` (a datetime, an ISO-8601 string or epoch seconds) is used, kept in
  message order; unusable values are ignored.
- ``metadata``: ``langchain.index`` (position), ``langchain.type`` and ``langchain.id`` —
  for a group ``langchain.indices`` / ``langchain.ids`` — plus ``cupel:turn`` on units of
  earlier turns (the recency window keeps each earlier turn whole).
- Mapping back returns the very same message objects, in conversation order.

>>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
>>> history = [SystemMessage("Be brief."), HumanMessage("Weather?"),
...            AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
...            ToolMessage("Sunny", tool_call_id="c1"), AIMessage("It is sunny.")]
>>> mapped = messages_to_items(history)
>>> [(str(i.kind), i.pinned, i.metadata["langchain.type"]) for i in mapped.items]
[('SystemPrompt', True, 'system'), ('Message', True, 'human'), \
('ToolOutput', False, 'tool_group'), ('Message', False, 'ai')]
>>> mapped.messages_for(mapped.items[2:3]) == history[2:4]
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    MessageLikeRepresentation,
    RemoveMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.prompt_values import PromptValue

from cupel import ConfigurationError, ContextItem, ContextKind, InvalidToolCall, ItemError
from cupel.conversation import (
    ASSISTANT,
    TOOL,
    USER,
    Conversation,
    HistoryItems,
)
from cupel.counting import MESSAGE_TOKENS, ImageTokens
from cupel_langchain._options import (
    CHAT_ROLES,
    CHUNK_TYPES,
    ROLE_BY_TYPE,
    check_keep_last,
    check_kinds,
    refused,
)
from cupel_langchain._tokens import (
    CounterInput,
    MessageTokenCounter,
    UnitCounter,
    resolve_message_counter,
)

__all__ = [
    "MessageItems",
    "MessagesInput",
    "as_messages",
    "coerce_timestamp",
    "messages_to_items",
    "read_messages",
    "tool_call_problems",
]

MessagesInput = PromptValue | Sequence[MessageLikeRepresentation]
"""What the message selectors accept: a prompt value or message-like objects."""


def as_messages(messages: MessagesInput) -> list[BaseMessage]:
    """The input as a list of messages; ``BaseMessage`` objects are kept as they are,
    other message-likes (``("human", "hi")``, dicts, strings) are converted."""
    if type(messages) is not list:  # a list (the common case) is none of these
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
    for cls in set(map(type, out)):  # one check per distinct type, not per message
        if not issubclass(cls, BaseMessage):
            break
    else:
        return out
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


def coerce_timestamp(value: object) -> datetime | None:
    """A carried timestamp as an aware UTC datetime: a ``datetime`` (naive = UTC), an
    ISO-8601 string, or a number of seconds since the epoch; ``None`` when unusable
    (unparseable, or out of the representable range once converted to UTC).

    >>> coerce_timestamp("2025-03-01T12:00:00+01:00")
    datetime.datetime(2025, 3, 1, 11, 0, tzinfo=datetime.timezone.utc)
    >>> coerce_timestamp(0)
    datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    >>> coerce_timestamp("9999-12-31T23:59:59-05:00") is None
    True
    """
    try:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, tz=timezone.utc)
        else:
            return None
        if moment.tzinfo is None:
            return moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _carried_timestamp(message: BaseMessage, key: str) -> datetime | None:
    extra = message.additional_kwargs
    if extra and key in extra:
        return coerce_timestamp(extra[key])
    meta = message.response_metadata
    if meta and key in meta:
        return coerce_timestamp(meta[key])
    return None


def _role(message: BaseMessage, index: int) -> str:
    """The conversation-layer role of a message (``RemoveMessage`` is refused)."""
    if isinstance(message, RemoveMessage):
        raise ItemError(
            f"messages[{index}] is a RemoveMessage (id={message.id!r}): an instruction to "
            f"LangGraph's add_messages reducer, not a message a model can read; apply it "
            f"to the state first (or pass the state's messages after the update)",
            field=f"messages[{index}]",
            value=message,
        )
    if isinstance(message, ChatMessage):
        return CHAT_ROLES.get(message.role, "other")
    return ROLE_BY_TYPE.get(message_type(message), "other")


def message_type(message: BaseMessage) -> str:
    """A message's type, a streamed chunk's being its message's (``AIMessageChunk`` ->
    ``"ai"``): histories assembled from streamed output hold chunks.

    >>> from langchain_core.messages import AIMessageChunk
    >>> message_type(AIMessageChunk("Hi")), message_type(HumanMessage("Hi"))
    ('ai', 'human')
    """
    kind = str(message.type)
    return CHUNK_TYPES.get(kind, kind)


def _calls(message: AIMessage) -> list[str | None]:
    """The ids of every call an AI message makes: ``tool_calls``, ``invalid_tool_calls``
    (providers receive them as calls too) and a legacy ``function_call`` (no id)."""
    ids: list[str | None] = [call.get("id") for call in message.tool_calls]
    ids.extend(call.get("id") for call in message.invalid_tool_calls)
    if message.additional_kwargs.get("function_call"):
        ids.append(None)
    return ids


_PLAIN: dict[type, tuple[str, bool, str]] = {
    # class: role, whether it may carry tool calls, its type
    HumanMessage: (USER, False, "human"),
    AIMessage: (ASSISTANT, True, "ai"),
}


class MessageRecord(NamedTuple):
    """What the conversation layer needs of a message list, read in one pass."""

    messages: list[BaseMessage]
    roles: list[str]
    texts: list[str]
    tokens: list[int] | None
    calls: dict[int, list[str | None]]
    answers: dict[int, str | None]
    types: list[str]
    reporting: list[int]
    """The ``AIMessage`` s that carry ``usage_metadata`` (for calibration)."""


def read_messages(
    messages: list[BaseMessage],
    count: Callable[[BaseMessage], int] | None,
    count_plain: Callable[[str], int] | None = None,
) -> MessageRecord:
    """Role, text, links and (with a per-message ``count``) tokens of every message.
    ``count_plain``: the text counter pricing a plain message (a human or AI message of one
    text part, no tool calls, name or extra kwargs) as its text's count plus
    :data:`~cupel.counting.MESSAGE_TOKENS`, what ``count`` would say, without reading it."""
    roles: list[str] = []
    texts: list[str] = []
    types: list[str] = []
    tokens: list[int] | None = None if count is None else []
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    role_of: dict[type, str] = {}
    reporting: list[int] = []
    add_role = roles.append
    add_text = texts.append
    add_type = types.append
    plain_of = _PLAIN.get
    priced = tokens is not None and count_plain is not None
    for index, message in enumerate(messages):
        cls = type(message)
        content = message.content
        plain = plain_of(cls)
        if (
            plain is not None
            and type(content) is str
            and content
            and not message.additional_kwargs
            and not (
                plain[1] and (message.tool_calls or message.invalid_tool_calls)  # type: ignore[attr-defined]
            )
        ):
            # a plain human or AI message (nearly every message of a chat): role and text
            plain_role, ai, kind = plain
            add_role(plain_role)
            add_type(kind)
            add_text(content)
            if ai and message.usage_metadata:  # type: ignore[attr-defined]
                reporting.append(index)
            if priced and not message.name:
                tokens.append(count_plain(content) + MESSAGE_TOKENS)  # type: ignore[misc,union-attr]
            elif tokens is not None:
                tokens.append(count(message))  # type: ignore[misc]
            continue
        role = role_of.get(cls)
        if role is None or isinstance(message, ChatMessage):
            role = _role(message, index)
            if not isinstance(message, ChatMessage):
                role_of[cls] = role
        add_role(role)
        add_type(message_type(message))
        add_text(content if type(content) is str and content else _unit_text(message))
        if tokens is not None:
            tokens.append(count(message))  # type: ignore[misc]
        if role == ASSISTANT and isinstance(message, AIMessage):
            if message.usage_metadata:
                reporting.append(index)
            if message.tool_calls or message.invalid_tool_calls or message.additional_kwargs:
                made = _calls(message)
                if made:
                    calls[index] = made
        elif role == TOOL:
            answers[index] = message.tool_call_id if isinstance(message, ToolMessage) else None
    return MessageRecord(messages, roles, texts, tokens, calls, answers, types, reporting)


@dataclass(frozen=True, slots=True, eq=False)
class MessageItems:
    """Messages mapped to items: one item per unit, and the way back.

    ``items`` are the units that can be sent, in conversation order (what a pipeline
    selects from); :attr:`units` gives the message indices behind each. ``invalid`` pairs
    each unit providers would reject with its :class:`~cupel.InvalidToolCall` reason.
    ``counts``: each message's tokens, when the counter counts messages one by one
    (``None`` for a counter of whole units); ``reporting``: the ``AIMessage`` s carrying
    ``usage_metadata``.
    """

    messages: Sequence[BaseMessage]
    history: HistoryItems
    counts: Sequence[int] | None = None
    reporting: Sequence[int] = ()
    """The indices of the ``AIMessage`` s that carry ``usage_metadata``."""

    @property
    def items(self) -> list[ContextItem]:
        """The selectable units' items, in conversation order."""
        return self.history.items

    @property
    def invalid(self) -> list[tuple[ContextItem, InvalidToolCall]]:
        """The units providers would reject, with why."""
        return self.history.invalid

    @property
    def pinned(self) -> list[int]:
        """Positions (in ``items``) of the pinned items."""
        return self.history.pinned

    @property
    def units(self) -> list[tuple[int, ...]]:
        """The message indices of each item's unit (``units[i]`` for ``items[i]``)."""
        conversation = self.history.conversation
        return [conversation.messages_of(k) for k in self.history.units]

    def unit_of(self, item: ContextItem) -> tuple[BaseMessage, ...]:
        """The message(s) behind one of ``items`` (by identity)."""
        return tuple(self.messages_for([item]))

    def messages_for(self, selected: Sequence[ContextItem]) -> list[BaseMessage]:
        """The same message objects behind ``selected``, in conversation order; an item
        not of this mapping is refused."""
        history = self.history
        messages = self.messages
        return [messages[i] for i in history.messages_at(history.positions(list(selected)))]


def map_messages(
    messages: list[BaseMessage],
    count: UnitCounter,
    *,
    keep_system: bool,
    keep_last_human: bool,
    keep_last: int,
    kinds: Mapping[str, ContextKind],
    timestamp_key: str | None,
    notes: Mapping[int, Mapping[str, Any]] | None = None,
) -> MessageItems:
    """Read the messages and let the conversation layer group and check them; it builds
    one item per unit when they are needed (see the module docstring). ``notes``: more
    metadata for the unit whose first message is at that index."""
    record = read_messages(messages, count.message, count.plain)
    conversation = Conversation(record.roles, calls=record.calls, answers=record.answers)
    timestamps = None
    if timestamp_key is not None:
        carried = [_carried_timestamp(m, timestamp_key) for m in messages]
        if any(stamp is not None for stamp in carried):
            timestamps = carried
    types = record.types
    ids = [message.id for message in messages]  # as they are now: items may be built later

    firsts = conversation.unit_firsts
    groups = conversation.unit_members

    def metadata(k: int) -> dict[str, Any]:
        first = firsts[k]
        members = groups.get(k)
        if members is None or len(members) == 1:
            meta: dict[str, Any] = {"langchain.index": first, "langchain.type": types[first]}
            if ids[first] is not None:
                meta["langchain.id"] = ids[first]
        else:
            meta = {
                "langchain.index": first,
                "langchain.type": "tool_group",
                "langchain.indices": members,
                "langchain.ids": tuple(ids[i] for i in members),
            }
        if notes and first in notes:
            meta.update(notes[first])
        return meta

    history = HistoryItems.from_conversation(
        conversation,
        record.texts,
        record.tokens,
        unit_tokens=(
            None if record.tokens is not None else lambda unit: count([messages[i] for i in unit])
        ),
        timestamps=timestamps,
        kinds=kinds,
        metadata=metadata,
        keep_system=keep_system,
        keep_latest_user=keep_last_human,
        keep_last=keep_last,
    )
    return MessageItems(messages, history, record.tokens, record.reporting)


def messages_to_items(
    messages: MessagesInput,
    *,
    token_counter: MessageTokenCounter = "approximate",
    token_counter_input: CounterInput | str = "auto",
    image_tokens: ImageTokens = "max",
    keep_system: bool = True,
    keep_last_human: bool = True,
    keep_last: int = 0,
    kinds: Mapping[str, str] | None = None,
    timestamp_key: str | None = None,
) -> MessageItems:
    """Map messages to one context item per unit (see the module docstring for the rules).

    Each unit is counted once with ``token_counter`` (see :mod:`cupel_langchain._tokens`),
    images priced by ``image_tokens`` (:data:`cupel.counting.ImageTokens`).
    """
    for name, flag in (("keep_system", keep_system), ("keep_last_human", keep_last_human)):
        if not isinstance(flag, bool):
            raise refused(name, "must be a bool", flag)
    return map_messages(
        as_messages(messages),
        resolve_message_counter(token_counter, token_counter_input, image_tokens),
        keep_system=keep_system,
        keep_last_human=keep_last_human,
        keep_last=check_keep_last(keep_last),
        kinds=check_kinds(kinds),
        timestamp_key=timestamp_key,
    )


def tool_call_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Why a chat-model provider would reject these messages' tool calls (empty: valid).

    The rule providers enforce: the ``ToolMessage`` s right after an ``AIMessage`` answer
    exactly its calls (``tool_calls`` and ``invalid_tool_calls``), each once, before any
    other message; no ``ToolMessage`` stands anywhere else. (The same rule the selectors
    apply, from :class:`cupel.conversation.Conversation`.)

    >>> from langchain_core.messages import AIMessage, ToolMessage
    >>> call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    >>> tool_call_problems([call, ToolMessage("ok", tool_call_id="c1")])
    []
    >>> tool_call_problems([ToolMessage("ok", tool_call_id="c1")])
    ["message 0: tool result for 'c1' answers no call made just before it (unknown_result)"]
    >>> tool_call_problems([call])
    ["message 0: tool call(s) ['c1'] are unanswered (unanswered_calls)"]
    """
    listed = as_messages(messages)
    record = read_messages(listed, None)
    return Conversation(record.roles, calls=record.calls, answers=record.answers).problems()
