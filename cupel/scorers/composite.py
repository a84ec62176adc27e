"""CompositeScorer: the weighted average of several child scorers."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from cupel._errors import ScorerConfigError
from cupel._model import ContextItem
from cupel._params import Positive
from cupel.scorers._base import ArrayScorer, Batches, FloatArray, Scorer, as_score
from cupel.scorers._validation import (
    check_batch,
    check_nesting,
    fail,
    finite_weight,
    require_scorer,
)

__all__ = ["CompositeScorer"]


class CompositeScorer(ArrayScorer):
    """``sum(child.score(item, all_items) * weight)`` with weights normalized to sum to 1.

    ``entries`` is a non-empty sequence of ``(scorer, weight)`` pairs; each weight must be
    a finite number > 0 and only their ratios matter. Children are evaluated in entry
    order and may nest up to :data:`~cupel.scorers.MAX_SCORER_DEPTH` levels; a scorer
    reachable from itself raises :class:`~cupel.CycleError`. The result is the normalized
    weighted average, also for multiplier children (:class:`~cupel.scorers.MetadataKeyScorer`).

    >>> from cupel import ContextItem
    >>> from cupel.scorers import KindScorer, ReflexiveScorer
    >>> scorer = CompositeScorer([(KindScorer(), 3), (ReflexiveScorer(), 1)])
    >>> [weight for _, weight in scorer.entries]
    [0.75, 0.25]
    >>> item = ContextItem(content="x", tokens=1, kind="Memory", future_relevance_hint=0.4)
    >>> scorer.score(item, [item])
    0.7000000000000001
    """

    def __init__(
        self, entries: Annotated[Sequence[tuple[Scorer, Positive]], Field(min_length=1)]
    ) -> None:
        if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
            rule = "must be a sequence of (scorer, weight) pairs"
            raise fail("CompositeScorer", "entries", rule, entries, typed=True)
        if len(entries) == 0:
            raise fail("CompositeScorer", "entries", "must hold at least one scorer entry", entries)
        scorers: list[Scorer] = []
        weights: list[float] = []
        for index, entry in enumerate(entries):
            pair: Any = entry
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                rule = "must be a (scorer, weight) pair"
                raise fail("CompositeScorer", f"entry {index}", rule, pair)
            scorer, raw_weight = pair
            require_scorer("CompositeScorer", f"scorer of entry {index}", scorer)
            field = f"weight of entry {index}"
            weight = finite_weight("CompositeScorer", field, raw_weight, positive=True)
            scorers.append(scorer)
            weights.append(weight)
        total = sum(weights, 0.0)
        if not math.isfinite(total):
            raise ScorerConfigError(
                f"CompositeScorer: the sum of the entry weights must be finite, got {total!r}",
                field="entries",
                value=entries,
            )
        self._scorers: tuple[Scorer, ...] = tuple(scorers)
        self._weights: tuple[float, ...] = tuple(w / total for w in weights)
        check_nesting("CompositeScorer", self)

    @property
    def entries(self) -> tuple[tuple[Scorer, float], ...]:
        """The children with their normalized weights, in evaluation order."""
        return tuple(zip(self._scorers, self._weights, strict=True))

    def children(self) -> tuple[Scorer, ...]:
        return self._scorers

    def _with_children(self, children: tuple[Scorer, ...]) -> CompositeScorer:
        """The same weights over ``children`` (the weights are not re-normalised)."""
        copied = copy.copy(self)
        copied._scorers = tuple(children)
        return copied

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        result = 0.0
        for scorer, weight in zip(self._scorers, self._weights, strict=True):
            result += as_score(scorer.score(item, all_items), scorer, item) * weight
        return result

    def _scores_in(self, batches: Batches) -> FloatArray:
        """The weighted sum, accumulated child by child in entry order (the per-item loop's
        IEEE 754 operations); each distinct child is scored once per pass (``batches``)."""
        items = batches.items
        result = np.zeros(len(items))
        scaled = np.empty(len(items))  # one buffer for every child's ``s * w``
        for scorer, weight in zip(self._scorers, self._weights, strict=True):
            batch = batches.of(scorer)
            check_batch("CompositeScorer", scorer, batch, items)
            with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN, as in Python
                np.multiply(batch, weight, out=scaled)
                result += scaled
        return result
