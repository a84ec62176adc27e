"""Many :class:`~cupel.ContextItem` s at once, from values the caller has already checked.

``ContextItem(...)`` validates every field (a few microseconds an item). Code that builds
one item per message or document from values it produced itself — non-empty text,
counted ``int`` tokens, interned kinds, UTC timestamps — can skip that: it fills in a
*row* (a copy of :func:`item_row`'s dict) per item and hands all rows to
:func:`trusted_items`, which restores each item the way ``pickle.loads`` does, through
the model's own ``__setstate__``. Metadata is frozen on the way in (a read-only
mapping), exactly as validation freezes it.

A self-check at import builds a few items both ways and compares them field by field;
if a pydantic release ever restores models differently, :func:`trusted_items` validates
every row instead (slower, same result).

>>> from cupel import ContextItem, ContextKind
>>> row = item_row("How long is the Nile?", 10, kind=ContextKind.MESSAGE)
>>> [item] = trusted_items([row])
>>> item == ContextItem(content="How long is the Nile?", tokens=10)
True
>>> item.metadata["x"] = 1  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: FrozenDict is read-only ...
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from itertools import repeat
from typing import Any

from cupel._model import ContextItem, ContextKind, ContextSource, FrozenDict, freeze_metadata

__all__ = ["ITEM_FIELDS", "item_row", "trusted_items"]

ITEM_FIELDS: tuple[str, ...] = tuple(ContextItem.model_fields)
"""The fields of :class:`~cupel.ContextItem`, in declaration order (a row's keys)."""

_DEFAULTS: dict[str, Any] = {
    "content": "",
    "tokens": 0,
    "kind": ContextKind.MESSAGE,
    "source": ContextSource.CHAT,
    "priority": None,
    "tags": (),
    "metadata": freeze_metadata({}),
    "timestamp": None,
    "future_relevance_hint": None,
    "pinned": False,
    "original_tokens": None,
}
if tuple(_DEFAULTS) != ITEM_FIELDS:  # pragma: no cover - guards a field added to the model
    raise ImportError("cupel._batch: the row layout does not match ContextItem's fields")


class _Row:
    """A plain object whose ``__dict__`` is a row: CPython shares one key table between
    such dicts and their copies, so a row costs only its values."""


def _row_template() -> dict[str, Any]:
    holder = _Row()
    holder.__dict__.update(_DEFAULTS)
    return holder.__dict__


_TEMPLATE = _row_template()


def item_row(
    content: str,
    tokens: int,
    *,
    kind: ContextKind = ContextKind.MESSAGE,
    source: ContextSource = ContextSource.CHAT,
    priority: int | None = None,
    tags: tuple[str, ...] = (),
    metadata: Mapping[str, Any] | None = None,
    timestamp: datetime | None = None,
    future_relevance_hint: float | None = None,
    pinned: bool = False,
    original_tokens: int | None = None,
) -> dict[str, Any]:
    """A complete row for :func:`trusted_items`. The values must already be what
    validation would produce: non-empty ``content``, ``int`` counts, :class:`ContextKind`
    / :class:`ContextSource` values, an aware UTC ``timestamp``, a ``tuple`` of tags.

    Building many rows, copy one (``row.copy()``) and set the fields that differ: the
    copies share the template's key table."""
    row = _TEMPLATE.copy()
    row["content"] = content
    row["tokens"] = tokens
    row["kind"] = kind
    row["source"] = source
    row["priority"] = priority
    row["tags"] = tags
    if metadata:
        row["metadata"] = metadata
    row["timestamp"] = timestamp
    row["future_relevance_hint"] = future_relevance_hint
    row["pinned"] = pinned
    row["original_tokens"] = original_tokens
    return row


_FIELDS_SET = frozenset(ITEM_FIELDS)
_new = object.__new__
_restore = ContextItem.__setstate__


def _restored(rows: Sequence[dict[str, Any]]) -> list[ContextItem]:
    fields_set = set(_FIELDS_SET)  # pydantic copies it before any change (frozen model)
    for row in rows:
        metadata = row["metadata"]
        if type(metadata) is not FrozenDict:
            row["metadata"] = freeze_metadata(metadata)
    items: list[ContextItem] = list(map(_new, repeat(ContextItem, len(rows))))
    states = [
        {
            "__dict__": row,
            "__pydantic_fields_set__": fields_set,
            "__pydantic_extra__": None,
            "__pydantic_private__": None,
        }
        for row in rows
    ]
    deque(map(_restore, items, states), maxlen=0)
    return items


def _validated(rows: Sequence[dict[str, Any]]) -> list[ContextItem]:
    return [ContextItem(**row) for row in rows]


def _restoring_agrees() -> bool:
    """Whether restored items equal validated ones in every respect pydantic exposes."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    probes = [
        item_row("probe", 3),
        item_row(
            "tool",
            7,
            kind=ContextKind.TOOL_OUTPUT,
            source=ContextSource.TOOL,
            priority=2,
            tags=("a",),
            metadata={"k": 1, "nested": {"x": [1, 2]}},
            timestamp=when,
            future_relevance_hint=0.5,
            pinned=True,
            original_tokens=9,
        ),
    ]
    try:
        fast = _restored([dict(row) for row in probes])
        slow = _validated([dict(row) for row in probes])
        return all(
            a == b
            and a.__dict__ == b.__dict__
            and list(a.__dict__) == list(b.__dict__)
            and type(a.metadata) is type(b.metadata)
            and a.model_dump() == b.model_dump()
            and a.to_dict() == b.to_dict()
            for a, b in zip(fast, slow, strict=True)
        )
    except Exception:  # pragma: no cover - only on an incompatible pydantic
        return False


_TRUSTED = _restoring_agrees()


def trusted_items(rows: Sequence[dict[str, Any]]) -> list[ContextItem]:
    """One item per row (see :func:`item_row`), without validating the values again.

    Each row dict becomes the item's field dict (it is not copied: do not reuse a row
    after passing it here); its ``metadata`` is frozen (made read-only) unless it
    already is. Falls back to the validating constructor when the
    import-time self-check found that pydantic restores models differently."""
    return _restored(rows) if _TRUSTED else _validated(rows)
