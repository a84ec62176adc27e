"""Chat items built without re-validating values the adapter produced itself.

``ContextItem(...)`` validates every field: about 3 µs an item, which for a 10,000-message
history is a third of a selection. :func:`messages_to_items` builds one item per unit
from values it has already guaranteed (a non-empty ``"[i] role: text"`` content, an
``int`` token count from ``len()`` or a checked counter, an interned kind and source, a
fresh ``{"role": ...}`` dict, an aware UTC timestamp, a ``bool``), so it hands complete
field dicts (:func:`chat_fields`) to :func:`new_items`, which installs each into a fresh
item the way pydantic's ``model_construct`` does (the ``__dict__`` and the model's three
``__pydantic_*__`` slots) without its per-field overhead.

This is a fast path with a plain twin: :func:`validated_items` builds the same items with
the validating constructor. At import a self-check compares both on probe values; if
pydantic's internals ever differ, :data:`new_items` *is* :func:`validated_items`.
``tests/llamaindex/test_li_fast_paths.py`` checks that both agree on random values and on
whole mappings.

>>> fields = chat_fields("[0] user: hi", 2, "user", 0)
>>> new_items([fields]) == validated_items([fields])
True
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from itertools import repeat
from typing import Any

from cupel import ContextItem, ContextKind, ContextSource

__all__ = [
    "CHAT_FIELDS_SET",
    "EPOCH",
    "SECOND",
    "chat_fields",
    "fast_items",
    "new_items",
    "synthetic_timestamps",
    "validated_items",
]

EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
"""Synthetic timestamps count seconds from here: message ``i`` is ``EPOCH + i s``."""
SECOND = timedelta(seconds=1)

CHAT_FIELDS_SET = frozenset(
    {"content", "tokens", "kind", "source", "metadata", "timestamp", "pinned"}
)
"""The fields a chat item is built from (what the validating constructor marks as set)."""

_MESSAGE = ContextKind.MESSAGE
_CHAT = ContextSource.CHAT
_FIELDS_SET = set(CHAT_FIELDS_SET)
_drain: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend


def chat_fields(
    content: str,
    tokens: int,
    role: str,
    position: int,
    *,
    kind: ContextKind = _MESSAGE,
    source: ContextSource = _CHAT,
    pinned: bool = False,
) -> dict[str, Any]:
    """The complete field dict of one chat item, in ``ContextItem``'s declaration order
    (:func:`messages_to_items` writes the same dict literal inline).

    ``content`` must be non-empty and ``tokens`` an ``int``; the timestamp is
    ``EPOCH + position`` seconds and ``metadata`` is ``{"role": role}``.
    """
    return {
        "content": content,
        "tokens": tokens,
        "kind": kind,
        "source": source,
        "priority": None,
        "tags": (),
        "metadata": {"role": role},
        "timestamp": EPOCH + SECOND * position,
        "future_relevance_hint": None,
        "pinned": pinned,
        "original_tokens": None,
    }


_stamps: list[datetime] = []


def synthetic_timestamps(count: int) -> list[datetime]:
    """At least ``count`` timestamps, ``EPOCH + i`` seconds at index ``i`` (a shared,
    growing memo: datetimes are immutable; growth rebinds the list, so a concurrent
    reader never sees a half-built one).

    >>> stamps = synthetic_timestamps(3)
    >>> stamps[2] - stamps[0] == 2 * SECOND
    True
    """
    global _stamps
    stamps = _stamps
    if len(stamps) < count:
        stamps = [EPOCH + SECOND * i for i in range(max(count, 2 * len(stamps)))]
        _stamps = stamps
    return stamps


def validated_items(fields: Sequence[dict[str, Any]]) -> list[ContextItem]:
    """The plain path: each item through ``ContextItem(...)``, passing the fields of
    :data:`CHAT_FIELDS_SET`."""
    return [
        ContextItem(
            content=f["content"],
            tokens=f["tokens"],
            kind=f["kind"],
            source=f["source"],
            metadata=f["metadata"],
            timestamp=f["timestamp"],
            pinned=f["pinned"],
        )
        for f in fields
    ]


def _slot_setter(name: str) -> Callable[[object, object], None]:
    """The ``__set__`` of the descriptor storing ``name`` on a pydantic model (the
    ``__dict__`` and the ``__pydantic_*__`` slots of ``BaseModel``)."""
    for cls in ContextItem.__mro__:
        descriptor = cls.__dict__.get(name)
        if descriptor is not None and hasattr(descriptor, "__set__"):
            setter: Callable[[object, object], None] = descriptor.__set__
            return setter
    raise AttributeError(name)  # pragma: no cover - caught by the self-check


def fast_items(fields: Sequence[dict[str, Any]]) -> list[ContextItem]:
    """The fast path: items holding the given field dicts as they are (no validation),
    set up in four C-level passes over the batch.

    The items share one fields-set: pydantic never changes a frozen model's fields-set
    in place (``model_copy`` copies it before updating).
    """
    count = len(fields)
    items: list[ContextItem] = list(map(object.__new__, repeat(ContextItem, count)))
    _drain(map(_SET_DICT, items, fields))
    _drain(map(_SET_FIELDS_SET, items, repeat(_FIELDS_SET, count)))
    _drain(map(_SET_EXTRA, items, repeat(None, count)))
    _drain(map(_SET_PRIVATE, items, repeat(None, count)))
    return items


def _agrees() -> bool:
    """Whether the fast path builds exactly what the validating constructor builds."""
    probes = [
        chat_fields("[0] system: be brief", 3, "system", 0, kind=ContextKind.SYSTEM_PROMPT),
        chat_fields("[1] user: hi", 1, "user", 1, pinned=True),
        chat_fields(
            "[2] assistant: call | [3] tool: ok",
            4,
            "assistant",
            2,
            kind=ContextKind.TOOL_OUTPUT,
            source=ContextSource.TOOL,
        ),
    ]
    try:
        for fast, slow in zip(fast_items(probes), validated_items(probes), strict=True):
            if not (
                fast == slow
                and list(fast.__dict__) == list(slow.__dict__)
                and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
                and fast.__pydantic_extra__ == slow.__pydantic_extra__
                and fast.__pydantic_private__ == slow.__pydantic_private__
                and fast.model_dump() == slow.model_dump()
                and fast.to_dict() == slow.to_dict()
                and hash(fast) == hash(slow)
            ):
                return False
        return True
    except Exception:  # pragma: no cover - only with incompatible pydantic internals
        return False


try:
    _SET_DICT = _slot_setter("__dict__")
    _SET_FIELDS_SET = _slot_setter("__pydantic_fields_set__")
    _SET_EXTRA = _slot_setter("__pydantic_extra__")
    _SET_PRIVATE = _slot_setter("__pydantic_private__")
    FAST_PATH = _agrees()
except AttributeError:  # pragma: no cover - only with incompatible pydantic internals
    FAST_PATH = False

new_items: Callable[[Sequence[dict[str, Any]]], list[ContextItem]] = (
    fast_items if FAST_PATH else validated_items
)
"""Items from complete chat field dicts: :func:`fast_items` when the import-time
self-check passed, else :func:`validated_items`."""
