"""Building :class:`~cupel.ContextItem` s from values the adapter has already checked.

``ContextItem(...)`` validates every field (about 2-4 µs an item); the adapters build one
item per message or document from values they produce themselves (non-empty text,
counted ``int`` tokens, interned kinds, UTC timestamps), so they assemble each item's
field dict (:func:`item_fields`, or a copy of a :func:`fields_template`) and
:func:`new_items` installs those dicts into fresh items the way pydantic's
``model_construct`` does (the ``__dict__`` plus the model's three ``__pydantic_*__``
slots), in a few C-level passes over the whole batch. A self-check at import compares
the result with validated items; if pydantic's internals ever differ, :func:`new_items`
falls back to the validating constructor. Property tests check both paths agree on
random values.

>>> from cupel import ContextItem
>>> fast = new_item("hi", 2, ContextKind.MESSAGE, ContextSource.CHAT)
>>> fast == ContextItem(content="hi", tokens=2)
True
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from itertools import repeat
from typing import Any

from cupel import ContextItem, ContextKind, ContextSource

__all__ = [
    "coerce_timestamp",
    "fields_template",
    "gc_paused",
    "item_fields",
    "new_item",
    "new_items",
    "synthetic_timestamps",
]

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

# The fields validation marks as set for the adapters' items. Shared by every fast item:
# pydantic never changes a frozen model's fields set in place (model_copy copies it first).
_FIELDS_SET = {"content", "tokens", "kind", "source", "metadata", "timestamp", "pinned"}
_FIELDS_SET_HINT = _FIELDS_SET | {"future_relevance_hint"}

# Every field of ContextItem, in declaration order, with its default.
_LAYOUT: dict[str, Any] = {
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


class _Holder:
    """An empty class whose instances' ``__dict__`` s share one key table."""


def fields_template(kind: ContextKind, source: ContextSource) -> dict[str, Any]:
    """An item field dict with ``kind`` and ``source`` set, to copy and fill in
    (``content``, ``tokens``, ``metadata``, ``timestamp``, maybe ``pinned``).

    It is the ``__dict__`` of a plain object, so CPython stores it as a key-sharing dict,
    and so are its copies: they hold only the values (the key table is shared), which
    makes one item per message cheaper to build and to free. Any dict behaves the same.

    >>> template = fields_template(ContextKind.MESSAGE, ContextSource.CHAT)
    >>> list(template) == list(item_fields("x", 1, ContextKind.MESSAGE, ContextSource.CHAT))
    True
    """
    holder = _Holder()
    for name, value in {**_LAYOUT, "kind": kind, "source": source}.items():
        setattr(holder, name, value)
    return holder.__dict__


def item_fields(
    content: str,
    tokens: int,
    kind: ContextKind,
    source: ContextSource,
    timestamp: datetime | None = None,
    metadata: dict[str, Any] | None = None,
    pinned: bool = False,
    hint: float | None = None,
) -> dict[str, Any]:
    """The field dict of one item, for :func:`new_items` (values already checked:
    non-empty ``content``, an ``int`` ``tokens``, an aware UTC ``timestamp``); a
    key-sharing dict like :func:`fields_template` s."""
    fields = _SHARED_LAYOUT.copy()
    fields["content"] = content
    fields["tokens"] = tokens
    fields["kind"] = kind
    fields["source"] = source
    fields["metadata"] = {} if metadata is None else metadata
    fields["timestamp"] = timestamp
    fields["future_relevance_hint"] = hint
    fields["pinned"] = pinned
    return fields


_SHARED_LAYOUT = fields_template(ContextKind.MESSAGE, ContextSource.CHAT)


def _consume(iterator: Iterator[Any]) -> None:
    deque(iterator, maxlen=0)


def _fast_items(fields: Sequence[dict[str, Any]], hinted: bool = False) -> list[ContextItem]:
    count = len(fields)
    items: list[ContextItem] = list(map(_new, repeat(ContextItem, count)))
    _consume(map(_set_dict, items, fields))
    _consume(map(_set_fields_set, items, repeat(_FIELDS_SET_HINT if hinted else _FIELDS_SET)))
    _consume(map(_set_extra, items, repeat(None, count)))
    _consume(map(_set_private, items, repeat(None, count)))
    return items


def _validated_items(fields: Sequence[dict[str, Any]], hinted: bool = False) -> list[ContextItem]:
    names = _FIELDS_SET_HINT if hinted else _FIELDS_SET
    return [ContextItem(**{name: f[name] for name in _LAYOUT if name in names}) for f in fields]


def _fast_path_agrees() -> bool:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    probes = [
        item_fields("probe", 3, ContextKind.TOOL_OUTPUT, ContextSource.RAG, when, {"k": 1}, True),
        fields_template(ContextKind.MESSAGE, ContextSource.CHAT)
        | {"content": "x", "tokens": 1, "metadata": {}},
    ]
    try:
        for hinted in (False, True):
            if hinted:
                probes = [{**f, "future_relevance_hint": 0.5, "metadata": {}} for f in probes]
            for fast, slow in zip(
                _fast_items(probes, hinted), _validated_items(probes, hinted), strict=True
            ):
                if not (
                    fast.__dict__ == slow.__dict__
                    and list(fast.__dict__) == list(slow.__dict__)
                    and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
                    and fast.__pydantic_extra__ == slow.__pydantic_extra__
                    and fast.__pydantic_private__ == slow.__pydantic_private__
                    and fast == slow
                    and fast.model_dump() == slow.model_dump()
                ):
                    return False
        return True
    except Exception:  # pragma: no cover - only on an incompatible pydantic
        return False


new_items = _fast_items if _fast_path_agrees() else _validated_items
"""Items from field dicts (:func:`item_fields` or a filled-in :func:`fields_template`
copy), all with (``hinted=True``) or all without a ``future_relevance_hint``: the fast
path, or the validating constructor."""


def new_item(
    content: str,
    tokens: int,
    kind: ContextKind,
    source: ContextSource,
    timestamp: datetime | None = None,
    metadata: dict[str, Any] | None = None,
    pinned: bool = False,
    hint: float | None = None,
) -> ContextItem:
    """One item from checked values (see :func:`new_items`)."""
    fields = item_fields(content, tokens, kind, source, timestamp, metadata, pinned, hint)
    return new_items([fields], hint is not None)[0]


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
