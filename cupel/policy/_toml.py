"""A small TOML writer for policies: tables for nested specs, inline tables for short flat
ones, and a :class:`~cupel.PolicyError` naming the path of anything TOML cannot hold."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from datetime import date, datetime, time
from enum import Enum
from typing import Any

from cupel._text import ascii_fold
from cupel.policy._base import fail

__all__ = ["check_toml", "toml_document"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


_FREE_TABLES = ("params",)
"""Keys whose tables hold user data, whose keys are shown as ``['key']`` in paths."""


def check_toml(value: Any, path: str, *, free: bool) -> None:
    """Raise a :class:`PolicyError` at the first value TOML cannot express."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            step = f"[{key!r}]" if free else f".{key}" if path else str(key)
            check_toml(inner, path + step, free=free or key in _FREE_TABLES)
    elif isinstance(value, (list, tuple)):
        for index, inner in enumerate(value):
            check_toml(inner, f"{path}[{index}]", free=free)
    elif not isinstance(value, (bool, Enum, int, float, str, datetime, date, time)):
        null = " (TOML has no null; leave the key out)" if value is None else ""
        raise fail(path, f"{type(value).__name__} {value!r} cannot be written as TOML{null}", value)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return _toml_string(ascii_fold(str(value.value)))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise fail("", f"{type(value).__name__} {value!r} cannot be written as TOML", value)


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(map(_is_table, value))


def _flat(value: Mapping[str, Any]) -> bool:
    """A table without nested tables (written inline when it is short)."""
    return not any(_is_table(v) or _is_table_array(v) for v in value.values())


def _toml_tables(prefix: str, table: Mapping[str, Any], top: bool) -> Iterator[str]:
    """Lines for the body of ``table`` at dotted ``prefix``, then its sub-tables."""
    nested: list[tuple[str, Any]] = []
    for key, value in table.items():
        inline = (
            not top
            and _is_table(value)
            and _flat(value)
            and len(_toml_value(value)) <= 60
            and key not in ("weights", "tag_weights", "params")
        )
        if (_is_table(value) and not inline) or _is_table_array(value):
            nested.append((key, value))
        else:
            yield f"{_toml_key(key)} = {_toml_value(value)}"
    for key, value in nested:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        if _is_table(value):
            yield ""
            yield f"[{name}]"
            yield from _toml_tables(name, value, False)
        else:
            for element in value:
                yield ""
                yield f"[[{name}]]"
                yield from _toml_tables(name, element, False)


def toml_document(data: Mapping[str, Any]) -> str:
    return "\n".join(_toml_tables("", data, True)).lstrip("\n") + "\n"
