"""ReflexiveScorer: the caller's ``future_relevance_hint``, clamped to [0, 1]."""

from __future__ import annotations

import math
from collections.abc import Sequence

from cupel._model import ContextItem
from cupel.scorers._base import BaseScorer

__all__ = ["ReflexiveScorer"]


class ReflexiveScorer(BaseScorer):
    """Pass ``future_relevance_hint`` through, clamped to [0.0, 1.0].

    A missing or non-finite hint (NaN, ±infinity) scores 0.0 — it is not clamped.

    >>> from cupel import ContextItem
    >>> [ReflexiveScorer().score(ContextItem(content="x", tokens=1, future_relevance_hint=h), [])
    ...  for h in (None, 0.5, 1.7, -0.3, float("nan"))]
    [0.0, 0.5, 1.0, 0.0, 0.0]
    """

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        value = item.future_relevance_hint
        if value is None or not math.isfinite(value):
            return 0.0
        return min(max(value, 0.0), 1.0)
