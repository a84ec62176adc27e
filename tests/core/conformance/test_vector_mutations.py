"""Every assertion of every repository vector is live: a deliberately wrong copy fails.

Each vector is parsed, and for each thing it asserts (a score, the selected set, an order,
a diagnostics entry and its payload, a summary total, a shortfall or cap-exclusion count,
an overflow event, an expected error) a copy with that one expectation falsified is run
through :func:`cupel.conformance.check_vector`, which must report at least one failure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli

from cupel.conformance import check_vector

ROOT = Path(__file__).resolve().parents[3] / "conformance"
VECTORS = sorted(ROOT.rglob("*.toml"))
GHOST = "no item has this content"
PAYLOAD_KEYS = (
    "item_tokens",
    "available_tokens",
    "deduplicated_against",
    "tokens",
    "displaced_by",
    "kind",
    "cap",
    "count",
)

Vector = dict[str, Any]
Mutation = Callable[[Vector], None]


def _wrong(value: Any) -> Any:
    """A value of the same type that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-wrong"
    raise TypeError(value)


def _set(path: tuple[Any, ...], value: Callable[[Any], Any]) -> Mutation:
    def mutate(data: Vector) -> None:
        *parents, last = path
        node: Any = data
        for key in parents:
            node = node[key]
        node[last] = value(node[last])

    return mutate


def _reordered(order: list[Any]) -> list[Any] | None:
    """A different order of the same entries, if there is one."""
    if len(order) < 2:
        return None
    for candidate in (order[::-1], order[1:] + order[:1]):
        if candidate != order:
            return candidate
    return None


def mutations(data: Vector) -> Iterator[tuple[str, Mutation]]:
    """(description, mutation) for every assertion ``data`` makes."""
    test = data["test"]
    if test.get("expect_construction_error") is True:
        yield "construction succeeds", _set(("test", "expect_construction_error"), lambda _: False)
        return
    if "expect_error" in test:
        yield "another error message", _set(("test", "expect_error"), lambda v: GHOST)
        return
    expected = data.get("expected", {})
    stage = test["stage"]
    if stage == "scoring":
        for i in range(len(expected)):
            yield f"expected[{i}] score", _set(("expected", i, "score_approx"), lambda v: v + 0.5)
        return
    if stage == "slicing":
        selected = expected.get("selected_contents", [])
        yield (
            "an extra selected item",
            _set(("expected", "selected_contents"), lambda v: [*v, GHOST]),
        )
        if selected:
            yield (
                "a missing selected item",
                _set(("expected", "selected_contents"), lambda v: v[1:]),
            )
    if stage == "history":
        window = expected.get("window")
        if window is not None:
            yield "an extra window message", _set(("expected", "window"), lambda v: [*v, GHOST])
            if window:
                yield "a missing window message", _set(("expected", "window"), lambda v: v[:-1])
            other_window = _reordered(window)
            if other_window is not None:
                yield "another window order", _set(("expected", "window"), lambda v: other_window)
        for i in range(len(expected.get("prefixes", []))):
            yield (
                f"prefixes[{i}] window",
                _set(("expected", "prefixes", i, "window"), lambda v: v[:-1] or [GHOST]),
            )
        return
    if stage == "placing":
        order = expected["ordered_contents"]
        yield "an extra placed item", _set(("expected", "ordered_contents"), lambda v: [*v, GHOST])
        other = _reordered(order)
        if other is not None:
            yield "another order", _set(("expected", "ordered_contents"), lambda v: other)
    for key in ("shortfall_count", "cap_excluded_count", "overflow_tokens_over_budget"):
        if key in expected:
            yield key, _set(("expected", key), _wrong)
    if stage != "pipeline":
        return
    output = data.get("expected_output", [])
    yield "an extra output item", _set(("expected_output",), lambda v: [*v, {"content": GHOST}])
    # (a missing [[expected_output]] means an empty window; _cases spells that out)
    other_output = _reordered(output)
    if other_output is not None:
        yield "another output order", _set(("expected_output",), lambda v: other_output)
    diagnostics = expected.get("diagnostics", {})
    for key in ("total_candidates", "total_tokens_considered"):
        if key in diagnostics.get("summary", {}):
            yield f"summary {key}", _set(("expected", "diagnostics", "summary", key), _wrong)
    for part, reason_key in (("included", "inclusion_reason"), ("excluded", "exclusion_reason")):
        for i, entry in enumerate(diagnostics.get(part, [])):
            where = ("expected", "diagnostics", part, i)
            yield f"{part}[{i}] content", _set((*where, "content"), _wrong)
            if "score_approx" in entry:
                yield f"{part}[{i}] score", _set((*where, "score_approx"), lambda v: v + 0.5)
            if reason_key in entry:
                yield f"{part}[{i}] reason", _set((*where, reason_key), _wrong)
            for key in PAYLOAD_KEYS:
                if key in entry:
                    yield f"{part}[{i}] {key}", _set((*where, key), _wrong)
        if diagnostics.get(part):
            yield (
                f"a missing {part} entry",
                _set(("expected", "diagnostics", part), lambda v: v[1:]),
            )


def _cases() -> list[Any]:
    cases = []
    for path in VECTORS:
        with open(path, "rb") as fh:
            data = tomli.load(fh)
        if data["test"].get("stage") == "pipeline":
            data.setdefault("expected_output", [])
        name = path.relative_to(ROOT).as_posix()
        for description, mutate in mutations(copy.deepcopy(data)):
            cases.append(pytest.param(data, mutate, id=f"{name}: {description}"))
    return cases


CASES = _cases()


def test_every_vector_asserts_something() -> None:
    names = {case.id.split(": ")[0] for case in CASES}
    assert names == {path.relative_to(ROOT).as_posix() for path in VECTORS}


@pytest.mark.parametrize(("data", "mutate"), CASES)
def test_a_falsified_expectation_fails(data: Vector, mutate: Mutation) -> None:
    assert check_vector(data) == [], "the unmodified vector must pass"
    wrong = copy.deepcopy(data)
    mutate(wrong)
    assert check_vector(wrong), "the runner accepted a wrong expectation"
