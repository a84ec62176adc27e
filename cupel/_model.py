"""The data model: items, budgets, kinds, sources, scored items and the overflow strategy.

>>> from cupel import ContextItem, ContextKind
>>> item = ContextItem(content="Use UTC everywhere.", tokens=5, kind="memory")
>>> item.kind == ContextKind.MEMORY          # ASCII case-insensitive
True
>>> str(item.kind)                            # spelling is preserved
'memory'
"""

from __future__ import annotations

import copy
import json
import math
import string
from collections.abc import Iterable, Mapping, Sequence, Set
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum
from fractions import Fraction
from pathlib import PurePath
from typing import Annotated, Any, ClassVar, NamedTuple, NoReturn, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PlainValidator,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema

from cupel._errors import BudgetError, ConfigurationError, ItemError

__all__ = [
    "MAX_METADATA_DEPTH",
    "ContextBudget",
    "ContextItem",
    "ContextKind",
    "ContextSource",
    "FrozenDict",
    "FrozenList",
    "KindMap",
    "OverflowStrategy",
    "ScoredItem",
    "ascii_fold",
    "freeze_metadata",
    "utc_timestamp",
]

_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_fold(text: str) -> str:
    """Lower-case ASCII letters only (the spec's case folding; not ``str.lower``).

    >>> ascii_fold("ToolOutput"), ascii_fold("ÄB")
    ('tooloutput', 'Äb')
    """
    return text.translate(_ASCII_FOLD)


_L = TypeVar("_L", bound="_Label")
_KT = TypeVar("_KT")
_VT = TypeVar("_VT")


def is_unicode_text(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (no lone surrogates such as ``"\\ud800"``,
    which would make JSON output, terminals and tokenizers fail halfway).

    >>> is_unicode_text("café"), is_unicode_text("bad \\udc00")
    (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    """``value`` with every container replaced by a read-only one: mappings by
    :class:`FrozenDict`, lists (and other sequences) by :class:`FrozenList`, tuples by
    tuples of frozen values, sets by ``frozenset``, ``bytearray``/``memoryview`` by
    ``bytes``. Immutable scalars are kept; any other object is deep-copied, so the
    caller's objects are never shared. Text must be valid Unicode."""
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
        if all(map(_same, items, value)):
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


def _same(a: object, b: object) -> bool:
    return a is b


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
    if type(value) is FrozenDict:
        return value
    if not isinstance(value, Mapping):
        raise ItemError(
            f"{where}: must be a mapping of string keys to values, "
            f"got {type(value).__name__} {value!r}",
            field=where.split(".", 1)[-1],
            value=value,
        )
    if not value:
        return _EMPTY
    for key in value:
        if not isinstance(key, str):
            raise ItemError(
                f"{where}: keys must be strings, got {type(key).__name__} {key!r}",
                field=where.split(".", 1)[-1],
                value=key,
            )
    frozen: FrozenDict[str, Any] = _freeze(value, [where], 1)
    return frozen


class FrozenDict(dict[_KT, _VT]):
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
        changed = []
        for key, value in dict.items(self):
            frozen = _freeze(value, [f"{type(self).__name__}[{key!r}]"], 2)
            if frozen is not value:
                changed.append((key, frozen))
        for key, frozen in changed:
            dict.__setitem__(self, key, frozen)

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            f"{type(self).__name__} is read-only (cupel items and budgets are immutable); "
            f"copy it with dict(...) to change it"
        )

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))

    def __copy__(self) -> FrozenDict[_KT, _VT]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[_KT, _VT]:
        return type(self)(copy.deepcopy(dict(self), memo))


_T = TypeVar("_T")


class FrozenList(list[_T]):
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

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            f"{type(self).__name__} is read-only (cupel items and budgets are immutable); "
            f"copy it with list(...) to change it"
        )

    __setitem__ = _read_only
    __delitem__ = _read_only
    __iadd__ = _read_only
    __imul__ = _read_only
    append = _read_only
    extend = _read_only
    insert = _read_only
    pop = _read_only
    remove = _read_only
    clear = _read_only
    sort = _read_only
    reverse = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))

    def __copy__(self) -> FrozenList[_T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[_T]:
        return type(self)(copy.deepcopy(list(self), memo))


_EMPTY: FrozenDict[Any, Any] = FrozenDict()


def _metadata(value: Any) -> FrozenDict[str, Any]:
    """The ``metadata`` field's validator (see :func:`freeze_metadata`)."""
    return freeze_metadata(value, where="ContextItem.metadata")


def utc_timestamp(value: datetime, *, where: str = "ContextItem.timestamp") -> datetime:
    """``value`` as an aware UTC datetime: naive values are taken as UTC, aware ones are
    converted. An instant that has no UTC date within ``datetime``'s range (year 1 to
    9999), such as ``9999-12-31T23:59:59-05:00``, raises :class:`~cupel.ItemError`
    (``where`` names the field).

    >>> utc_timestamp(datetime(2025, 1, 1, 12)).isoformat()
    '2025-01-01T12:00:00+00:00'
    >>> utc_timestamp(datetime.fromisoformat("9999-12-31T23:59:59-05:00"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ItemError: ContextItem.timestamp: 9999-12-31T23:59:59-05:00 is outside ...
    """
    if not isinstance(value, datetime):
        raise ItemError(
            f"{where}: must be a datetime, got {type(value).__name__} {value!r}",
            field=where.split(".", 1)[-1],
            value=value,
        )
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    if value.tzinfo is timezone.utc:
        return value
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ItemError(
            f"{where}: {value.isoformat()} is outside the range of UTC datetimes "
            f"(0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)",
            field=where.split(".", 1)[-1],
            value=value,
        ) from None


def _not_bool_or_text(value: Any) -> Any:
    """Numbers only: ``True`` or ``"0.5"`` is not a float field's value."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"must be a number, got {type(value).__name__} {value!r}")
    return value


class _Label(str):
    """An extensible string value compared with ASCII case folding.

    Instances are interned: equal spellings share one object, and ``key`` holds the
    folded form used for hashing and comparison.
    """

    key: str
    _cache: ClassVar[dict[str, Any]]
    _CACHE_LIMIT: ClassVar[int] = 4096

    def __new__(cls: type[_L], value: str) -> _L:
        if type(value) is cls:
            return value
        cached = cls._cache.get(value)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        if not isinstance(value, str):
            raise ItemError(
                f"{cls.__name__} must be a string, got {type(value).__name__} {value!r}",
                field=cls.__name__,
                value=value,
            )
        if not value.strip():
            raise ItemError(
                f"{cls.__name__} must be a non-empty, non-whitespace string, got {value!r}",
                field=cls.__name__,
                value=value,
            )
        if not is_unicode_text(value):
            raise ItemError(
                f"{cls.__name__} must be valid Unicode text (it holds a lone surrogate), "
                f"got {value!r}",
                field=cls.__name__,
                value=value,
            )
        obj = super().__new__(cls, value)
        obj.key = ascii_fold(value)
        if len(cls._cache) < cls._CACHE_LIMIT:
            cls._cache[str(value)] = obj
        return obj

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Label):
            return self.key == other.key
        if isinstance(other, str):
            return self.key == ascii_fold(other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._coerce,
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )

    @classmethod
    def _coerce(cls, value: Any) -> Any:
        try:
            return cls(value)
        except ItemError as exc:
            raise ValueError(str(exc)) from None


class ContextKind(_Label):
    """What an item is. Extensible; compared with ASCII case folding.

    Well-known values: ``MESSAGE`` (default), ``DOCUMENT``, ``TOOL_OUTPUT``, ``MEMORY``,
    ``SYSTEM_PROMPT``.

    >>> ContextKind("TOOLOUTPUT") == ContextKind.TOOL_OUTPUT == "tooloutput"
    True
    """

    _cache: ClassVar[dict[str, Any]] = {}
    MESSAGE: ClassVar[ContextKind]
    DOCUMENT: ClassVar[ContextKind]
    TOOL_OUTPUT: ClassVar[ContextKind]
    MEMORY: ClassVar[ContextKind]
    SYSTEM_PROMPT: ClassVar[ContextKind]


ContextKind.MESSAGE = ContextKind("Message")
ContextKind.DOCUMENT = ContextKind("Document")
ContextKind.TOOL_OUTPUT = ContextKind("ToolOutput")
ContextKind.MEMORY = ContextKind("Memory")
ContextKind.SYSTEM_PROMPT = ContextKind("SystemPrompt")


class ContextSource(_Label):
    """Where an item came from. Extensible; compared with ASCII case folding.

    Well-known values: ``CHAT`` (default), ``TOOL``, ``RAG``.
    """

    _cache: ClassVar[dict[str, Any]] = {}
    CHAT: ClassVar[ContextSource]
    TOOL: ClassVar[ContextSource]
    RAG: ClassVar[ContextSource]


ContextSource.CHAT = ContextSource("Chat")
ContextSource.TOOL = ContextSource("Tool")
ContextSource.RAG = ContextSource("Rag")


def _as_kind(key: object) -> object:
    """A plain string key as the ContextKind it names (unchanged if it names none)."""
    if isinstance(key, str) and not isinstance(key, _Label):
        try:
            return ContextKind(key)
        except ItemError:
            return key
    return key


class KindMap(FrozenDict[ContextKind, _VT]):
    """A read-only mapping keyed by :class:`ContextKind` that also accepts plain strings
    in lookups, matched like kinds (ASCII case-insensitively): ``ContextBudget.reserved_slots``.

    >>> slots = ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={"Memory": 2})
    >>> slots.reserved_slots["memory"], "MEMORY" in slots.reserved_slots
    (2, True)
    """

    __slots__ = ()

    def __missing__(self, key: object) -> _VT:
        kind = _as_kind(key)
        if kind is not key and dict.__contains__(self, kind):
            return super().__getitem__(kind)  # type: ignore[index]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, _as_kind(key))

    def get(self, key: Any, default: Any = None) -> Any:
        """``self[key]`` (plain strings matched as kinds), or ``default``."""
        return dict.get(self, _as_kind(key), default)  # type: ignore[misc]


def _kind_map(value: dict[ContextKind, int]) -> dict[ContextKind, int]:
    """The validated reserved slots as a :class:`KindMap`."""
    return KindMap(value)


class ChoiceEnum(str, Enum):
    """A closed set of names, parsed ASCII case-insensitively (base of the option enums)."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        if isinstance(value, str):
            folded = ascii_fold(value)
            for member in cls:
                if ascii_fold(member.value) == folded:
                    return member
        return None

    @classmethod
    def _parse_as(
        cls, value: object, *, field: str, error: type[ConfigurationError] = ConfigurationError
    ) -> Any:
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise error(
                f"{field} must be one of {allowed}, got {value!r}", field=field, value=value
            ) from None


class OverflowStrategy(ChoiceEnum):
    """What the Place stage does when pinned + sliced tokens exceed ``target_tokens``."""

    THROW = "Throw"
    """Raise :class:`~cupel.OverflowBudgetError` (the default)."""
    TRUNCATE = "Truncate"
    """Drop non-pinned items from the tail of the merged list until it fits."""
    PROCEED = "Proceed"
    """Keep everything and deliver an :class:`~cupel.OverflowEvent` to the caller."""

    @classmethod
    def parse(cls, value: str | OverflowStrategy) -> OverflowStrategy:
        """Parse a strategy name case-insensitively, with a clear error."""
        result: OverflowStrategy = cls._parse_as(value, field="overflow_strategy")
        return result


class ScoredItem(NamedTuple):
    """An item paired with its relevance score (``score`` is an IEEE 754 double)."""

    item: ContextItem
    score: float


def _validation_message(exc: ValidationError, model: str) -> tuple[str, str | None, Any]:
    """Turn a pydantic ValidationError into one readable line plus (field, value)."""
    parts = []
    first_field: str | None = None
    first_value: Any = None
    for i, err in enumerate(exc.errors(include_url=False)):
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        value = err.get("input")
        if i == 0:
            first_field, first_value = (loc or None), value
        where = f"{model}.{loc}" if loc else model
        if err.get("type") == "value_error" or "got" in msg:
            parts.append(f"{where}: {msg}")
        else:
            parts.append(f"{where}: {msg}, got {value!r}")
    return "; ".join(parts), first_field, first_value


def _raise_as(exc: ValidationError, model: str, error: type[ConfigurationError]) -> NoReturn:
    for err in exc.errors(include_url=False):
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, ConfigurationError):
            raise original from None
    message, field, value = _validation_message(exc, model)
    raise error(message, field=field, value=value) from None


StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
Number = Annotated[float, BeforeValidator(_not_bool_or_text)]


class ContextItem(BaseModel):
    """One immutable piece of context: a message, document, tool output, memory, ...

    Only ``content`` (non-empty) and ``tokens`` (caller-counted; negative items are
    excluded by the pipeline) are required. ``metadata`` is opaque to the pipeline
    (only the metadata scorers read it) and preserved untouched; like ``tags`` (a tuple)
    it is read-only (a :class:`FrozenDict`), so an item never changes once built. Naive
    timestamps are taken as UTC; aware ones are converted to UTC.

    JSON uses snake_case names; the spec's camelCase (``futureRelevanceHint``,
    ``originalTokens``) is accepted on input.

    >>> ContextItem(content="hi", tokens=1).kind
    ContextKind('Message')
    >>> ContextItem(content="", tokens=1)
    Traceback (most recent call last):
    ...
    cupel.ItemError: ContextItem.content: String should have at least 1 character, got ''
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    content: str = Field(min_length=1)
    tokens: StrictInt
    kind: ContextKind = ContextKind.MESSAGE
    source: ContextSource = ContextSource.CHAT
    priority: StrictInt | None = None
    tags: tuple[str, ...] = ()
    metadata: Annotated[dict[str, Any], PlainValidator(_metadata)] = Field(
        default_factory=lambda: _EMPTY
    )
    timestamp: datetime | None = None
    future_relevance_hint: Number | None = Field(
        default=None,
        validation_alias=AliasChoices("future_relevance_hint", "futureRelevanceHint"),
    )
    pinned: StrictBool = False
    original_tokens: StrictInt | None = Field(
        default=None, validation_alias=AliasChoices("original_tokens", "originalTokens")
    )

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            _raise_as(exc, "ContextItem", ItemError)

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else utc_timestamp(value)

    @field_validator("tags")
    @classmethod
    def _unicode_tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, tag in enumerate(value):
            if not is_unicode_text(tag):
                raise ItemError(
                    f"ContextItem.tags[{index}]: text must be valid Unicode (it holds a lone "
                    f"surrogate), got {tag!r}",
                    field=f"tags[{index}]",
                    value=tag,
                )
        return value

    def __hash__(self) -> int:
        return hash((self.content, self.tokens, self.kind, self.pinned, self.timestamp))

    # -- wire format -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON wire form: snake_case keys, unset optional fields omitted.

        >>> ContextItem(content="x", tokens=2, tags=("a",)).to_dict()
        {'content': 'x', 'tokens': 2, 'kind': 'Message', 'source': 'Chat', 'tags': ['a']}
        """
        out: dict[str, Any] = {
            "content": self.content,
            "tokens": self.tokens,
            "kind": str(self.kind),
            "source": str(self.source),
        }
        if self.priority is not None:
            out["priority"] = self.priority
        if self.tags:
            out["tags"] = list(self.tags)
        if self.metadata:
            out["metadata"] = _thaw(self.metadata)
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp.isoformat().replace("+00:00", "Z")
        if self.future_relevance_hint is not None:
            out["future_relevance_hint"] = self.future_relevance_hint
        if self.pinned:
            out["pinned"] = True
        if self.original_tokens is not None:
            out["original_tokens"] = self.original_tokens
        return out

    def to_json(self) -> str:
        """The wire form as a JSON string."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextItem:
        """Build an item from its wire form (snake_case or the spec's camelCase keys)."""
        if not isinstance(data, Mapping):
            raise ItemError(
                f"ContextItem: expected a JSON object, got {type(data).__name__}",
                field=None,
                value=data,
            )
        return cls(**dict(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> ContextItem:
        """Parse one item from a JSON object string (metadata may nest up to
        :data:`MAX_METADATA_DEPTH` levels)."""
        return cls.from_dict(_json_object(text, "ContextItem", ItemError))


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BudgetError(
            f"ContextBudget.{name}: must be an integer, got {value!r}", field=name, value=value
        )
    return value


class ContextBudget(BaseModel):
    """The token budget, validated at construction (the spec's seven rules).

    >>> ContextBudget(max_tokens=8000, target_tokens=6000).output_reserve
    0
    >>> ContextBudget(max_tokens=100, target_tokens=200)
    Traceback (most recent call last):
    ...
    cupel.BudgetError: ContextBudget.target_tokens: must be <= max_tokens (100), got 200
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    max_tokens: int = Field(validation_alias=AliasChoices("max_tokens", "maxTokens"))
    target_tokens: int = Field(validation_alias=AliasChoices("target_tokens", "targetTokens"))
    output_reserve: int = Field(
        default=0, validation_alias=AliasChoices("output_reserve", "outputReserve")
    )
    reserved_slots: Annotated[dict[ContextKind, int], AfterValidator(_kind_map)] = Field(
        default_factory=KindMap,
        validation_alias=AliasChoices("reserved_slots", "reservedSlots"),
    )
    estimation_safety_margin_percent: Number = Field(
        default=0.0,
        validation_alias=AliasChoices(
            "estimation_safety_margin_percent", "estimationSafetyMarginPercent"
        ),
    )

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            _raise_as(exc, "ContextBudget", BudgetError)

    @model_validator(mode="before")
    @classmethod
    def _check_raw(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for name in ("max_tokens", "target_tokens", "output_reserve"):
                camel = {"max_tokens": "maxTokens", "target_tokens": "targetTokens"}.get(
                    name, "outputReserve"
                )
                for key in (name, camel):
                    if key in data:
                        _check_int(name, data[key])
            slots = data.get("reserved_slots", data.get("reservedSlots"))
            if isinstance(slots, Mapping):
                seen: dict[str, str] = {}
                for kind, count in slots.items():
                    try:
                        ContextKind(kind)
                    except ItemError as exc:
                        raise BudgetError(
                            f"ContextBudget.reserved_slots: {exc}",
                            field="reserved_slots",
                            value=kind,
                        ) from None
                    folded = ascii_fold(str(kind))
                    if folded in seen:
                        raise BudgetError(
                            f"ContextBudget.reserved_slots: kinds {seen[folded]!r} and {kind!r} "
                            f"are the same kind (kinds compare case-insensitively)",
                            field="reserved_slots",
                            value=dict(slots),
                        )
                    seen[folded] = str(kind)
                    _check_int(f"reserved_slots[{kind!r}]", count)
        return data

    @model_validator(mode="after")
    def _check_rules(self) -> ContextBudget:
        def fail(field: str, rule: str, value: Any) -> NoReturn:
            raise BudgetError(
                f"ContextBudget.{field}: {rule}, got {value!r}", field=field, value=value
            )

        if self.max_tokens < 0:
            fail("max_tokens", "must be >= 0", self.max_tokens)
        if self.target_tokens < 0:
            fail("target_tokens", "must be >= 0", self.target_tokens)
        if self.target_tokens > self.max_tokens:
            fail("target_tokens", f"must be <= max_tokens ({self.max_tokens})", self.target_tokens)
        if self.output_reserve < 0:
            fail("output_reserve", "must be >= 0", self.output_reserve)
        if self.output_reserve > self.max_tokens:
            fail(
                "output_reserve", f"must be <= max_tokens ({self.max_tokens})", self.output_reserve
            )
        margin = self.estimation_safety_margin_percent
        if not (math.isfinite(margin) and 0.0 <= margin <= 100.0):
            fail("estimation_safety_margin_percent", "must be between 0.0 and 100.0", margin)
        for kind, count in self.reserved_slots.items():
            if count < 0:
                fail(f"reserved_slots[{str(kind)!r}]", "must be >= 0", count)
        return self

    def __hash__(self) -> int:
        return hash(
            (
                self.max_tokens,
                self.target_tokens,
                self.output_reserve,
                tuple(sorted((k.key, v) for k, v in self.reserved_slots.items())),
                self.estimation_safety_margin_percent,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON wire form (snake_case keys)."""
        out: dict[str, Any] = {"max_tokens": self.max_tokens, "target_tokens": self.target_tokens}
        if self.output_reserve:
            out["output_reserve"] = self.output_reserve
        if self.reserved_slots:
            out["reserved_slots"] = {str(k): v for k, v in self.reserved_slots.items()}
        if self.estimation_safety_margin_percent:
            out["estimation_safety_margin_percent"] = self.estimation_safety_margin_percent
        return out

    def to_json(self) -> str:
        """The wire form as a JSON string."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextBudget:
        """Build a budget from its wire form (snake_case or camelCase keys)."""
        if not isinstance(data, Mapping):
            raise BudgetError(
                f"ContextBudget: expected a JSON object, got {type(data).__name__}", value=data
            )
        return cls(**dict(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> ContextBudget:
        """Parse a budget from a JSON object string."""
        return cls.from_dict(_json_object(text, "ContextBudget", BudgetError))


def _json_object(text: str | bytes, model: str, error: type[ConfigurationError]) -> Any:
    """``json.loads(text)``, with a document nested too deeply for the parser refused as
    ``error`` instead of a ``RecursionError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise error(
            f"{model}: the JSON document is nested too deeply to parse (metadata may nest "
            f"at most {MAX_METADATA_DEPTH} levels)",
            value=None,
        ) from None


def _thaw(value: Any) -> Any:
    """A frozen container as plain ``dict`` / ``list`` values, recursively (the wire form)."""
    if isinstance(value, FrozenDict):
        return {key: _thaw(inner) for key, inner in value.items()}
    if isinstance(value, FrozenList):
        return [_thaw(inner) for inner in value]
    return value
