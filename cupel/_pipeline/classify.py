"""Stage 1, Classify: split the input into pinned, scoreable and negative-token items."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import not_
from typing import Any, NamedTuple

import numpy as np

from cupel._errors import ItemError, PinnedBudgetError
from cupel._fastpath import MAX_EXACT_TOKENS, SharedFields, TokenArray, read_item_fields
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline.values import TOKENS

__all__ = ["Classified", "classify"]

TOKEN_FIELD = "tokens"
PINNED_FIELD = "pinned"


class Classified(NamedTuple):
    """The input, split. ``tokens`` are the scoreable items' counts; ``total_tokens``
    sums every input item's (negative ones included: ruling 3). ``fields``: the fields
    the run's built-in stages read, already read from the scoreable items (field name →
    one value per scoreable item; see :func:`~cupel._fastpath.read_item_fields`), or fewer.
    ``token_array``: ``tokens`` as int64 when every count is non-negative and the sum of
    all of them is below :data:`~cupel._fastpath.MAX_EXACT_TOKENS` (what the array
    routes need, checked here once), else ``None``."""

    items: Sequence[ContextItem]
    pinned: list[ContextItem]
    scoreable: list[ContextItem]
    tokens: list[int]
    negative: list[ContextItem]
    total_tokens: int
    pinned_tokens: int
    fields: dict[str, list[Any]]
    token_array: TokenArray | None = None


def classify(
    items: Sequence[ContextItem], budget: ContextBudget, names: Sequence[str] = ()
) -> Classified:
    """Split ``items``; raise :class:`~cupel.PinnedBudgetError` when the pinned items
    alone need more than ``max_tokens - output_reserve``. ``names``: item fields the
    later stages will read, read here in the same sweep as the tokens and pinned flags."""
    pinned, scoreable, tokens, negative, total, fields, array = _split(items, names)
    pinned_tokens = sum(map(TOKENS, pinned))
    available_for_pinned = budget.max_tokens - budget.output_reserve
    if pinned_tokens > available_for_pinned:
        raise PinnedBudgetError(pinned_tokens, available_for_pinned)
    return Classified(
        items, pinned, scoreable, tokens, negative, total, pinned_tokens, fields, array
    )


_Split = tuple[
    list[ContextItem],
    list[ContextItem],
    list[int],
    list[ContextItem],
    int,
    dict[str, list[Any]],
    TokenArray | None,
]


def _split(items: Sequence[ContextItem], names: Sequence[str]) -> _Split:
    """(pinned, scoreable, scoreable tokens, negative-token, total tokens, the scoreable
    items' ``names`` fields).

    When every element is a ContextItem and no token count is negative, this is one
    chunked sweep checking the types and reading the fields (exact ContextItems' from
    their ``__dict__`` s: :func:`~cupel._fastpath.read_item_fields`) and a few C-level
    passes (``compress``); otherwise the per-item loop, which also names the first
    element that is not a ContextItem (and reads no field for later stages).
    """
    read = read_item_fields(
        items, (TOKEN_FIELD, PINNED_FIELD, *names), ContextItem, dict_class=ContextItem
    )
    if read is not None:
        tokens, flags, *columns = read
        array, total = _token_array(tokens)
        if array is not None or not tokens or min(tokens) >= 0:
            if total is None:
                total = sum(tokens)
            fields = SharedFields(zip(names, columns, strict=True))
            if not any(flags):
                return [], list(items), tokens, [], total, fields, array
            unpinned = list(map(not_, flags))
            return (
                list(compress(items, flags)),
                list(compress(items, unpinned)),
                list(compress(tokens, unpinned)),
                [],
                total,
                SharedFields(
                    (name, list(compress(column, unpinned))) for name, column in fields.items()
                ),
                None if array is None else array[np.array(unpinned, dtype=np.bool_)],
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
    return pinned, scoreable, scoreable_tokens, negative, total, SharedFields(), None


def _token_array(tokens: list[int]) -> tuple[TokenArray | None, int | None]:
    """``tokens`` as int64 with their exact sum, when every count is non-negative and the
    sum is below :data:`~cupel._fastpath.MAX_EXACT_TOKENS`; else ``(None, None)`` (the
    caller then checks and sums the Python ints). The int64 sum is exact: each count is
    at most ``MAX_EXACT_TOKENS // n`` when it is taken."""
    n = len(tokens)
    if not n:
        return None, None
    try:
        array = np.fromiter(tokens, dtype=np.int64, count=n)
    except (OverflowError, TypeError, ValueError):
        return None, None
    if int(array.min()) < 0 or int(array.max()) > MAX_EXACT_TOKENS // n:
        return None, None
    total = int(array.sum())
    if total >= MAX_EXACT_TOKENS:
        return None, None
    return array, total
