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
from collections.abc import Mapping
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any, ClassVar, NamedTuple, NoReturn, TypeVar

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema

from cupel._errors import BudgetError, ConfigurationError, ItemError

__all__ = [
    "ContextBudget",
    "ContextItem",
    "ContextKind",
    "ContextSource",
    "FrozenDict",
    "KindMap",
    "OverflowStrategy",
    "ScoredItem",
    "ascii_fold",
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


class FrozenDict(dict[_KT, _VT]):
    """A ``dict`` that refuses every change: ``ContextItem.metadata`` and
    ``ContextBudget.reserved_slots`` are these, so a constructed item or budget stays
    immutable. It reads, compares, copies, pickles and serializes as a plain ``dict``.

    >>> slots = FrozenDict({"Memory": 2})
    >>> slots["Memory"], slots == {"Memory": 2}, isinstance(slots, dict)
    (2, True, True)
    >>> slots["Memory"] = 3  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: FrozenDict is read-only (cupel items and budgets are immutable); ...
    """

    __slots__ = ()

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


_EMPTY: FrozenDict[Any, Any] = FrozenDict()


def freeze_metadata(value: Mapping[str, Any]) -> FrozenDict[str, Any]:
    """Item metadata as validation stores it: a read-only :class:`FrozenDict` (the shared
    empty one when there is nothing)."""
    return FrozenDict(value) if value else _EMPTY


def _frozen(value: dict[Any, Any]) -> dict[Any, Any]:
    """The validated dict as a :class:`FrozenDict` (after pydantic has copied it)."""
    return freeze_metadata(value)


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
    cupel._errors.ItemError: ContextItem.content: String should have at least 1 character, got ''
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    content: str = Field(min_length=1)
    tokens: StrictInt
    kind: ContextKind = ContextKind.MESSAGE
    source: ContextSource = ContextSource.CHAT
    priority: StrictInt | None = None
    tags: tuple[str, ...] = ()
    metadata: Annotated[dict[str, Any], AfterValidator(_frozen)] = Field(
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
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)

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
            out["metadata"] = dict(self.metadata)
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
        """Parse one item from a JSON object string."""
        return cls.from_dict(json.loads(text))


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
    cupel._errors.BudgetError: ContextBudget.target_tokens: must be <= max_tokens (100), got 200
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
        return cls.from_dict(json.loads(text))
