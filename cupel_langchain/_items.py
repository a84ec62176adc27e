"""Building :class:`~cupel.ContextItem` s from values the adapter has already checked.

``ContextItem(...)`` validates every field (about 2-4 µs an item); the adapters build one
item per message or document from values they produce themselves (non-empty text,
counted ``int`` tokens, interned kinds, UTC timestamps), so :func:`new_item` assembles
the frozen model directly, the way pydantic's ``model_construct`` does (a copy of a
template ``__dict__`` plus the model's four storage slots), at about a fifth of the
cost. A self-check at import compares it with a validated item; if pydantic's
internals ever differ, :func:`new_item` falls back to the validating constructor. A
property test checks both paths agree on random values.

>>> from cupel import ContextItem
>>> fast = new_item("hi", 2, ContextKind.MESSAGE, ContextSource.CHAT)
>>> fast == ContextItem(content="hi", tokens=2)
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from cupel import ContextItem, ContextKind, ContextSource

__all__ = ["coerce_timestamp", "gc_paused", "new_item", "synthetic_timestamps"]

_new = object.__new__


def _slot_setter(name: str) -> Any:
    """The ``__set__`` of the descriptor that stores ``name`` on a pydantic model (the
    ``__dict__`` and the three ``__pydantic_*__`` slots), found on the class hierarchy."""
    for cls in ContextItem.__mro__:
        descriptor = cls.__dict__.get(name)
        if descriptor is not None and hasattr(descriptor, "__set__"):
            return descriptor.__set__
    return lambda obj, value: object.__setattr__(obj, name, value)


_set_dict = _slot_setter("__dict__")
_set_fields_set = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")

# Shared by every fast item: pydantic never changes a frozen model's fields set in place
# (model_copy copies it first), and sharing saves one allocation per item.
_FIELDS_SET = {"content", "tokens", "kind", "source", "metadata", "timestamp", "pinned"}
_FIELDS_SET_HINT = _FIELDS_SET | {"future_relevance_hint"}
_TEMPLATE: dict[str, Any] = {
    "content": "",
    "tokens": 0,
    "kind": ContextKind.MESSAGE,
    "source": ContextSource.CHAT,
    "priority": None,
    "tags": (),
    "metadata": None,
    "timestamp": None,
    "future_relevance_hint": None,
    "pinned": False,
    "original_tokens": None,
}


def _fast_item(
    content: str,
    tokens: int,
    kind: ContextKind,
    source: ContextSource,
    timestamp: datetime | None = None,
    metadata: dict[str, Any] | None = None,
    pinned: bool = False,
    hint: float | None = None,
) -> ContextItem:
    item = _new(ContextItem)
    fields = _TEMPLATE.copy()
    fields["content"] = content
    fields["tokens"] = tokens
    fields["kind"] = kind
    fields["source"] = source
    fields["metadata"] = {} if metadata is None else metadata
    fields["timestamp"] = timestamp
    if pinned:
        fields["pinned"] = True
    _set_dict(item, fields)
    if hint is None:
        _set_fields_set(item, _FIELDS_SET)
    else:
        fields["future_relevance_hint"] = hint
        _set_fields_set(item, _FIELDS_SET_HINT)
    _set_extra(item, None)
    _set_private(item, None)
    return item


def _validated_item(
    content: str,
    tokens: int,
    kind: ContextKind,
    source: ContextSource,
    timestamp: datetime | None = None,
    metadata: dict[str, Any] | None = None,
    pinned: bool = False,
    hint: float | None = None,
) -> ContextItem:
    fields: dict[str, Any] = {
        "content": content,
        "tokens": tokens,
        "kind": kind,
        "source": source,
        "metadata": {} if metadata is None else metadata,
        "timestamp": timestamp,
        "pinned": pinned,
    }
    if hint is not None:
        fields["future_relevance_hint"] = hint
    return ContextItem(**fields)


def _fast_path_agrees() -> bool:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    args = ("probe", 3, ContextKind.TOOL_OUTPUT, ContextSource.RAG)
    kwargs: dict[str, Any] = {"timestamp": when, "metadata": {"k": 1}, "pinned": True, "hint": 0.5}
    try:
        fast = _fast_item(*args, **kwargs)
        slow = _validated_item(*args, **kwargs)
        return (
            fast.__dict__ == slow.__dict__
            and list(fast.__dict__) == list(slow.__dict__)
            and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
            and fast.__pydantic_extra__ == slow.__pydantic_extra__
            and fast.__pydantic_private__ == slow.__pydantic_private__
            and fast == slow
            and fast.model_dump() == slow.model_dump()
        )
    except Exception:  # pragma: no cover - only on an incompatible pydantic
        return False


new_item = _fast_item if _fast_path_agrees() else _validated_item
"""Build an item from checked values (fast path, or the validating constructor)."""


_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
_STEP = timedelta(microseconds=1)
_synthetic: list[datetime] = []


def synthetic_timestamps(count: int) -> list[datetime]:
    """``count`` increasing UTC timestamps one microsecond apart from 2000-01-01: the
    order of a conversation, for the recency scorer and the chronological placer.

    They are cached and shared between calls (datetimes are immutable).

    >>> first, second = synthetic_timestamps(2)
    >>> second - first
    datetime.timedelta(microseconds=1)
    """
    have = len(_synthetic)
    if have < count:
        start = _EPOCH + _STEP * have
        _synthetic.extend([start + _STEP * i for i in range(count - have)])
    return _synthetic[:count]


def coerce_timestamp(value: object) -> datetime | None:
    """A carried timestamp as an aware UTC datetime: a ``datetime`` (naive = UTC), an
    ISO-8601 string, or a number of seconds since the epoch; ``None`` when unusable.

    >>> coerce_timestamp("2025-03-01T12:00:00+01:00")
    datetime.datetime(2025, 3, 1, 11, 0, tzinfo=datetime.timezone.utc)
    >>> coerce_timestamp(0)
    datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    else:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector for the block (as Mercurial's ``nogc``).

    A selection allocates a few container objects per message (the item, its field dict,
    its metadata, the pipeline's scored pairs); none form reference cycles, and all but
    the result are freed by reference counting when the selection returns. Left running,
    the collector would count those allocations and repeatedly traverse the whole heap
    (the caller's messages included) looking for cycles that do not exist: about a
    quarter of a 10,000-message selection, and over half of one that builds a report.
    The collector is re-enabled on exit, unless it was already disabled on entry.

    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
