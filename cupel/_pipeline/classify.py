"""Stage 1, Classify: split the input into pinned, scoreable and negative-token items."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import and_, not_, or_
from typing import NamedTuple

import numpy as np

from cupel._errors import ItemError, PinnedBudgetError
from cupel._fastpath import MAX_EXACT_TOKENS, TokenArray
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline.values import PINNED, TOKENS

__all__ = ["Classified", "classify"]


class Classified(NamedTuple):
    """The input, split. ``tokens`` are the scoreable items' counts; ``total_tokens``
    sums every input item's (negative ones included: ruling 3). ``token_array``:
    ``tokens`` as int64 when every count is non-negative and the sum of all of them is
    below :data:`~cupel._fastpath.MAX_EXACT_TOKENS` (what the array routes need, checked
    here once), else ``None``."""

    items: Sequence[ContextItem]
    pinned: list[ContextItem]
    scoreable: list[ContextItem]
    tokens: list[int]
    negative: list[ContextItem]
    total_tokens: int
    pinned_tokens: int
    token_array: TokenArray | None = None


def classify(items: Sequence[ContextItem], budget: ContextBudget) -> Classified:
    """Split ``items``; raise :class:`~cupel.PinnedBudgetError` when the pinned items
    alone need more than ``max_tokens - output_reserve``.

    One sweep checks that every element is a ContextItem (naming the first that is
    not), one reads the token counts and one the pinned flags; the split itself is a
    few C-level passes (``compress``), skipped when nothing is pinned or negative."""
    bad = next(compress(count(), map(not_, map(isinstance, items, repeat(ContextItem)))), None)
    if bad is not None:
        raise ItemError(
            f"Pipeline.run: items[{bad}] must be a ContextItem, got {type(items[bad]).__name__}",
            field=f"items[{bad}]",
            value=items[bad],
        )
    tokens = list(map(TOKENS, items))
    flags = list(map(PINNED, items))
    total = sum(tokens)
    pinned: list[ContextItem] = []
    negative: list[ContextItem] = []
    scoreable = list(items)
    if tokens and (any(flags) or min(tokens) < 0):
        below = [t < 0 for t in tokens]
        negative = list(compress(items, below))
        held = list(map(and_, flags, map(not_, below)))
        pinned = list(compress(items, held))
        kept = list(map(not_, map(or_, flags, below)))
        scoreable = list(compress(items, kept))
        tokens = list(compress(tokens, kept))
    pinned_tokens = sum(map(TOKENS, pinned))
    available_for_pinned = budget.max_tokens - budget.output_reserve
    if pinned_tokens > available_for_pinned:
        raise PinnedBudgetError(pinned_tokens, available_for_pinned)
    return Classified(
        items,
        pinned,
        scoreable,
        tokens,
        negative,
        total,
        pinned_tokens,
        _token_array(tokens),
    )


def _token_array(tokens: list[int]) -> TokenArray | None:
    """The scoreable ``tokens`` (never negative) as int64 when their sum is below
    :data:`~cupel._fastpath.MAX_EXACT_TOKENS` (every count then fits, and int64 sums of
    them are exact); else ``None``."""
    if not tokens or sum(tokens) >= MAX_EXACT_TOKENS:
        return None
    return np.array(tokens, dtype=np.int64)
