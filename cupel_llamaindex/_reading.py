"""What is read of each LlamaIndex chat message, once per message (:func:`read_messages`):
its text parts and media (:func:`message_parts`), role (:func:`conversation_role`),
tool-call links (:func:`tool_call_ids`) and token count (:class:`Counting`: what a
provider bills for it, :mod:`cupel.counting`)."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock

from cupel import ConfigurationError
from cupel.conversation import ASSISTANT, SYSTEM, TOOL, USER
from cupel.counting import MESSAGE_TOKENS, Media, TextCounter, media_pricer, text_counter
from cupel_llamaindex._content import add_text, read_block

__all__ = [
    "ROLE_NAMES",
    "Counting",
    "MessageCounter",
    "MessageRead",
    "TextKey",
    "checked_count",
    "conversation_role",
    "counting_for",
    "message_parts",
    "message_text",
    "read_messages",
    "read_roles",
    "tool_call_ids",
]

MessageCounter = Callable[[ChatMessage], int]
"""A user's whole-message counter: ``ChatMessage`` → tokens."""

TextKey = str | tuple[str, ...]
"""A message's text parts as counted: the text itself when it has one part."""


def tool_call_ids(message: ChatMessage) -> tuple[list[str], bool]:
    """The ids of the tool calls ``message`` makes, and whether it makes any call at all.

    Calls are read from ``ToolCallBlock`` s and from ``additional_kwargs["tool_calls"]``
    (OpenAI-style dicts or objects with ``id`` / ``tool_id`` / ``tool_call_id``); a legacy
    ``additional_kwargs["function_call"]`` counts as a call without an id.

    >>> msg = ChatMessage(role="assistant", blocks=[
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})])
    >>> tool_call_ids(msg)
    (['c1'], True)
    >>> tool_call_ids(ChatMessage(role="assistant", content="plain"))
    ([], False)
    """
    calls = _call_list(message)
    return [call_id for call_id in calls if call_id is not None], bool(calls)


def _call_list(message: ChatMessage) -> list[str | None]:
    """Every call ``message`` makes, by id (``None``: a call without one), in order."""
    calls: list[str | None] = [
        block.tool_call_id or None for block in message.blocks if isinstance(block, ToolCallBlock)
    ]
    extra = message.additional_kwargs
    if extra:
        calls.extend(_call_id(call) for call in extra.get("tool_calls") or ())
        if extra.get("function_call"):
            calls.append(None)
    return calls


def _call_id(call: Any) -> str | None:
    value = _field(call, "id") or _field(call, "tool_call_id") or _field(call, "tool_id")
    return value if isinstance(value, str) and value else None


def _json(value: Any) -> str:
    """Tool-call arguments as sent: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump()
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except RecursionError:
        raise ConfigurationError(
            "tool call arguments nest too deep to encode as JSON (keep them under a few "
            "hundred levels)",
            field="tool_kwargs",
            value=None,
        ) from None


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _call_parts(parts: list[str], call: Any) -> None:
    """An ``additional_kwargs`` tool call's name, arguments and id (OpenAI-style: under
    ``function``; else at the top level); a call of another shape as its JSON text."""
    function = _field(call, "function")
    holder = function if function is not None else call
    name = _field(holder, "name")
    arguments = _field(holder, "arguments")
    if arguments is None:
        arguments = _field(holder, "args")
    if not isinstance(name, str) and arguments is None:
        parts.append(_json(call))
        return
    add_text(parts, name)
    if arguments is not None:
        add_text(parts, _json(arguments))
    add_text(parts, _call_id(call))


def message_parts(message: ChatMessage) -> tuple[list[str], list[Media]]:
    """The text parts and the media a provider bills for ``message`` (without the
    per-message overhead).

    Text parts: the blocks' text (:func:`~cupel_llamaindex._content.read_blocks`: text,
    thinking, documents, citations, ...); each tool call's name, JSON arguments and id
    (``ToolCallBlock`` s, ``additional_kwargs["tool_calls"]`` and a legacy
    ``function_call``), valid or not; a tool result's ``tool_call_id`` and a ``name``.
    Media: images, audio, video and documents, priced by rule, never as text.

    >>> message_parts(ChatMessage(role="assistant", blocks=[
    ...     TextBlock(text="Let me add."),
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})]))
    (['Let me add.', 'add', '{"a": 1}', 'c1'], [])
    """
    parts: list[str] = []
    media: list[Media] = []
    for block in message.blocks:
        if type(block) is TextBlock:
            if block.text:
                parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            add_text(parts, block.tool_name)
            add_text(parts, _json(block.tool_kwargs))
            add_text(parts, block.tool_call_id)
        else:
            read_block(block, parts, media)
    extra = message.additional_kwargs
    if extra:
        for call in extra.get("tool_calls") or ():
            _call_parts(parts, call)
        function_call = extra.get("function_call")
        if function_call:
            _call_parts(parts, function_call)
        add_text(parts, extra.get("tool_call_id"))
        add_text(parts, extra.get("name"))
    return parts, media


def message_text(message: ChatMessage) -> str:
    """The text a message costs, as one string: its text parts (:func:`message_parts`:
    text blocks, tool calls' names, arguments and ids, a result's call id) joined by
    spaces. Images and other media are not text: they are priced by rule.

    Tool calls are counted, unlike ``ChatMemoryBuffer`` (which counts ``str(content)``,
    i.e. ``"None"`` for a call-only message).

    >>> message_text(ChatMessage(role="assistant", blocks=[
    ...     TextBlock(text="Let me add."),
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})]))
    'Let me add. add {"a": 1} c1'
    """
    return " ".join(message_parts(message)[0])


ROLE_NAMES = {
    "system": SYSTEM,
    "developer": SYSTEM,
    "user": USER,
    "assistant": ASSISTANT,
    "model": ASSISTANT,
    "chatbot": ASSISTANT,
    "tool": TOOL,
    "function": TOOL,
}
"""The conversation-layer role of each LlamaIndex role name."""


def conversation_role(message: ChatMessage) -> str:
    """The conversation-layer role of a LlamaIndex message role.

    >>> conversation_role(ChatMessage(role="developer", content="Be brief."))
    'system'
    """
    return _role_of(message.role)


class Counting:
    """How a component counts messages: with ``message_token_counter`` (a user's
    ``ChatMessage -> int``) each whole message as it says; otherwise
    :data:`~cupel.counting.MESSAGE_TOKENS` + the text parts by ``tokenizer_fn`` (any
    form :func:`~cupel.counting.text_counter` accepts) + the media by ``image_tokens``.
    Both are checked here (:class:`~cupel.ConfigurationError`). A plain callable
    returning a list of tokens (LlamaIndex's convention) counts by the list's length.

    :meth:`counts` counts a whole history in one pass, keeping the counts of text parts in
    :attr:`known` by the text itself (a count is a function of the text, never of a message
    object); bounded. A ``message_token_counter`` is called for every message, every time.

    >>> counting = Counting(str.split)
    >>> counting.message(ChatMessage(role="user", content="How long is the Nile?"))
    8
    """

    __slots__ = ("_settings", "count_text", "known", "message_counter", "price_media")

    def __init__(
        self,
        tokenizer_fn: object,
        image_tokens: object = "max",
        message_token_counter: MessageCounter | None = None,
    ) -> None:
        self._settings = (tokenizer_fn, image_tokens, message_token_counter)
        self.price_media = media_pricer(image_tokens)  # type: ignore[arg-type]
        self.message_counter = message_token_counter
        self.count_text: TextCounter | None = (
            None if tokenizer_fn is None else text_counter(tokenizer_fn, "tokenizer_fn")
        )
        if message_token_counter is None and self.count_text is None:
            raise ConfigurationError(
                "a token counter is needed: tokenizer_fn or message_token_counter",
                field="tokenizer_fn",
                value=None,
            )
        self.known: dict[TextKey, int] = {}
        """The counts of the text parts counted so far, by text parts (bounded)."""

    def text_tokens(self, key: TextKey) -> int:
        """The tokens of a message's text parts (a text, or a tuple of them)."""
        count = self.count_text
        if count is None:  # only a message counter: never asked for text
            raise ConfigurationError("no tokenizer_fn", field="tokenizer_fn", value=None)
        if isinstance(key, str):
            return count(key) if key else 0
        return sum(count(part) for part in key if part)

    def counts(self, read: MessageRead) -> list[int]:
        """Each message's tokens: :data:`~cupel.counting.MESSAGE_TOKENS`, the text parts
        (by :attr:`known`, else counted once each) and the media; or the
        ``message_token_counter`` on every message."""
        count_message = self.message_counter
        if count_message is not None:
            return [
                checked_count(count_message(message), i) for i, message in enumerate(read.messages)
            ]
        keys = read.keys
        known = self.known
        found = list(map(known.get, keys))
        missing = found.count(None)
        if missing:
            count = self.text_tokens
            if len(known) + missing > 2 * len(keys) + 1000:
                known.clear()
            i = -1
            for _ in range(missing):  # not counted before (or earlier in this pass)
                i = found.index(None, i + 1)
                key = keys[i]
                value = known.get(key)
                if value is None:
                    value = known[key] = count(key)
                found[i] = value
        counts: list[int] = [MESSAGE_TOKENS + n for n in found]  # type: ignore[operator]
        for i, media in read.media.items():
            counts[i] += self.media_tokens(media)
        return counts

    def media_tokens(self, media: Sequence[Media]) -> int:
        """The tokens of a message's media, by rule."""
        return sum(map(self.price_media, media))

    def message(self, message: ChatMessage) -> int:
        """One message's tokens."""
        if self.message_counter is not None:
            return checked_count(self.message_counter(message), 0)
        parts, media = message_parts(message)
        return MESSAGE_TOKENS + self.text_tokens(tuple(parts)) + self.media_tokens(media)


def counting_for(
    previous: Counting | None,
    tokenizer_fn: object,
    image_tokens: object,
    message_token_counter: MessageCounter | None,
) -> Counting:
    """``previous`` if it was made of these very settings, else a new :class:`Counting`."""
    settings = (tokenizer_fn, image_tokens, message_token_counter)
    if previous is not None and all(map(operator.is_, previous._settings, settings)):
        return previous
    return Counting(tokenizer_fn, image_tokens, message_token_counter)


@dataclass(slots=True, eq=False)
class MessageRead:
    """What a mapping reads of each message: the ``messages`` themselves, their
    ``roles`` (as given), ``keys`` (the text parts as counted: the text itself for one
    part, else a tuple; :attr:`texts` joins them, :func:`message_text`),
    ``media`` (message index -> its media, for the messages that have some) and
    tool-call links (``calls``: message index -> the ids of the calls it makes, ``None``
    for a call without one; ``answers``: message index -> the call id a tool message
    answers)."""

    messages: tuple[ChatMessage, ...]
    roles: list[object]
    keys: list[TextKey]
    media: dict[int, tuple[Media, ...]]
    calls: dict[int, list[str | None]]
    answers: dict[int, str | None]

    @property
    def texts(self) -> list[str]:
        """Each message's text parts joined by spaces (:func:`message_text`)."""
        return [key if type(key) is str else " ".join(key) for key in self.keys]


def read_messages(messages: Sequence[ChatMessage]) -> MessageRead:
    """Read each message once: role, text parts, media and tool-call links (a
    :class:`~cupel.ConfigurationError` for anything but a ``ChatMessage``)."""
    messages = tuple(messages)
    roles: list[object] = []
    keys: list[TextKey] = []
    media: dict[int, tuple[Media, ...]] = {}
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    text_block = TextBlock
    for i, message in enumerate(messages):
        if not isinstance(message, ChatMessage):
            raise ConfigurationError(
                f"messages[{i}] must be a ChatMessage, got {type(message).__name__}",
                field=f"messages[{i}]",
                value=message,
            )
        blocks = message.blocks
        extra = message.additional_kwargs
        roles.append(message.role)
        if not extra and len(blocks) == 1 and type(blocks[0]) is text_block:
            keys.append(blocks[0].text)
            continue
        parts, found = message_parts(message)
        keys.append(parts[0] if len(parts) == 1 else tuple(parts))
        if found:
            media[i] = tuple(found)
        kind = conversation_role(message)
        if kind == ASSISTANT:
            made = _call_list(message)
            if made:
                calls[i] = sorted(made, key=lambda call_id: call_id is None)  # ids first
        elif kind == TOOL:
            answer = extra.get("tool_call_id")
            answers[i] = answer if isinstance(answer, str) else None
    return MessageRead(messages, roles, keys, media, calls, answers)


_MEMBER_ROLES = {role: ROLE_NAMES.get(role.value, role.value) for role in MessageRole}
"""The conversation-layer role of each ``MessageRole`` member."""


def read_roles(read: MessageRead) -> list[str]:
    """The conversation-layer role of each message read (:func:`conversation_role`)."""
    members = _MEMBER_ROLES
    return [members.get(role) or _role_of(role) for role in read.roles]  # type: ignore[call-overload]


def _role_of(role: object) -> str:
    raw = str.__str__(role)
    return ROLE_NAMES.get(raw, raw)


def checked_count(value: Any, index: int, counter: str = "message_token_counter") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        what = "messages" if counter == "message_token_counter" else "nodes"
        raise ConfigurationError(
            f"{counter} must return a non-negative int, got {value!r} for {what}[{index}]",
            field=counter,
            value=value,
        )
    return int(value)  # an exact int (not a subclass), as ContextItem stores it
