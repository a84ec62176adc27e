"""Cache-stable windows in the LangChain adapter: the optional cache breakpoint and the
deprecation of the options that held state between calls.

With ``cache_stable`` on, the window's cut is replayed from the history itself
(:func:`cupel.conversation.stable_cut`): the window grows by appending while it fits and,
once it overflows, is cut back by whole units to the low-water mark, then stays put — so
consecutive requests share their prefix and the provider's prompt cache keeps hitting. The
components keep nothing between calls: any process, any restart and any object computes the
same window for the same history.

>>> from langchain_core.messages import HumanMessage
>>> marked = mark_cache_breakpoint(HumanMessage("Hello"))
>>> marked.content
[{'type': 'text', 'text': 'Hello', 'cache_control': {'type': 'ephemeral'}}]
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from cupel import ConfigurationError

__all__ = [
    "CACHE_CONTROL",
    "check_flag",
    "check_max_conversations",
    "mark_cache_breakpoint",
    "warn_stateless",
]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
"""The marker :func:`mark_cache_breakpoint` puts on a content block (Anthropic's
``cache_control``, as ``langchain-anthropic`` passes content blocks through)."""

_REPLAYED = (
    "cache-stable windows are replayed from the history itself and keep no state between calls"
)


def warn_stateless(what: str, stacklevel: int = 3) -> None:
    """A :class:`DeprecationWarning` that ``what`` (an option or method that held state
    between calls) does nothing now and goes before 1.0.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_stateless("select_messages(previous=...) is ignored")
    >>> print(caught[0].message)
    select_messages(previous=...) is ignored: cache-stable windows are replayed from the \
history itself and keep no state between calls; it will be removed before 1.0
    """
    warnings.warn(
        f"{what}: {_REPLAYED}; it will be removed before 1.0",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def check_max_conversations(owner: str, value: object) -> None:
    """The deprecated ``max_conversations`` option (ignored; the caller warns): ``None``
    (not given) or an int; anything else is a :class:`~cupel.ConfigurationError`."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigurationError(
            f"{owner}: max_conversations must be an int (and is ignored: {_REPLAYED}), "
            f"got {value!r}",
            field="max_conversations",
            value=value,
        )


def check_flag(owner: str, name: str, value: object) -> bool:
    """``value`` if it is a bool, else a :class:`~cupel.ConfigurationError`."""
    if not isinstance(value, bool):
        raise ConfigurationError(
            f"{owner}: {name} must be a bool, got {value!r}", field=name, value=value
        )
    return value


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
