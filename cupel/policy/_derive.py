"""Policy tables derived from constructor signatures (private).

A component's policy table is its constructor's parameters (:func:`cupel._params.params`),
each written by the rule for its type:

==============================================  ===========================================
parameter type                                  in a policy
==============================================  ===========================================
``float``, ``int``, ``bool``, ``str``, literal  the value (strict: no ``"0.5"``, no ``true``
                                                for a number), with the type's bounds
``Mapping[str, V]``                             a table of ``V``
a :class:`~cupel._labels.ChoiceEnum`            its name, any case (``"throw"``)
``timedelta`` ``x``                             ``x_secs``: seconds
a clock (``TimeProvider``)                      ``reference_time``: a datetime, or left out
                                                for the system clock
``Scorer`` / ``Slicer`` / ``DecayCurve``        a nested table with a ``type`` key (an
                                                inner slicer defaults to greedy)
``Sequence[tuple[Scorer, weight]]``             ``scorers``: ``[{weight, scorer}, ...]``
``Sequence[tuple[Named(a), Named(b)]]``         ``[{a, b}, ...]`` (each by its own rule)
``Sequence[Entry]`` (a component class)         ``[{...entry's parameters...}, ...]``
a component class (``KnapsackSlice | None``)    its parameters, inline
``Annotated[T, LIVE]`` (an embedding model)     no key: a live object, never in a policy
==============================================  ===========================================

:func:`spec_of` turns a component class into a frozen pydantic model with those fields
whose ``_build(path)`` calls the constructor; so a parameter added to a constructor is
a policy key at once, validated with the bounds its annotation carries.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from operator import getitem
from typing import Annotated, Any, ClassVar, Literal, Optional, Union, get_args, get_origin

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, Strict, create_model

from cupel._labels import ChoiceEnum
from cupel._params import LIVE, Configurable, Named, Param, params
from cupel.policy._base import Spec
from cupel.scorers._base import Scorer
from cupel.scorers.decay import (
    MAX_DURATION_SECONDS,
    DecayCurve,
    FixedTimeProvider,
    SystemTimeProvider,
    TimeProvider,
    as_utc,
    duration_from_seconds,
)
from cupel.slicers._base import Slicer

__all__ = [
    "ComponentSpec",
    "Rule",
    "Seconds",
    "choice",
    "rebuild",
    "spec_of",
    "specs",
    "stem",
    "tuple_spec",
]

Seconds = Annotated[float, Strict(), Field(gt=0, le=MAX_DURATION_SECONDS, allow_inf_nan=False)]
"""A duration in seconds: > 0 and at most ``datetime.timedelta.max`` (about 2.7 million
years), so it always converts to a ``timedelta``."""

_NESTED: dict[Any, str] = {Scorer: "ScorerSpec", Slicer: "SlicerSpec", DecayCurve: "CurveSpec"}
"""Parameter types written as a nested table, and the union (built in ``_specs``) that
validates it."""

Build = Callable[[Any, str], Any]
"""``(spec, path) -> constructor argument``."""


@dataclass(frozen=True)
class Rule:
    """How one constructor parameter is written in a policy: its ``fields``
    (``(key, annotation, default)``) and how ``build`` turns them into the argument."""

    param: str
    fields: tuple[tuple[str, Any, Any], ...]
    build: Build


class ComponentSpec(Spec):
    """A component as a policy table: the fields are its constructor's parameters (see
    :mod:`cupel.policy`); :meth:`_build` calls the constructor."""

    component: ClassVar[type]
    rules: ClassVar[tuple[Rule, ...]]
    checks: ClassVar[tuple[Callable[[Any, str], None], ...]] = ()

    def _build(self, path: str) -> Any:
        """A fresh component; errors name ``path``."""
        for check in self.checks:
            check(self, path)
        cls = type(self)
        return self._guard(
            path,
            lambda: cls.component(**{rule.param: rule.build(self, path) for rule in cls.rules}),
        )


_SPECS: dict[type, type[ComponentSpec]] = {}


def specs() -> dict[type, type[ComponentSpec]]:
    """Every derived spec, by component class."""
    return dict(_SPECS)


def spec_of(cls: type, *, tag: str | None = None, name: str | None = None) -> type[ComponentSpec]:
    """The policy table of ``cls`` (built once), with a ``type`` key when ``tag`` is given."""
    found = _SPECS.get(cls)
    if found is not None:
        return found
    rules = tuple(_rule(cls, param) for param in params(cls))
    fields: dict[str, Any] = {}
    if tag is not None:
        fields["type"] = (_form(Literal, tag), tag)
    for rule in rules:
        for key, annotation, default in rule.fields:
            fields[key] = (annotation, default)
    keys = ", ".join(f"``{key}``" for key in fields if key != "type") or "no parameters"
    model: type[ComponentSpec] = create_model(
        name or f"{cls.__name__}Spec",
        __base__=ComponentSpec,
        __module__="cupel.policy",
        __doc__=f":class:`~cupel.{cls.__name__}` in a policy ({keys}).",
        **fields,
    )
    model.component = cls
    model.rules = rules
    _SPECS[cls] = model
    return model


def rebuild(namespace: Mapping[str, Any]) -> None:
    """Resolve the nested-table unions (``ScorerSpec``, ...) in every derived spec."""
    for model in [*_SPECS.values(), *_TUPLE_SPECS.values()]:
        model.model_rebuild(_types_namespace=dict(namespace))


# -- the rules ------------------------------------------------------------------------------
def _form(origin: Any, *args: Any) -> Any:
    """``origin[args]`` built at run time (``Optional[X]``, ``Annotated[X, *meta]``)."""
    return getitem(origin, args if len(args) > 1 else args[0])


def _list_of(element: Any, meta: tuple[Any, ...]) -> Any:
    """``list[element]``, with the parameter's own constraints (``min_length``)."""
    listed = _form(list, element)
    return _form(Annotated, listed, *meta) if meta else listed


def _peel(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """``Annotated[T, *meta]`` as ``(T, meta)``."""
    if get_origin(annotation) is Annotated:
        core, *meta = get_args(annotation)
        return core, tuple(meta)
    return annotation, ()


def _members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def _optional(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` as ``(X, True)``."""
    members = _members(annotation)
    if type(None) not in members:
        return annotation, False
    rest = tuple(m for m in members if m is not type(None))
    return (rest[0] if len(rest) == 1 else Union[rest]), True  # noqa: UP007


def _default(param: Param) -> Any:
    return ... if param.required else param.default


def _get(key: str) -> Build:
    return lambda spec, path: getattr(spec, key)


def _rule(owner: type, param: Param) -> Rule:
    """The rule for one parameter (see the module's table)."""
    core, meta = _peel(param.annotation)
    name = param.name
    if any(m is LIVE for m in meta):  # a live object: no key, the default
        default = param.default
        return Rule(name, (), lambda spec, path: default)
    inner, optional = _optional(core)
    members = _members(inner)
    if inner in _NESTED:
        return _nested_rule(param, _NESTED[inner], optional, inner is Slicer)
    if any(isinstance(m, type) and issubclass(m, ChoiceEnum) for m in members):
        enum = next(m for m in members if isinstance(m, type) and issubclass(m, ChoiceEnum))
        return Rule(name, ((name, choice(enum), _default(param)),), _get(name))
    if TimeProvider in members:
        return Rule(name, _CLOCK, _clock)
    if isinstance(inner, type) and issubclass(inner, Configurable) and param.default is None:
        return _inline_rule(param, inner)
    if get_origin(inner) is Sequence:
        return _sequence_rule(owner, param, get_args(inner)[0], meta)
    if get_origin(inner) is Mapping:
        _, value_type = get_args(inner)
        table = _form(dict, Annotated[str, Strict()], _strict(value_type))
        annotation = _form(Optional, table) if optional else table
        return Rule(name, ((name, annotation, _default(param)),), _get(name))
    key, annotation, build = _scalar(owner, name, param.annotation)
    return Rule(name, ((key, annotation, _default(param)),), build)


def _scalar(owner: type, name: str, annotation: Any) -> tuple[str, Any, Build]:
    """``(key, annotation, build)`` for a plain value (a ``timedelta`` as seconds)."""
    core, _ = _peel(annotation)
    inner, optional = _optional(core)
    if inner is timedelta:
        key = f"{name}_secs"
        seconds = _form(Optional, Seconds) if optional else Seconds

        def build(spec: Any, path: str) -> Any:
            value = getattr(spec, key)
            return None if value is None else duration_from_seconds(owner.__name__, key, value)

        return key, seconds, build
    return name, _strict(annotation), _get(name)


def _strict(annotation: Any) -> Any:
    """Plain ``float``/``int``/``bool``/``str`` values strict (no coercion from text or
    booleans), keeping any bounds the annotation carries."""
    core, meta = _peel(annotation)
    inner, optional = _optional(core)
    if inner in (float, int, bool, str):
        strict = _form(Annotated, inner, Strict(), *meta)
        return _form(Optional, strict) if optional else strict
    if optional and get_origin(inner) is Annotated:
        return _form(Optional, _strict(inner))
    return annotation


def _nested_rule(param: Param, union: str, optional: bool, inner_slicer: bool) -> Rule:
    name = param.name
    annotation: Any = _form(Optional, union) if optional else union
    default: Any = _default(param)
    if inner_slicer and param.required:  # an inner slicer defaults to greedy
        from cupel.slicers.greedy import GreedySlice

        default = Field(default_factory=lambda: spec_of(GreedySlice)())

    def build(spec: Any, path: str) -> Any:
        value = getattr(spec, name)
        return None if value is None else value._build(f"{path}.{name}")

    return Rule(name, ((name, annotation, default),), build)


def _inline_rule(param: Param, component: type) -> Rule:
    """A component class parameter (``knapsack: KnapsackSlice | None``): its own
    parameters, inline in the owner's table."""
    rules = tuple(_rule(component, inner) for inner in params(component))
    fields = tuple(field for rule in rules for field in rule.fields)

    def build(spec: Any, path: str) -> Any:
        return component(**{rule.param: rule.build(spec, path) for rule in rules})

    return Rule(param.name, fields, build)


_TUPLE_SPECS: dict[str, type[Spec]] = {}


def tuple_spec(name: str) -> type[Spec]:
    """A derived table for one element of a tuple-typed parameter, by name
    (``CompositeEntrySpec``, ``StepWindowSpec``)."""
    return _TUPLE_SPECS[name]


def _singular(name: str) -> str:
    word = re.sub(r"ies$", "y", name) if name.endswith("ies") else name.removesuffix("s")
    return "".join(part.capitalize() for part in word.split("_"))


def _sequence_rule(owner: type, param: Param, element: Any, meta: tuple[Any, ...]) -> Rule:
    name = param.name
    prefix = stem(owner)
    if get_origin(element) is tuple and get_args(element)[0] is Scorer:
        weight = _strict(get_args(element)[1])
        entry = _tuple_spec(
            f"{prefix}EntrySpec",
            f"One child of a :class:`{prefix}Spec`: a scorer and its (relative) weight.",
            {"weight": (weight, ...), "scorer": ("ScorerSpec", ...)},
        )

        def build_weighted(spec: Any, path: str) -> Any:
            return [
                (child.scorer._build(f"{path}.scorers[{i}].scorer"), child.weight)
                for i, child in enumerate(spec.scorers)
            ]

        annotation = _list_of(entry, meta)
        return Rule(name, (("scorers", annotation, ...),), build_weighted)
    if get_origin(element) is tuple:
        parts = [_scalar(owner, _named(part), part) for part in get_args(element)]
        row = _tuple_spec(
            f"{prefix}{_singular(name)}Spec",
            f"One element of a :class:`{prefix}Spec`'s ``{name}``.",
            {key: (annotation, ...) for key, annotation, _ in parts},
        )

        def build_rows(spec: Any, path: str) -> Any:
            return [
                tuple(build(value, f"{path}.{name}[{i}]") for _, _, build in parts)
                for i, value in enumerate(getattr(spec, name))
            ]

        annotation = _list_of(row, meta)
        return Rule(name, ((name, annotation, _default(param)),), build_rows)
    entry_spec = spec_of(element)

    def build_entries(spec: Any, path: str) -> Any:
        return [value._build(f"{path}.{name}[{i}]") for i, value in enumerate(getattr(spec, name))]

    annotation = _list_of(entry_spec, meta)
    return Rule(name, ((name, annotation, _default(param)),), build_entries)


def _named(annotation: Any) -> str:
    _, meta = _peel(annotation)
    for item in meta:
        if isinstance(item, Named):
            return item.name
    raise TypeError(f"a tuple element needs a Named(...) key: {annotation!r}")


def _tuple_spec(name: str, doc: str, fields: dict[str, Any]) -> type[Spec]:
    model: type[Spec] = create_model(
        name, __base__=Spec, __module__="cupel.policy", __doc__=doc, **fields
    )
    _TUPLE_SPECS[name] = model
    return model


def stem(cls: type) -> str:
    """``CompositeScorer`` → ``Composite``, ``StepDecay`` → ``Step``."""
    return re.sub(r"(Scorer|Slice|Decay|Placer)$", "", cls.__name__)


# -- enums and clocks ---------------------------------------------------------------------
def choice(enum: type[ChoiceEnum]) -> Any:
    """A field holding a member of ``enum``, written as its name in any case."""

    def parse(value: Any) -> Any:
        found = enum.lookup(value)
        if found is None:
            raise ValueError(f"must be {enum.choices_text()}, got {value!r}")
        return found

    return Annotated[enum, BeforeValidator(parse), PlainSerializer(enum.folded)]


_INSTANT = Annotated[
    datetime, AfterValidator(as_utc), PlainSerializer(datetime.isoformat, when_used="json")
]
_CLOCK: tuple[tuple[str, Any, Any], ...] = (("reference_time", _INSTANT | None, None),)
"""A clock is written as its fixed instant, ``reference_time`` (naive values are UTC);
left out, the built component reads the system clock at every run."""


def _clock(spec: Any, path: str) -> TimeProvider:
    instant = spec.reference_time
    return SystemTimeProvider() if instant is None else FixedTimeProvider(instant)
