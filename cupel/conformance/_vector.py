"""Reading a parsed vector and comparing what it expects (private): the tables a vector
holds, the numbers it asserts, and the failure messages every stage words the same way."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from cupel._errors import CupelError, VectorError
from cupel._model import ContextItem
from cupel.conformance._builders import Table, build_item, number

__all__ = [
    "DEFAULT_EPSILON",
    "close",
    "config_of",
    "contents",
    "count_diff",
    "epsilon",
    "expected_of",
    "items_of",
    "order_diff",
    "require_str",
    "set_diff",
    "tables",
    "test_of",
    "with_expect_error",
]

DEFAULT_EPSILON = 1e-9


def test_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    test: Mapping[str, Any] = data["test"]
    return test


def config_of(data: Mapping[str, Any], key: str = "config") -> Table:
    """The vector's ``[config]`` table (or its ``[key]`` one); absent: empty."""
    table = data.get(key, {})
    if not isinstance(table, Mapping):
        raise VectorError(f"[{key}] must be a table")
    return table


def expected_of(data: Mapping[str, Any]) -> Table:
    return config_of(data, "expected")


def tables(data: Mapping[str, Any], key: str) -> list[Table]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise VectorError(f"[[{key}]] must be an array of tables")
    return value


def epsilon(data: Mapping[str, Any]) -> float:
    tolerance = data.get("tolerance", {})
    eps = (
        tolerance.get("score_epsilon", DEFAULT_EPSILON) if isinstance(tolerance, Mapping) else None
    )
    return number(eps, "tolerance.score_epsilon")


def items_of(data: Mapping[str, Any], key: str = "items") -> list[ContextItem]:
    return [build_item(t, where=f"{key}[{i}]") for i, t in enumerate(tables(data, key))]


def close(actual: float, expected: float, eps: float) -> bool:
    if math.isnan(expected):
        return math.isnan(actual)
    if math.isinf(expected):
        return actual == expected
    return abs(actual - expected) < eps


def contents(items: Iterable[ContextItem]) -> list[str]:
    return [i.content for i in items]


def with_expect_error(data: Mapping[str, Any], run: Callable[[], list[str]]) -> list[str]:
    """Run ``run``; when ``test.expect_error`` is set, require a cupel error instead."""
    expect = test_of(data).get("expect_error")
    if expect is None:
        return run()
    if not isinstance(expect, str):
        raise VectorError(f"test.expect_error must be a string, got {expect!r}")
    try:
        run()
    except VectorError:
        raise
    except CupelError as exc:
        if expect in str(exc):
            return []
        return [f"expected an error containing {expect!r}, got {type(exc).__name__}: {exc}"]
    except Exception as exc:
        return [f"expected a cupel error containing {expect!r}, got {type(exc).__name__}: {exc}"]
    return [f"expected an error containing {expect!r}, but the run succeeded"]


def require_str(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str):
        raise VectorError(f"{where}.{key} must be a string, got {value!r}")
    return value


def set_diff(what: str, want: Sequence[str], got: Sequence[str]) -> list[str]:
    if set(want) == set(got):
        return []
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    return [
        f"{what}: expected {sorted(set(want))}, got {sorted(set(got))} "
        f"(missing {missing}, unexpected {extra})"
    ]


def count_diff(key: str, expected: Table, actual: int) -> list[str]:
    want = expected.get(key, actual)  # not asserted: nothing to report
    return [] if want == actual else [f"{key}: expected {want!r}, got {actual}"]


def order_diff(what: str, want: list[str], got: list[str]) -> list[str]:
    return [] if want == got else [f"{what}: expected {want}, got {got}"]
