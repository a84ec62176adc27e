"""CompositeScorer: the weighted average of several child scorers."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cupel._errors import CycleError, ScorerConfigError
from cupel._model import ContextItem
from cupel.scorers._base import (
    ArrayScorer,
    FloatArray,
    Scorer,
    batch_scores,
    float_array,
    score_all,
)
from cupel.scorers._validation import check_batch, fail, number, require_scorer

__all__ = ["CompositeScorer"]


def _children(node: object) -> tuple[object, ...]:
    """What ``node`` delegates to, via its ``children()`` method if it has one."""
    method = getattr(node, "children", None)
    return tuple(method()) if callable(method) else ()


_DONE = object()


def _describe(node: object) -> str:
    # Not repr(): the repr of a scorer on a cycle may itself recurse.
    return f"{type(node).__name__}@{id(node):#x}"


def _check_acyclic(root: object) -> None:
    """Depth-first search by identity; raise :class:`CycleError` on a back edge.

    ``root`` (the composite being built) is on the path, so a child whose ``children()``
    lead back to it is a cycle too. Iterative, so deep nesting cannot exhaust the stack.
    """
    visited: set[int] = {id(root)}
    path: list[object] = [root]
    on_path: set[int] = {id(root)}
    stack: list[Iterator[object]] = [iter(_children(root))]
    while stack:
        child = next(stack[-1], _DONE)
        if child is _DONE:
            stack.pop()
            on_path.discard(id(path.pop()))
            continue
        if id(child) in on_path:
            start = next(i for i, node in enumerate(path) if node is child)
            trail = " -> ".join(_describe(node) for node in [*path[start:], child])
            raise CycleError(
                f"CompositeScorer: cycle detected: scorer {_describe(child)} appears in its "
                f"own dependency graph ({trail})",
                field="entries",
                value=child,
            )
        if id(child) in visited:
            continue
        visited.add(id(child))
        path.append(child)
        on_path.add(id(child))
        stack.append(iter(_children(child)))


class CompositeScorer(ArrayScorer):
    """``sum(child.score(item, all_items) * weight)`` with weights normalized to sum to 1.

    ``entries`` is a non-empty sequence of ``(scorer, weight)`` pairs; each weight must be
    a finite number > 0 and only their ratios matter. Children are evaluated in entry
    order. Nesting is allowed; a scorer reachable from itself (through ``children()``,
    compared by identity) raises :class:`~cupel.CycleError`. The result is always the
    normalized weighted average, also for multiplier-style children such as
    :class:`~cupel.scorers.MetadataKeyScorer`.

    >>> from cupel import ContextItem
    >>> from cupel.scorers import KindScorer, ReflexiveScorer
    >>> scorer = CompositeScorer([(KindScorer(), 3), (ReflexiveScorer(), 1)])
    >>> [weight for _, weight in scorer.entries]
    [0.75, 0.25]
    >>> item = ContextItem(content="x", tokens=1, kind="Memory", future_relevance_hint=0.4)
    >>> scorer.score(item, [item])
    0.7000000000000001
    """

    def __init__(self, entries: Sequence[tuple[Scorer, float]]) -> None:
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            raise ScorerConfigError(
                f"CompositeScorer: entries must be a sequence of (scorer, weight) pairs, "
                f"got {type(entries).__name__} {entries!r}",
                field="entries",
                value=entries,
            )
        if len(entries) == 0:
            raise fail("CompositeScorer", "entries", "must hold at least one scorer entry", entries)
        scorers: list[Scorer] = []
        weights: list[float] = []
        total = 0.0
        for index, entry in enumerate(entries):
            pair: Any = entry
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise fail(
                    "CompositeScorer", f"entry {index}", "must be a (scorer, weight) pair", pair
                )
            scorer, raw_weight = pair
            require_scorer("CompositeScorer", f"scorer of entry {index}", scorer)
            field = f"weight of entry {index}"
            weight = number("CompositeScorer", field, raw_weight)
            if weight <= 0.0:
                raise fail("CompositeScorer", field, "must be > 0", raw_weight)
            if not math.isfinite(weight):
                raise fail("CompositeScorer", field, "must be finite", raw_weight)
            scorers.append(scorer)
            weights.append(weight)
            total += weight
        if not math.isfinite(total):
            raise ScorerConfigError(
                f"CompositeScorer: the sum of the entry weights must be finite, got {total!r}",
                field="entries",
                value=entries,
            )
        self._scorers: tuple[Scorer, ...] = tuple(scorers)
        self._weights: tuple[float, ...] = tuple(w / total for w in weights)
        _check_acyclic(self)

    @property
    def entries(self) -> tuple[tuple[Scorer, float], ...]:
        """The children with their normalized weights, in evaluation order."""
        return tuple(zip(self._scorers, self._weights, strict=True))

    def children(self) -> tuple[Scorer, ...]:
        return self._scorers

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        result = 0.0
        for scorer, weight in zip(self._scorers, self._weights, strict=True):
            result += scorer.score(item, all_items) * weight
        return result

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray | None:
        """The weighted sum as an array, accumulated child by child in entry order
        (``0.0 + s1 * w1 + s2 * w2 ...``, the same IEEE 754 operations as the per-item
        loop); ``None`` when a child's scores are not all floats."""
        result = np.zeros(len(items))
        for scorer, weight in zip(self._scorers, self._weights, strict=True):
            batch = batch_scores(scorer, items)
            check_batch("CompositeScorer", scorer, batch, items)
            scores = float_array(batch)
            if scores is None:
                return None
            with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN, as in Python
                result += scores * weight
        return result

    def _score_list(self, items: Sequence[ContextItem]) -> list[float]:
        result = [0.0] * len(items)
        for scorer, weight in zip(self._scorers, self._weights, strict=True):
            batch = score_all(scorer, items)
            check_batch("CompositeScorer", scorer, batch, items)
            for i, value in enumerate(batch):
                result[i] += value * weight
        return result

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        return f"CompositeScorer({list(self.entries)!r})"
