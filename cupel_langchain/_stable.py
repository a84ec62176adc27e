"""Cache-stable windows in the LangChain adapter: the conversation key, the previous
window of the plain functions, the report fields and the optional cache breakpoint.

With ``cache_stable`` on, a component keeps each conversation's previous window and
selects the next one from the previous window's cut on (see :mod:`cupel.conversation`):
the window grows by appending while it fits and, once it overflows, is cut back by whole
units to the low-water mark, then stays put — so consecutive requests share their prefix
and the provider's prompt cache keeps hitting.

>>> from langchain_core.messages import HumanMessage
>>> marked = mark_cache_breakpoint(HumanMessage("Hello"))
>>> marked.content
[{'type': 'text', 'text': 'Hello', 'cache_control': {'type': 'ephemeral'}}]
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from cupel import ConfigurationError
from cupel.conversation import HistoryWindow

__all__ = [
    "CACHE_CONTROL",
    "KEY_FIELDS",
    "check_flag",
    "conversation_key",
    "mark_cache_breakpoint",
    "previous_positions",
    "stable_fields",
]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
"""The marker :func:`mark_cache_breakpoint` puts on a content block (Anthropic's
``cache_control``, as ``langchain-anthropic`` passes content blocks through)."""

KEY_FIELDS = ("thread_id", "session_id")
"""The ``config["configurable"]`` fields naming a conversation, in the order they are
read: LangGraph's ``thread_id``, then ``RunnableWithMessageHistory``'s ``session_id``."""


def check_flag(owner: str, name: str, value: object) -> bool:
    """``value`` if it is a bool, else a :class:`~cupel.ConfigurationError`."""
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"{owner}: {name} must be a bool, got {value!r}", field=name, value=value
        )
    return value


def conversation_key(config: Mapping[str, Any] | None) -> Hashable:
    """The conversation a run belongs to: ``(field, value)`` for the first of
    :data:`KEY_FIELDS` set in ``config["configurable"]``, else ``None`` (the component's
    one unkeyed slot).

    >>> conversation_key({"configurable": {"thread_id": "t1"}})
    ('thread_id', 't1')
    >>> conversation_key({}) is None
    True
    """
    if not config:
        return None
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping):
        return None
    for field in KEY_FIELDS:
        value = configurable.get(field)
        if value is not None:
            try:
                hash(value)
            except TypeError:
                value = repr(value)
            return (field, value)
    return None


def previous_positions(
    previous: Sequence[BaseMessage], history: Sequence[BaseMessage]
) -> list[int] | None:
    """Where the messages of a previous window are in ``history``: each found in order,
    by identity or else by equality, after the one before it. ``None`` when one is
    missing (the history is not an extension of the one that window came from: the
    selection starts fresh).

    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> history = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    >>> previous_positions([history[1]], history), previous_positions([HumanMessage("z")], history)
    ([1], None)
    """
    by_id = {id(message): i for i, message in enumerate(history)}
    out: list[int] = []
    start = 0
    for message in previous:
        index = by_id.get(id(message))
        if index is None or index < start:
            index = next((i for i in range(start, len(history)) if history[i] == message), None)
            if index is None:
                return None
        out.append(index)
        start = index + 1
    return out


def stable_fields(window: HistoryWindow, cache_stable: bool) -> dict[str, Any]:
    """The report fields of a cache-stable selection: ``stable_prefix`` (how many leading
    messages equal the previous window's, in the order sent), ``cut_moved`` (the previous
    window is no longer a prefix: this call moved the cut) and ``cut`` (the history index
    where the window's stretch starts). Empty when the option is off."""
    if not cache_stable:
        return {}
    return {
        "stable_prefix": window.stable_prefix,
        "cut_moved": window.cut_moved,
        "cut": window.cut,
    }


def mark_cache_breakpoint(message: BaseMessage) -> BaseMessage:
    """A copy of ``message`` whose last content block carries
    ``cache_control={"type": "ephemeral"}`` — an explicit cache breakpoint for providers
    that need one (Anthropic through ``langchain-anthropic``). A string content becomes
    one text block; the message passed in is never modified.
    """
    content = message.content
    blocks: list[Any]
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}] if content else []
    else:
        blocks = list(content)
    for index in range(len(blocks) - 1, -1, -1):
        block = blocks[index]
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if isinstance(block, Mapping) and block.get("type") in ("text", "image", "document"):
            blocks[index] = {**block, "cache_control": dict(CACHE_CONTROL)}
            return message.model_copy(update={"content": blocks})
    # nothing to mark inside (e.g. a call-only AIMessage): the marker on the message
    extra = {**message.additional_kwargs, "cache_control": dict(CACHE_CONTROL)}
    return message.model_copy(update={"additional_kwargs": extra})
