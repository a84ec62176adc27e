"""Labels and choices (private): :class:`ContextKind` and :class:`ContextSource`
(extensible strings compared with ASCII case folding), :class:`KindMap`, and the closed
option enums (:class:`ChoiceEnum`, :class:`OverflowStrategy`)."""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from cupel._errors import ConfigurationError, ItemError
from cupel._frozen import FrozenDict
from cupel._text import ascii_fold, is_unicode_text

__all__ = ["ChoiceEnum", "ContextKind", "ContextSource", "KindMap", "OverflowStrategy"]

_L = TypeVar("_L", bound="_Label")
_VT = TypeVar("_VT")


def _refused(name: str, rule: str, value: object, *, typed: bool = False) -> ItemError:
    """``<name> <rule>, got <value!r>`` (``typed``: ``got <type> <value!r>``)."""
    shown = f"{type(value).__name__} {value!r}" if typed else repr(value)
    return ItemError(f"{name} {rule}, got {shown}", field=name, value=value)


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
            raise _refused(cls.__name__, "must be a string", value, typed=True)
        if not value.strip():
            raise _refused(cls.__name__, "must be a non-empty, non-whitespace string", value)
        if not is_unicode_text(value):
            rule = "must be valid Unicode text (it holds a lone surrogate)"
            raise _refused(cls.__name__, rule, value)
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
        if type(value) is cls:  # the common case: a validator call and nothing else
            return value
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

    >>> from cupel import ContextBudget
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


class ChoiceEnum(str, Enum):
    """A closed set of names, parsed ASCII case-insensitively (base of the option enums)."""

    @classmethod
    def _missing_(cls, value: object) -> Any:
        return cls._folded_member(ascii_fold(value)) if isinstance(value, str) else None

    @classmethod
    def _folded_member(cls, folded: str) -> Any:
        return next((member for member in cls if ascii_fold(member.value) == folded), None)

    @classmethod
    def lookup(cls, value: object) -> Any:
        """The member ``value`` names (a member, or its name in any case, surrounding
        spaces ignored), or ``None``.

        >>> OverflowStrategy.lookup(" truncate "), OverflowStrategy.lookup("explode")
        (<OverflowStrategy.TRUNCATE: 'Truncate'>, None)
        """
        if isinstance(value, cls):
            return value
        return cls._folded_member(ascii_fold(value.strip())) if isinstance(value, str) else None

    @classmethod
    def choices_text(cls) -> str:
        """The members as data spells them: ``'throw', 'truncate' or 'proceed'``."""
        names = [repr(ascii_fold(member.value)) for member in cls]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"

    def folded(self) -> str:
        """The member as data spells it (``"throw"``)."""
        return ascii_fold(self.value)

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
