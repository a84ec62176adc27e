"""Stage 1, Classify: split the input into pinned, scoreable and negative-token items."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import not_
from typing import NamedTuple

from cupel._errors import ItemError, PinnedBudgetError
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline.values import PINNED, TOKENS

__all__ = ["Classified", "classify"]


class Classified(NamedTuple):
    """The input, split. ``tokens`` are the scoreable items' counts; ``total_tokens``
    sums every input item's (negative ones included: ruling 3)."""

    items: Sequence[ContextItem]
    pinned: list[ContextItem]
    scoreable: list[ContextItem]
    tokens: list[int]
    negative: list[ContextItem]
    total_tokens: int
    pinned_tokens: int


def classify(items: Sequence[ContextItem], budget: ContextBudget) -> Classified:
    """Split ``items``; raise :class:`~cupel.PinnedBudgetError` when the pinned items
    alone need more than ``max_tokens - output_reserve``."""
    pinned, scoreable, tokens, negative, total = _split(items)
    pinned_tokens = sum(map(TOKENS, pinned))
    available_for_pinned = budget.max_tokens - budget.output_reserve
    if pinned_tokens > available_for_pinned:
        raise PinnedBudgetError(pinned_tokens, available_for_pinned)
    return Classified(items, pinned, scoreable, tokens, negative, total, pinned_tokens)


def _split(
    items: Sequence[ContextItem],
) -> tuple[list[ContextItem], list[ContextItem], list[int], list[ContextItem], int]:
    """(pinned, scoreable, scoreable tokens, negative-token, total tokens).

    When every element is a ContextItem and no token count is negative, this is a few
    C-level passes (``map``/``compress``); otherwise the per-item loop, which also names
    the first element that is not a ContextItem.
    """
    if all(issubclass(kind, ContextItem) for kind in set(map(type, items))):
        tokens = list(map(TOKENS, items))
        if not tokens or min(tokens) >= 0:
            flags = list(map(PINNED, items))
            if not any(flags):
                return [], list(items), tokens, [], sum(tokens)
            unpinned = list(map(not_, flags))
            return (
                list(compress(items, flags)),
                list(compress(items, unpinned)),
                list(compress(tokens, unpinned)),
                [],
                sum(tokens),
            )
    pinned: list[ContextItem] = []
    scoreable: list[ContextItem] = []
    scoreable_tokens: list[int] = []
    negative: list[ContextItem] = []
    total = 0
    for index, item in enumerate(items):
        if not isinstance(item, ContextItem):
            raise ItemError(
                f"Pipeline.run: items[{index}] must be a ContextItem, got {type(item).__name__}",
                field=f"items[{index}]",
                value=item,
            )
        tokens_of_item = item.tokens
        total += tokens_of_item
        if tokens_of_item < 0:
            negative.append(item)
        elif item.pinned:
            pinned.append(item)
        else:
            scoreable.append(item)
            scoreable_tokens.append(tokens_of_item)
    return pinned, scoreable, scoreable_tokens, negative, total
