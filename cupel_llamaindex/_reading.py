"""What is read of each LlamaIndex chat message: its text (:func:`message_text`), role
(:func:`conversation_role`), tool-call links (:func:`tool_call_ids`) and token count,
once per message (:func:`read_messages`, :func:`read_counts`, :class:`TokenCache`)."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence, Sized
from typing import Any, cast

from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)

from cupel import ConfigurationError
from cupel.conversation import ASSISTANT, SYSTEM, TOOL, USER

__all__ = [
    "ROLE_NAMES",
    "MessageRead",
    "RoleCounts",
    "TokenCache",
    "TokenizerFn",
    "checked_count",
    "conversation_role",
    "count_tokens",
    "message_text",
    "read_counts",
    "read_messages",
    "read_roles",
    "tool_call_ids",
]

TokenizerFn = Callable[[str], Sized]
"""LlamaIndex's tokenizer convention: text → a sized sequence of tokens."""


def count_tokens(tokenizer_fn: TokenizerFn, text: str) -> int:
    """``len(tokenizer_fn(text))`` with a clear error when the result has no length.

    >>> count_tokens(lambda s: s.split(), "three little words")
    3
    """
    tokens = tokenizer_fn(text)
    try:
        return len(tokens)
    except TypeError:
        raise ConfigurationError(
            f"tokenizer_fn must return a sized sequence of tokens (LlamaIndex's convention, "
            f"e.g. a list), got {type(tokens).__name__} {tokens!r}",
            field="tokenizer_fn",
            value=tokenizer_fn,
        ) from None


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
    ids: list[str] = []
    calls = False
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            calls = True
            if block.tool_call_id:
                ids.append(block.tool_call_id)
    extra = message.additional_kwargs
    if extra:
        raw_calls = extra.get("tool_calls")
        if raw_calls:
            calls = True
            for call in raw_calls:
                call_id = _call_id(call)
                if call_id:
                    ids.append(call_id)
        if extra.get("function_call"):
            calls = True
    return ids, calls


def _call_id(call: Any) -> str | None:
    if isinstance(call, dict):
        value = call.get("id") or call.get("tool_call_id") or call.get("tool_id")
    else:
        value = (
            getattr(call, "id", None)
            or getattr(call, "tool_call_id", None)
            or getattr(call, "tool_id", None)
        )
    return value if isinstance(value, str) and value else None


def _dump(value: Any) -> str:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump()
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def message_text(message: ChatMessage) -> str:
    """The text a message costs: its text blocks plus its tool calls (name and arguments).

    Tool calls are counted, unlike ``ChatMemoryBuffer`` (which counts ``str(content)``,
    i.e. ``"None"`` for a call-only message). Non-text blocks (images, audio) cost nothing
    here; pass ``message_token_counter`` to the memory to price them.

    >>> message_text(ChatMessage(role="assistant", blocks=[
    ...     TextBlock(text="Let me add."),
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})]))
    'Let me add. add {"a": 1}'
    """
    blocks = message.blocks
    extra = message.additional_kwargs
    if not extra and len(blocks) == 1 and type(blocks[0]) is TextBlock:
        return blocks[0].text  # the common case, without building a new string
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            parts.append(f"{block.tool_name} {_dump(block.tool_kwargs)}")
    if extra:
        raw_calls = extra.get("tool_calls")
        if raw_calls:
            parts.extend(_dump(call) for call in raw_calls)
        function_call = extra.get("function_call")
        if function_call:
            parts.append(_dump(function_call))
    return parts[0] if len(parts) == 1 else " ".join(parts)


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
    role = str.__str__(message.role)
    return ROLE_NAMES.get(role, role)


class TokenCache:
    """Counts of message texts already counted, so that a growing history is counted
    once per message, not once per call (LlamaIndex's ``ChatMemoryBuffer`` re-counts the
    window for every message it drops). Valid for one counter: :meth:`for_counter`
    empties it when the counter changes. Bounded: it is cleared when it holds more than
    twice the entries of the last history plus 1,000."""

    __slots__ = ("_counter", "_counts")

    def __init__(self) -> None:
        self._counter: object = None
        self._counts: dict[object, int] = {}

    def for_counter(self, counter: object, size: int) -> dict[object, int]:
        """The cache for ``counter`` (emptied if it was filled by another or grew past
        its bound for a history of ``size`` messages)."""
        if counter is not self._counter or len(self._counts) > 2 * size + 1000:
            self._counter = counter
            self._counts = {}
        return self._counts


class MessageRead:
    """What a mapping reads of each message: the ``messages`` themselves, their
    ``roles`` (as given), counted ``texts`` and tool-call links (``calls``: message
    index -> the ids of the calls it makes, ``None`` for a call without one;
    ``answers``: message index -> the call id a tool message answers). Two reads that
    are :meth:`same` map to the same units, items and counts (with the same counter)."""

    __slots__ = ("answers", "calls", "messages", "roles", "texts")

    def __init__(
        self,
        messages: tuple[ChatMessage, ...],
        roles: list[object],
        texts: list[str],
        calls: dict[int, list[str | None]],
        answers: dict[int, str | None],
    ) -> None:
        self.messages = messages
        self.roles = roles
        self.texts = texts
        self.calls = calls
        self.answers = answers

    def same(self, other: MessageRead) -> bool:
        """Whether ``other`` read the very same message objects (by identity) and found
        the same roles, texts and tool-call links."""
        mine = self.messages
        theirs = other.messages
        return (
            len(mine) == len(theirs)
            and (not mine or mine[-1] is theirs[-1])  # a chat turn's new message: at once
            and all(map(operator.is_, mine, theirs))
            and self.texts == other.texts
            and self.roles == other.roles
            and self.calls == other.calls
            and self.answers == other.answers
        )


def read_messages(messages: Sequence[ChatMessage]) -> MessageRead:
    """Read each message once: role, counted text and tool-call links (a
    :class:`~cupel.ConfigurationError` for anything but a ``ChatMessage``)."""
    messages = tuple(messages)
    roles: list[object] = []
    texts: list[str] = []
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
        role = message.role
        roles.append(role)
        if not extra and len(blocks) == 1 and type(blocks[0]) is text_block:
            texts.append(blocks[0].text)
            continue
        texts.append(message_text(message))
        kind = conversation_role(message)
        if kind == ASSISTANT:
            ids, makes = tool_call_ids(message)
            if makes:
                calls[i] = _call_list(message, ids)
        elif kind == TOOL:
            answer = extra.get("tool_call_id")
            answers[i] = answer if isinstance(answer, str) else None
    return MessageRead(messages, roles, texts, calls, answers)


_MEMBER_ROLES = {id(role): ROLE_NAMES.get(role.value, role.value) for role in MessageRole}
"""The conversation-layer role of each ``MessageRole`` member, by identity (members live
as long as the class: their ids are never reused)."""


def read_roles(read: MessageRead) -> list[str]:
    """The conversation-layer role of each message read (:func:`conversation_role`)."""
    members = _MEMBER_ROLES
    return [members.get(id(role)) or _role_of(role) for role in read.roles]


class RoleCounts:
    """The conversation-layer roles and token counts of the last read (:meth:`of`),
    reused for the leading messages a new read shares with it: the same roles and texts
    as read now (and, with a ``message_token_counter``, the very same message objects),
    when that is all of the shorter read or all but its last message — a chat turn's new,
    replaced or removed message. Only the messages after it are looked up (a message
    edited in place further back makes every message looked up, in the
    :class:`TokenCache`). Valid for one counter (the counter is part of what is
    compared)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[MessageRead, object, list[str], list[int]] | None = None

    def of(
        self,
        read: MessageRead,
        *,
        tokenizer_fn: TokenizerFn | None,
        message_token_counter: Callable[[ChatMessage], int] | None,
        cache: TokenCache,
    ) -> tuple[list[str], list[int]]:
        """:func:`read_roles` and :func:`read_counts` of ``read`` (equal lists, kept for the
        next call: not to be modified)."""
        counter: object = (
            message_token_counter if message_token_counter is not None else tokenizer_fn
        )
        last = self._last  # one tuple, replaced whole: safe to read from another thread
        texts = read.texts
        known = cache.for_counter(counter, len(texts))
        shared = 0
        if last is not None and last[1] is counter:
            shared = _shared_prefix(last[0], read, message_token_counter is not None)
        if not shared or last is None:
            kinds = [_MEMBER_ROLES.get(id(role)) or _role_of(role) for role in read.roles]
            counts = _counts(read.messages, texts, tokenizer_fn, message_token_counter, known)
        elif shared == len(texts) - 1 and message_token_counter is None and tokenizer_fn:
            # One new message (a chat turn): its role and count alone.
            role = read.roles[-1]
            text = texts[-1]
            count = known.get(text)
            if count is None:
                count = known[text] = count_tokens(tokenizer_fn, text)
            kinds = last[2][:shared]
            kinds.append(_MEMBER_ROLES.get(id(role)) or _role_of(role))
            counts = last[3][:shared]
            counts.append(count)
        else:
            kinds = last[2][:shared]
            kinds.extend(
                _MEMBER_ROLES.get(id(role)) or _role_of(role) for role in read.roles[shared:]
            )
            counts = last[3][:shared]
            counts.extend(
                _counts(
                    read.messages[shared:],
                    texts[shared:],
                    tokenizer_fn,
                    message_token_counter,
                    known,
                    shared,
                )
            )
        self._last = (read, counter, kinds, counts)
        return kinds, counts


def _shared_prefix(before: MessageRead, now: MessageRead, by_identity: bool) -> int:
    """How many leading messages ``now`` shares with ``before`` — the same roles and texts
    as read (and, ``by_identity``, the same message objects) — when that is all of the
    shorter read or all but its last message (a chat turn's new, replaced or removed
    message); else 0. Without ``by_identity`` (a tokenizer counts texts) an equal copy is
    shared."""
    mine = before.texts
    theirs = now.texts
    size = min(len(mine), len(theirs))
    if size and mine[size - 1] != theirs[size - 1]:
        size -= 1  # the last one differs: at most all but it
    if (
        size
        and mine[:size] == theirs[:size]
        and before.roles[:size] == now.roles[:size]
        and (not by_identity or all(map(operator.is_, before.messages[:size], now.messages[:size])))
    ):
        return size
    return 0


def _role_of(role: object) -> str:
    raw = str.__str__(role)
    return ROLE_NAMES.get(raw, raw)


def read_counts(
    read: MessageRead,
    *,
    tokenizer_fn: TokenizerFn | None,
    message_token_counter: Callable[[ChatMessage], int] | None,
    cache: TokenCache | None,
) -> list[int]:
    """Each message's tokens, as :func:`map_read` counts them (texts already counted are
    read from ``cache``)."""
    messages = read.messages
    counter: object = message_token_counter if message_token_counter is not None else tokenizer_fn
    known = cache.for_counter(counter, len(messages)) if cache is not None else {}
    return _counts(messages, read.texts, tokenizer_fn, message_token_counter, known)


def _call_list(message: ChatMessage, ids: list[str]) -> list[str | None]:
    """Every call the message makes, by id (``None`` for a call without one)."""
    total = sum(isinstance(block, ToolCallBlock) for block in message.blocks)
    extra = message.additional_kwargs
    raw_calls = extra.get("tool_calls") if extra else None
    if raw_calls:
        total += len(raw_calls)
    if extra and extra.get("function_call"):
        total += 1
    return [*ids, *([None] * (total - len(ids)))]


def _counts(
    messages: tuple[ChatMessage, ...],
    texts: list[str],
    tokenizer_fn: TokenizerFn | None,
    message_token_counter: Callable[[ChatMessage], int] | None,
    known: dict[object, int],
    start: int = 0,
) -> list[int]:
    """Each message's tokens; ``known`` (a :class:`TokenCache`'s dict) is read and filled:
    keyed by text for ``tokenizer_fn``, by the message object and its text for
    ``message_token_counter``. ``start``: the history index of ``messages[0]`` (named in
    errors)."""
    counts: list[int] = []
    if message_token_counter is not None or tokenizer_fn is None:
        count_message = _require_counter(message_token_counter)
        for i, message in enumerate(messages):
            key = (id(message), texts[i])
            value = known.get(key)
            if value is None:
                value = known[key] = checked_count(count_message(message), start + i)
            counts.append(value)
        return counts
    found = list(map(known.get, texts))
    if None in found:  # texts not counted yet: each distinct one counted once
        if found.count(None) == 1:  # one new text (a chat turn's message)
            index = found.index(None)
            text = texts[index]
            found[index] = known[text] = count_tokens(tokenizer_fn, text)
            return cast("list[int]", found)
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        known.update(zip(missing, _count_all(tokenizer_fn, missing), strict=True))
        return [known[text] for text in texts]
    return cast("list[int]", found)


def _require_counter(
    counter: Callable[[ChatMessage], int] | None,
) -> Callable[[ChatMessage], int]:
    if counter is None:  # messages_to_items refuses having neither counter
        raise ConfigurationError(
            "a token counter is needed", field="message_token_counter", value=None
        )
    return counter


def _count_all(tokenizer_fn: TokenizerFn, texts: list[str]) -> list[int]:
    """``len(tokenizer_fn(text))`` for each text, in one C-level pass; on a ``TypeError``
    :func:`count_tokens` explains a tokenizer that breaks the sized-result convention."""
    try:
        return list(map(len, map(tokenizer_fn, texts)))
    except TypeError:
        return [count_tokens(tokenizer_fn, text) for text in texts]


def checked_count(value: Any, index: int, counter: str = "message_token_counter") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        what = "messages" if counter == "message_token_counter" else "nodes"
        raise ConfigurationError(
            f"{counter} must return a non-negative int, got {value!r} for {what}[{index}]",
            field=counter,
            value=value,
        )
    return int(value)  # an exact int (not a subclass), as ContextItem stores it
