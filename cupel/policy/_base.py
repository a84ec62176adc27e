"""The base of every policy table: frozen, no unknown keys, errors that name the path.

Pydantic validates a policy; :func:`raise_policy_error` turns its errors into one
:class:`~cupel.PolicyError` whose problems name the path of each offending value
(``scorer.scorers[2].weight: must be > 0, got -1``), and :meth:`Spec._guard` does the
same for an error a component's constructor raises while the policy is built.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, NoReturn, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError

from cupel._errors import ConfigurationError, PolicyError
from cupel._text import ascii_fold

__all__ = [
    "MAX_POLICY_DEPTH",
    "Spec",
    "check_depth",
    "fail",
    "join",
    "normalize_name",
    "raise_policy_error",
    "type_shorthand",
]

_T = TypeVar("_T")


def fail(path: str, rule: str, value: Any) -> PolicyError:
    """One problem at ``path``: ``"<path>: <rule>"``."""
    return PolicyError.of([(path, rule, value)])


def join(outer: str, inner: str) -> str:
    if not outer:
        return inner
    if not inner:
        return outer
    return outer + inner if inner.startswith("[") else f"{outer}.{inner}"


_OWNER_PREFIX = re.compile(r"^[A-Z][A-Za-z]*: ")


def type_shorthand(value: Any) -> Any:
    """``"recency"`` means ``{"type": "recency"}``; type names are matched ignoring case
    and ``-``/``_``. Anything else but a mapping or a spec is refused here."""
    if isinstance(value, str):
        return {"type": normalize_name(value)}
    if isinstance(value, Mapping):
        tag = value.get("type")
        if isinstance(tag, str):
            return {**value, "type": normalize_name(tag)}
        return value
    if isinstance(value, BaseModel):
        return value
    raise ValueError(
        f"must be a table/object with a 'type' key (or a type name string), "
        f"got {type(value).__name__} {value!r}"
    )


def normalize_name(name: str) -> str:
    return ascii_fold(name.strip()).replace("-", "_").replace(" ", "_")


MAX_POLICY_DEPTH = 100
"""How deeply tables and arrays may nest in a policy (the policy itself is level 1).
Deeper data is refused with a :class:`PolicyError` naming the path, before it can
exhaust Python's stack."""


def check_depth(data: Any, limit: int = MAX_POLICY_DEPTH) -> None:
    """Raise a :class:`PolicyError` at the first table or array nested deeper than
    ``limit`` in ``data`` (mappings, lists and tuples; already built specs are not
    entered). Iterative, so it cannot exhaust the stack itself."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Iterator[tuple[str, Any]] = (
                (join(path, str(key)), inner) for key, inner in value.items()
            )
        elif isinstance(value, (list, tuple)):
            children = ((f"{path}[{i}]", inner) for i, inner in enumerate(value))
        else:
            continue
        if depth > limit:
            shown = path if len(path) <= 200 else f"{path[:90]}...{path[-90:]}"
            why = "the limit for policies, cupel.policy.MAX_POLICY_DEPTH"
            raise fail(shown, f"nested deeper than {limit} tables/arrays ({why})", None)
        stack.extend((inner, where, depth + 1) for where, inner in children)


class Spec(BaseModel):
    """Base of the policy's component specs: frozen, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        check_depth(data)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise_policy_error(exc, type(self))

    def _guard(self, path: str, build: Callable[[], _T]) -> _T:
        """Run a component constructor, re-raising its error with ``path`` in front."""
        try:
            return build()
        except PolicyError:
            raise
        except ConfigurationError as exc:
            where = path
            if exc.field is not None and exc.field in type(self).model_fields:
                where = f"{path}.{exc.field}"
            raise fail(where, _OWNER_PREFIX.sub("", str(exc)), exc.value) from exc


def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``Optional`` from an annotation."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin is Union or origin is types.UnionType:
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _tags(annotation: Any) -> dict[str, type[Spec]] | None:
    """The ``type`` tag → spec class map of a discriminated union annotation, else None."""
    origin = get_origin(annotation)
    if origin is not Union and origin is not types.UnionType:
        return None
    tags: dict[str, type[Spec]] = {}
    for member in get_args(annotation):
        if isinstance(member, type) and issubclass(member, Spec) and "type" in member.model_fields:
            tags[str(member.model_fields["type"].default)] = member
    return tags or None


def _walk(root: type[Spec], loc: Sequence[int | str]) -> tuple[str, Any]:
    """Turn pydantic's ``loc`` into ``a.b[2].c`` (union tags dropped); also return the
    annotation found at the end (a spec class, a union, ...)."""
    path = ""
    current: Any = root
    for element in loc:
        tags = _tags(current)
        if tags is not None and isinstance(element, str) and element in tags:
            current = tags[element]
            continue
        origin = get_origin(current)
        if (
            isinstance(current, type)
            and issubclass(current, BaseModel)
            and isinstance(element, str)
        ):
            field = current.model_fields.get(element)
            path = f"{path}.{element}" if path else element
            current = _unwrap(field.annotation) if field is not None else None
        elif element == "[key]":
            continue
        elif origin is dict:
            path += f"[{element!r}]"
            current = _unwrap(get_args(current)[1])
        elif isinstance(element, int):
            path += f"[{element}]"
            current = _unwrap(get_args(current)[0]) if origin is list else None
        else:
            path = f"{path}.{element}" if path else element
            current = None
    return path, current


_RULES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "finite_number": "must be a finite number",
}


def _describe(err: Mapping[str, Any], root: type[Spec]) -> list[tuple[str, str, Any]]:
    """``(path, message, value)`` problems for one pydantic error."""
    loc = tuple(err.get("loc", ()))
    path, at = _walk(root, loc)
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "value_error":
        original = ctx.get("error")
        if isinstance(original, PolicyError):  # from a nested spec: its paths are relative
            return [(join(path, inner), rule, v) for inner, rule, v in original.problems]
        text = _OWNER_PREFIX.sub("", str(original)) if original is not None else err["msg"]
        return [(path, text, value)]
    if kind in _RULES:
        limits = {k: _number_text(v) for k, v in ctx.items()}
        return [(path, f"{_RULES[kind].format(**limits)}, got {value!r}", value)]
    if kind == "missing":
        return [(path, "is required", None)]
    if kind == "extra_forbidden":
        _, owner = _walk(root, loc[:-1])
        allowed = (
            ", ".join(owner.model_fields)
            if isinstance(owner, type) and issubclass(owner, BaseModel)
            else "see the policy schema"
        )
        return [(path, f"unknown key; allowed keys here: {allowed}", value)]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = _tags(at)
        allowed = ", ".join(repr(t) for t in tags) if tags else str(ctx.get("expected_tags"))
        if kind == "union_tag_not_found":
            return [(path, f"missing the 'type' key; allowed types: {allowed}", value)]
        tag = ctx.get("tag")
        return [(join(path, "type"), f"unknown type {tag!r}; allowed types: {allowed}", tag)]
    if kind == "too_short":
        minimum = ctx.get("min_length", 1)
        entries = "entry" if minimum == 1 else "entries"
        return [(path, f"must hold at least {minimum} {entries}, got {value!r}", value)]
    message = re.sub(r"^Input should be ", "must be ", str(err.get("msg", "invalid")))
    return [(path, f"{message}, got {value!r}", value)]


def _number_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def raise_policy_error(exc: ValidationError, root: type[Spec]) -> NoReturn:
    problems: list[tuple[str, str, Any]] = []
    for err in exc.errors(include_url=False):
        problems.extend(_describe(err, root))
    raise PolicyError.of(problems) from None
