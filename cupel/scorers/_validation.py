"""Construction-time parameter checks shared by the scorers (private)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Sequence, Sized
from typing import Any

from cupel._errors import ConfigurationError, CycleError, ScorerConfigError, refusal
from cupel._model import ContextItem
from cupel.scorers._base import children_of

__all__ = [
    "MAX_SCORER_DEPTH",
    "check_batch",
    "check_nesting",
    "fail",
    "finite_in_unit_interval",
    "finite_weight",
    "is_real",
    "number",
    "require_scorer",
]


def fail(
    owner: str, field: str, rule: str, value: Any, *, typed: bool = False
) -> ConfigurationError:
    """The usual scorer refusal (:func:`~cupel._errors.refusal`), a ScorerConfigError."""
    return refusal(owner, field, rule, value, ScorerConfigError, typed=typed)


def is_real(value: object) -> bool:
    """A real number, but not a ``bool``."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(owner: str, field: str, value: Any) -> float:
    """``value`` as a float; ``bool`` and non-real values are rejected."""
    if not is_real(value):
        raise fail(owner, field, "must be a number", value, typed=True)
    try:
        return float(value)
    except OverflowError:  # an int (or Fraction) beyond the float range
        return math.inf if value > 0 else -math.inf


def finite_in_unit_interval(owner: str, field: str, value: Any) -> float:
    """``value`` as a float, which must be finite and within [0.0, 1.0]."""
    result = number(owner, field, value)
    if not (math.isfinite(result) and 0.0 <= result <= 1.0):
        raise fail(owner, field, "must be a finite number in [0.0, 1.0]", value)
    return result


def finite_weight(owner: str, field: str, value: Any, *, positive: bool = False) -> float:
    """``value`` as a float weight: non-negative (``> 0`` when ``positive``), then finite.

    >>> finite_weight("KindScorer", "w", 2), finite_weight("CompositeScorer", "w", 1, positive=True)
    (2.0, 1.0)
    >>> finite_weight("MetadataKeyScorer", "boost", 0, positive=True)
    Traceback (most recent call last):
    ...
    cupel.ScorerConfigError: MetadataKeyScorer: boost must be > 0, got 0
    """
    weight = number(owner, field, value)
    if weight <= 0.0 if positive else weight < 0.0:
        raise fail(owner, field, "must be > 0" if positive else "must be non-negative", value)
    if not math.isfinite(weight):
        raise fail(owner, field, "must be finite", value)
    return weight


def require_scorer(owner: str, field: str, scorer: Any) -> None:
    """Reject ``None`` and objects without a callable ``score(item, all_items)``."""
    if scorer is None:
        raise ScorerConfigError(f"{owner}: {field} must not be None", field=field, value=None)
    if not callable(getattr(scorer, "score", None)):
        rule = "must have a callable score(item, all_items) method"
        raise fail(owner, field, rule, scorer, typed=True)


def check_batch(owner: str, scorer: object, batch: Sized, items: Sequence[ContextItem]) -> None:
    """A child's ``score_all`` must return one score per item."""
    if len(batch) != len(items):
        raise ScorerConfigError(
            f"{owner}: {type(scorer).__name__}.score_all returned {len(batch)} scores "
            f"for {len(items)} items",
            field="score_all",
            value=scorer,
        )


MAX_SCORER_DEPTH = 64
"""How deeply scorers may nest (a leaf scorer is 1 level, a composite or scaled scorer one
more than its deepest child). Deeper graphs are refused at construction: scoring them
would exhaust Python's stack."""

_DONE = object()


def _describe(node: object) -> str:
    # Not repr(): the repr of a scorer on a cycle may itself recurse.
    return f"{type(node).__name__}@{id(node):#x}"


def check_nesting(owner: str, root: object) -> int:
    """Check the scorer graph under ``root`` (being built by ``owner``); return its depth.

    An iterative depth-first search by identity: a scorer reachable from itself raises
    :class:`~cupel.CycleError`, a graph deeper than :data:`MAX_SCORER_DEPTH`
    :class:`~cupel.ScorerConfigError`.
    """
    depth_of: dict[int, int] = {}
    path: list[object] = [root]
    on_path: set[int] = {id(root)}
    stack: list[Iterator[object]] = [iter(children_of(root))]
    deepest_child: list[int] = [0]
    while stack:
        child = next(stack[-1], _DONE)
        if child is _DONE:
            stack.pop()
            node = path.pop()
            on_path.discard(id(node))
            depth = deepest_child.pop() + 1
            depth_of[id(node)] = depth
            if deepest_child:
                deepest_child[-1] = max(deepest_child[-1], depth)
            continue
        if id(child) in on_path:
            start = next(i for i, node in enumerate(path) if node is child)
            trail = " -> ".join(_describe(node) for node in [*path[start:], child])
            raise CycleError(
                f"{owner}: cycle detected: scorer {_describe(child)} appears in its "
                f"own dependency graph ({trail})",
                field="entries" if owner == "CompositeScorer" else "inner",
                value=child,
            )
        known = depth_of.get(id(child))
        if known is not None:
            deepest_child[-1] = max(deepest_child[-1], known)
            continue
        path.append(child)
        on_path.add(id(child))
        stack.append(iter(children_of(child)))
        deepest_child.append(0)
    depth = depth_of[id(root)]
    if depth > MAX_SCORER_DEPTH:
        raise ScorerConfigError(
            f"{owner}: scorers nest {depth} levels deep, more than the limit of "
            f"{MAX_SCORER_DEPTH} (cupel.scorers.MAX_SCORER_DEPTH)",
            field="entries" if owner == "CompositeScorer" else "inner",
            value=depth,
        )
    return depth
