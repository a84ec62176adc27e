"""Component parameters: the constructor signature is the single source (private).

As in scikit-learn, a scorer's, slicer's, placer's or quota entry's parameters are its
constructor's parameters, and each is readable afterwards as the attribute of the same
name. Everything else reads them from there: :func:`params` lists them (name, annotated
type, default), :class:`Configurable` derives ``repr`` and ``get_params()``, and the
policy layer (``cupel.policy``), the conformance builders and the command line derive
their vocabularies from the same list. Adding a parameter to a component therefore
touches the component alone.

The annotations say what a value may be, also for data: the constraint types below
(``NonNegative``, ``UnitInterval``, ...) are plain ``float`` / ``int`` to a type checker
and carry their bounds for the policy layer's validation.

``repr`` shows the required parameters positionally and the others as ``name=value``
when they differ from their default (a ``None`` default stands for the class attribute
``DEFAULT_<NAME>`` when the class has one):

>>> from cupel import KindScorer, KnapsackSlice, TagScorer
>>> KindScorer(), KnapsackSlice(bucket_size=50), TagScorer({"a": 1.0}, case_insensitive=True)
(KindScorer(), KnapsackSlice(bucket_size=50), TagScorer({'a': 1.0}, case_insensitive=True))
>>> class Clip(Configurable):
...     def __init__(self, width: int, *, marker: str = "…") -> None:
...         self.width, self.marker = width, marker
>>> Clip(40, marker="..."), Clip(40).get_params(), [p.name for p in params(Clip)]
(Clip(40, marker='...'), {'width': 40, 'marker': '…'}, ['width', 'marker'])
"""

from __future__ import annotations

import inspect
import reprlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal
from weakref import WeakKeyDictionary

from pydantic import BeforeValidator, Field, Strict

__all__ = [
    "LIVE",
    "REQUIRED",
    "BucketSize",
    "Configurable",
    "Count",
    "Named",
    "NonNegative",
    "Param",
    "Percent",
    "Positive",
    "PositiveInt",
    "Share",
    "UnitInterval",
    "describe",
    "params",
]

REQUIRED: Any = inspect.Parameter.empty
"""The default of a parameter that has none."""


class _Live:
    """The marker type of :data:`LIVE`."""

    def __repr__(self) -> str:
        return "LIVE"


LIVE: Any = _Live()
"""Marks a parameter as a live object (``Annotated[T, LIVE]``, e.g. an embedding model):
it has no policy key, and a component built from a policy gets its default."""

# -- constraint types (plain float / int to a type checker) --------------------------------
NonNegative = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
UnitInterval = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]
Percent = Annotated[float, Strict(), Field(ge=0, le=100, allow_inf_nan=False)]
Share = Annotated[float, Strict(), Field(ge=0, lt=1, allow_inf_nan=False)]
"""A share of a budget that leaves some of it: ``0 <= share < 1``."""
Count = Annotated[int, Strict(), Field(ge=0)]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]


def _bucket_size(value: Any) -> Any:
    """A knapsack ``bucket_size``: a positive integer or ``"auto"`` (one message for both)."""
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a positive integer or 'auto', got {value!r}")
    if value <= 0:
        raise ValueError(f"must be > 0, got {value!r}")
    return value


BucketSize = Annotated[PositiveInt | Literal["auto"], BeforeValidator(_bucket_size)]


@dataclass(frozen=True)
class Named:
    """Names an element of a tuple-typed parameter in data (``Annotated[timedelta,
    Named("max_age")]``): tuples have positions, tables have keys."""

    name: str


# -- the parameter list ---------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    """One constructor parameter: its name, annotated type and default (:data:`REQUIRED`
    when it has none); ``keyword_only`` when it follows ``*``."""

    name: str
    annotation: Any
    default: Any
    keyword_only: bool

    @property
    def required(self) -> bool:
        """Whether the parameter has no default."""
        return self.default is REQUIRED


_PARAMS: WeakKeyDictionary[type, tuple[Param, ...]] = WeakKeyDictionary()


def params(cls: type) -> tuple[Param, ...]:
    """``cls``'s constructor parameters, in signature order (``*args``/``**kwargs``
    left out)."""
    found = _PARAMS.get(cls)
    if found is None:
        found = _PARAMS[cls] = _read_params(cls)
    return found


def _read_params(cls: type) -> tuple[Param, ...]:
    init = cls.__init__  # type: ignore[misc]
    if init is object.__init__:
        return ()
    hints = typing.get_type_hints(init, include_extras=True)
    found = []
    for parameter in list(inspect.signature(init).parameters.values())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        found.append(
            Param(
                parameter.name,
                hints.get(parameter.name, Any),
                parameter.default,
                parameter.kind is parameter.KEYWORD_ONLY,
            )
        )
    return tuple(found)


def describe(obj: object) -> str:
    """``Name(required..., name=value...)`` from ``obj``'s parameters (see the module)."""
    cls = type(obj)
    parts = []
    for param in params(cls):
        try:
            value = getattr(obj, param.name)
        except AttributeError:  # a subclass whose own parameter is not an attribute
            continue
        if param.required and not param.keyword_only:
            parts.append(_shown(value))
            continue
        default = param.default  # a None default stands for DEFAULT_<NAME> when there is one
        if default is None:
            default = getattr(cls, f"DEFAULT_{param.name.upper()}", None)
        if param.required or not _same(value, default):
            parts.append(f"{param.name}={_shown(value)}")
    return f"{cls.__name__}({', '.join(parts)})"


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return bool(value == default)
    except Exception:  # a value whose comparison fails is shown
        return False


def _shown(value: Any) -> str:
    """A parameter value as code: enum members by name, labels as plain strings,
    mappings as dicts and tuples of values as lists."""
    if isinstance(value, Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_shown(k)}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return "[" + ", ".join(map(repr, value)) + "]"
    return repr(value)


class Configurable:
    """A component whose parameters are its constructor's (scikit-learn's convention):
    ``repr`` and :meth:`get_params` are derived from the signature."""

    __slots__ = ()

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters and their current values."""
        return {param.name: getattr(self, param.name) for param in params(type(self))}

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        return describe(self)
