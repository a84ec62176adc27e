"""Read-only containers (private): what makes ``ContextItem.metadata`` and
``ContextBudget.reserved_slots`` immutable all the way down.

:func:`freeze_metadata` turns plain data into :class:`FrozenDict` / :class:`FrozenList`
values (deep-copying anything else), :func:`thaw` turns them back into plain ``dict`` /
``list`` values for the wire form.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence, Set
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar
from uuid import UUID

from cupel._errors import ItemError
from cupel._text import is_unicode_text

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["EMPTY", "MAX_METADATA_DEPTH", "FrozenDict", "FrozenList", "freeze_metadata", "thaw"]

_KT = TypeVar("_KT")
_VT = TypeVar("_VT")


MAX_METADATA_DEPTH = 100
"""How deeply containers may nest inside ``ContextItem.metadata`` (the metadata mapping
itself is level 1); deeper values (or a container holding itself) are refused with an
:class:`~cupel.ItemError` naming the path."""

_ATOMIC: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        Decimal,
        Fraction,
        datetime,
        date,
        time,
        timedelta,
        timezone,
        UUID,
        range,
    }
)
"""Immutable value types kept as they are (exact types; subclasses are checked below)."""


def _path_text(path: list[str]) -> str:
    """``metadata['a'][0]``; a long path keeps its first and last steps."""
    if len(path) > 8:
        path = [*path[:4], f"...({len(path) - 6} more)...", *path[-2:]]
    return "".join(path)


def _refuse(path: list[str], rule: str, value: Any) -> NoReturn:
    where = _path_text(path)
    raise ItemError(f"{where}: {rule}", field=where.split(".", 1)[-1], value=value)


def _freeze(value: Any, path: list[str], depth: int) -> Any:
    """``value`` with every container replaced by a read-only one, as
    :func:`freeze_metadata` describes (``bytearray``/``memoryview`` become ``bytes``)."""
    kind = type(value)
    if kind in _ATOMIC:
        if kind is str and not is_unicode_text(value):
            _refuse(path, "text must be valid Unicode (it holds a lone surrogate)", value)
        return value
    if depth > MAX_METADATA_DEPTH:
        _refuse(
            path,
            f"nested deeper than {MAX_METADATA_DEPTH} levels (the limit for metadata; "
            f"a container that holds itself also ends here)",
            value,
        )
    if isinstance(value, Mapping):
        frozen_map: FrozenDict[Any, Any] = FrozenDict.__new__(FrozenDict)
        for key, inner in value.items():
            if isinstance(key, str) and not is_unicode_text(key):
                _refuse(path, f"key {key!r} must be valid Unicode (it holds a lone surrogate)", key)
            step = f"[{key!r}]"
            dict.__setitem__(frozen_map, key, _freeze(inner, [*path, step], depth + 1))
        return frozen_map
    if isinstance(value, tuple):
        items = [_freeze(inner, [*path, f"[{i}]"], depth + 1) for i, inner in enumerate(value)]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        make = getattr(kind, "_make", None)  # a NamedTuple keeps its type
        return make(items) if callable(make) else tuple(items)
    if isinstance(value, (str, bytes)):  # subclasses: immutable text and bytes
        if isinstance(value, str) and not is_unicode_text(value):
            _refuse(path, "text must be valid Unicode (it holds a lone surrogate)", value)
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (Sequence, Set)):
        elements = [_freeze(inner, [*path, f"[{i}]"], depth + 1) for i, inner in enumerate(value)]
        if isinstance(value, Set):
            return frozenset(elements)
        frozen_list: FrozenList[Any] = FrozenList.__new__(FrozenList)
        list.extend(frozen_list, elements)
        return frozen_list
    if isinstance(value, (int, float, complex, Enum, PurePath)):
        return value  # numbers (numpy scalars too), enum members and paths are immutable
    try:
        return copy.deepcopy(value)
    except Exception as exc:
        _refuse(
            path,
            f"a {kind.__name__} can be neither frozen nor copied ({type(exc).__name__}: {exc}); "
            f"metadata values must be plain data (text, numbers, lists, mappings, ...) or "
            f"copyable objects",
            value,
        )


def freeze_metadata(value: Mapping[str, Any], *, where: str = "metadata") -> FrozenDict[str, Any]:
    """``value`` as item metadata: a :class:`FrozenDict` that is read-only all the way down.

    Keys must be strings. Nested mappings become ``FrozenDict`` s, lists ``FrozenList`` s,
    sets ``frozenset`` s; tuples keep their type with frozen elements; immutable scalars
    are kept; other objects are deep-copied, so no mutable object is shared with the
    caller. Text must be valid Unicode and nesting is limited to
    :data:`MAX_METADATA_DEPTH` levels; violations raise :class:`~cupel.ItemError`
    naming the path (``where`` is its first step). A ``FrozenDict`` (read-only all the
    way down by construction) is returned as it is.

    >>> given = {"source": {"urls": ["a", "b"]}}
    >>> frozen = freeze_metadata(given)
    >>> type(frozen["source"]).__name__, type(frozen["source"]["urls"]).__name__
    ('FrozenDict', 'FrozenList')
    >>> frozen == given, frozen["source"]["urls"] is given["source"]["urls"]
    (True, False)
    >>> freeze_metadata({"k": [[1]]}, where="ContextItem.metadata")["k"][0].append(2)
    Traceback (most recent call last):
    ...
    TypeError: FrozenList is read-only (cupel items and budgets are immutable); ...
    """
    if type(value) is dict:
        if _flat(value):  # the common case, checked in one pass
            if not value:
                return EMPTY
            flat: FrozenDict[str, Any] = FrozenDict.__new__(FrozenDict)
            dict.update(flat, value)
            return flat
    elif type(value) is FrozenDict:
        return value
    elif not isinstance(value, Mapping):
        _refuse(
            [where],
            f"must be a mapping of string keys to values, got {type(value).__name__} {value!r}",
            value,
        )
    if not value:
        return EMPTY
    for key in value:
        if not isinstance(key, str):
            _refuse([where], f"keys must be strings, got {type(key).__name__} {key!r}", key)
    frozen: FrozenDict[str, Any] = _freeze(value, [where], 1)
    return frozen


_TUPLE_ATOMS = frozenset({int, str})
"""What a flat mapping's tuple values may hold (indices and ids, as adapters write)."""


def _flat(value: dict[Any, Any]) -> bool:
    """Whether ``value`` has string keys (exactly ``str``) and only atomic values or
    tuples of ints and strings, all text valid Unicode: its freeze is a plain copy (what
    :func:`_freeze` would give, without walking it)."""
    atomic = _ATOMIC
    for key, inner in value.items():
        if type(key) is not str or (not key.isascii() and not is_unicode_text(key)):
            return False
        kind = type(inner)
        if kind is str:
            if not inner.isascii() and not is_unicode_text(inner):
                return False
        elif kind is tuple:
            for element in inner:
                if type(element) not in _TUPLE_ATOMS or (
                    type(element) is str and not is_unicode_text(element)
                ):
                    return False
        elif kind not in atomic:
            return False
    return True


class _ReadOnly:
    """What :class:`FrozenDict` and :class:`FrozenList` share: their mutators are
    :func:`_read_only`, and they copy as themselves and pickle as their plain container
    ``_plain`` (``dict`` or ``list``)."""

    __slots__ = ()
    _plain: ClassVar[type[Any]]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._plain(self),))

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return type(self)(copy.deepcopy(self._plain(self), memo))  # type: ignore[call-arg]


def _read_only(self: _ReadOnly, *args: Any, **kwargs: Any) -> NoReturn:
    """Every mutator of a frozen container."""
    raise TypeError(
        f"{type(self).__name__} is read-only (cupel items and budgets are immutable); "
        f"copy it with {self._plain.__name__}(...) to change it"
    )


class FrozenDict(_ReadOnly, dict[_KT, _VT]):
    """A ``dict`` that refuses every change: ``ContextItem.metadata`` and
    ``ContextBudget.reserved_slots`` are these, so a constructed item or budget stays
    immutable. Its values are frozen too (nested dicts become ``FrozenDict`` s, lists
    :class:`FrozenList` s, see :func:`freeze_metadata`). It reads, compares, copies,
    pickles and serializes as a plain ``dict``.

    >>> slots = FrozenDict({"Memory": 2})
    >>> slots["Memory"], slots == {"Memory": 2}, isinstance(slots, dict)
    (2, True, True)
    >>> slots["Memory"] = 3  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: FrozenDict is read-only (cupel items and budgets are immutable); ...
    >>> type(FrozenDict({"k": {"nested": [1]}})["k"]["nested"]).__name__
    'FrozenList'
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        dict.__init__(self, *args, **kwargs)
        for key, value in list(dict.items(self)):
            dict.__setitem__(self, key, _freeze(value, [f"{type(self).__name__}[{key!r}]"], 2))

    _plain = dict
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only


_T = TypeVar("_T")


class FrozenList(_ReadOnly, list[_T]):
    """A ``list`` that refuses every change: the lists inside ``ContextItem.metadata``.
    Its elements are frozen too. It reads, compares (``FrozenList([1]) == [1]``), copies,
    pickles and serializes as a plain ``list``.

    >>> values = FrozenList([1, {"k": "v"}])
    >>> values == [1, {"k": "v"}], type(values[1]).__name__
    (True, 'FrozenDict')
    >>> values.append(2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: FrozenList is read-only (cupel items and budgets are immutable); ...
    """

    __slots__ = ()

    def __init__(self, iterable: Iterable[_T] = ()) -> None:
        name = type(self).__name__
        list.extend(self, [_freeze(v, [f"{name}[{i}]"], 2) for i, v in enumerate(iterable)])

    _plain = list
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only


EMPTY: FrozenDict[Any, Any] = FrozenDict()


def thaw(value: Any) -> Any:
    """A frozen container as plain ``dict`` / ``list`` values, recursively (the wire form)."""
    if isinstance(value, FrozenDict):
        return {key: thaw(inner) for key, inner in value.items()}
    if isinstance(value, FrozenList):
        return [thaw(inner) for inner in value]
    return value
