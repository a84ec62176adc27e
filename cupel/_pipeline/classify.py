"""Stage 1, Classify: split the input into pinned, scoreable and negative-token items."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import and_, not_, or_
from typing import Any, NamedTuple

from cupel._errors import ItemError, PinnedBudgetError
from cupel._fastpath import read_fields
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline.values import TOKENS

__all__ = ["Classified", "classify"]


class Classified(NamedTuple):
    """The input, split. ``tokens`` are the scoreable items' counts; ``total_tokens``
    sums every input item's (negative ones included: ruling 3). ``fields``: the fields
    the run's later stages read, one value per scoreable item, read in the same sweep as
    the tokens (the stages are handed them: :class:`~cupel.scorers._base.Batches`,
    Deduplicate)."""

    items: Sequence[ContextItem]
    pinned: list[ContextItem]
    scoreable: list[ContextItem]
    tokens: list[int]
    negative: list[ContextItem]
    total_tokens: int
    pinned_tokens: int
    fields: dict[str, list[Any]]


def classify(
    items: Sequence[ContextItem], budget: ContextBudget, names: Sequence[str] = ()
) -> Classified:
    """Split ``items``; raise :class:`~cupel.PinnedBudgetError` when the pinned items
    alone need more than ``max_tokens - output_reserve``.

    One sweep (:func:`~cupel._fastpath.read_fields`) checks that every element is a
    ContextItem and reads the token counts, pinned flags and the fields ``names`` that
    the run's later stages read (:meth:`Pipeline._fields_read`)."""
    read = read_fields(items, ("tokens", "pinned", *names), ContextItem)
    if read is None:
        bad = next(i for i, item in enumerate(items) if not isinstance(item, ContextItem))
        raise ItemError(
            f"Pipeline.run: items[{bad}] must be a ContextItem, got {type(items[bad]).__name__}",
            field=f"items[{bad}]",
            value=items[bad],
        )
    tokens, flags, *columns = read
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
        columns = [list(compress(column, kept)) for column in columns]
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
        dict(zip(names, columns, strict=True)),
    )
