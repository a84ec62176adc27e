"""ScaledScorer: min-max normalization of an inner scorer over the pass."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import numpy as np

from cupel._model import ContextItem
from cupel.scorers._base import ArrayScorer, Batches, FloatArray, Scorer, as_score
from cupel.scorers._validation import check_batch, check_nesting, require_scorer

__all__ = ["ScaledScorer"]


class ScaledScorer(ArrayScorer):
    """``(raw - min) / (max - min)`` of the inner scorer's scores over ``all_items``.

    When every inner score is equal (including a pass of one item) or ``all_items`` is
    empty, the result is exactly 0.5. The scored item's raw score is found by identity in
    ``all_items``; an item not in ``all_items`` scores NaN.

    Non-finite inner scores follow the spec's comparisons: NaN never becomes the min or
    max and scales to NaN itself (all-NaN passes give NaN everywhere); an infinite min or
    max makes the finite items scale to NaN or 0.0/1.0 as IEEE 754 arithmetic dictates.

    ``score_all`` runs the inner scorer's batch once per pass (O(N) plus the inner cost).

    >>> from cupel import ContextItem
    >>> from cupel.scorers import ReflexiveScorer
    >>> items = [ContextItem(content=str(h), tokens=1, future_relevance_hint=h)
    ...          for h in (0.3, 0.4, 0.5)]
    >>> ScaledScorer(ReflexiveScorer()).score_all(items)
    [0.0, 0.5000000000000001, 1.0]
    """

    def __init__(self, inner: Scorer) -> None:
        require_scorer("ScaledScorer", "inner", inner)
        self._inner = inner
        check_nesting("ScaledScorer", self)

    @property
    def inner(self) -> Scorer:
        """The wrapped scorer."""
        return self._inner

    def children(self) -> tuple[Scorer, ...]:
        return (self._inner,)

    def _with_children(self, children: tuple[Scorer, ...]) -> ScaledScorer:
        copied = copy.copy(self)
        (copied._inner,) = children
        return copied

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if len(all_items) == 0:
            return 0.5
        raw = math.nan
        scores: list[float] = []
        for other in all_items:
            s = as_score(self._inner.score(other, all_items), self._inner, other)
            scores.append(s)
            if other is item:
                raw = s
        # min() and max() keep the first of equal bounds, as the spec's strict < / > scan
        valid = [s for s in scores if not math.isnan(s)]
        low, high = min(valid, default=math.inf), max(valid, default=-math.inf)
        return 0.5 if high == low else (raw - low) / (high - low)

    def _scores_in(self, batches: Batches) -> FloatArray:
        """The min-max scaling of the inner batch. The bounds are the first minimum and
        maximum of the non-NaN scores, what the spec's strict ``<`` / ``>`` scan keeps
        (0.0 or -0.0 included; with none, ``inf`` / ``-inf``); like ``score``, an object
        listed twice takes the raw score of its last position."""
        items = batches.items
        raw = batches.of(self._inner)
        check_batch("ScaledScorer", self._inner, raw, items)
        n = len(raw)
        if n == 0:
            return np.zeros(0)
        valid = raw[~np.isnan(raw)]
        low = float(valid[valid.argmin()]) if len(valid) else math.inf
        high = float(valid[valid.argmax()]) if len(valid) else -math.inf
        if high == low:
            return np.full(n, 0.5)
        last = dict(zip(map(id, items), range(n), strict=True))
        if len(last) != n:  # an object listed twice: its last position's raw score
            raw = raw[[last[id(item)] for item in items]]
        with np.errstate(invalid="ignore"):  # inf - inf is NaN, as in the definition
            return (raw - low) / (high - low)
