"""Stage 6, Place: merge pinned and sliced items, enforce the overflow strategy, order them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from cupel._errors import CupelError, OverflowBudgetError
from cupel._fastpath import FloatArray
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.slice import Sliced
from cupel._pipeline.values import ITEM, SCORE, TOKENS, as_list, scored_pairs, take
from cupel.diagnostics._events import OverflowEvent
from cupel.placers._base import Placer, placed_order

__all__ = ["Merged", "OverflowCallback", "arrange", "merge"]

OverflowCallback = Callable[[OverflowEvent], Any]


class Merged(NamedTuple):
    """Pinned then sliced items (scores: 1.0 for pinned ones) after the overflow
    strategy: ``target`` is the ceiling checked, ``overflow`` the event under
    ``PROCEED``, ``dropped`` the entries ``TRUNCATE`` removed, each with whether a
    pinned item forced it out."""

    items: list[ContextItem]
    scores: FloatArray | list[Any]
    tokens: int
    target: int
    overflow: OverflowEvent | None
    dropped: list[tuple[ScoredItem, bool]]


def merge(
    classified: Classified,
    sliced: Sliced,
    budget: ContextBudget,
    strategy: OverflowStrategy,
    on_overflow: OverflowCallback | None,
) -> Merged:
    """The merged window before placement, within the target unless ``PROCEED`` let it
    overflow (``on_overflow`` then receives the event first)."""
    pinned = classified.pinned
    items = [*pinned, *sliced.items]
    scores: FloatArray | list[Any]
    if isinstance(sliced.scores, np.ndarray):
        scores = np.concatenate((np.ones(len(pinned)), sliced.scores))
    else:
        scores = [1.0] * len(pinned) + sliced.scores
    tokens = classified.pinned_tokens + sliced.tokens
    # The spec checks overflow against target_tokens and also requires the window never
    # to exceed max_tokens - output_reserve; with target above that ceiling, only the
    # lower of the two honours both (count quotas can commit past the slicer's budget).
    target = min(budget.target_tokens, budget.max_tokens - budget.output_reserve)
    if tokens <= target:
        return Merged(items, scores, tokens, target, None, [])
    if strategy is OverflowStrategy.THROW:
        raise OverflowBudgetError(tokens, target)
    if strategy is OverflowStrategy.TRUNCATE:
        kept, dropped = _truncate(scored_pairs(items, as_list(scores)), target, bool(pinned))
        kept_items = list(map(ITEM, kept))
        return Merged(
            kept_items, list(map(SCORE, kept)), sum(map(TOKENS, kept_items)), target, None, dropped
        )
    overflow = OverflowEvent(tokens - target, tuple(items), budget)
    if on_overflow is not None:
        on_overflow(overflow)
    return Merged(items, scores, tokens, target, overflow, [])


def arrange(placer: Placer, merged: Merged) -> list[ContextItem]:
    """The placer's order of the merged window: a built-in placer's positions
    (:func:`~cupel.placers._base.placed_order`, what its ``place`` computes), else
    ``placer.place`` over the ScoredItems, checked to return exactly its input."""
    items = merged.items
    order = placed_order(placer)
    if order is not None:
        return take(items, order(items, merged.scores))
    placed = list(placer.place(scored_pairs(items, as_list(merged.scores))))
    _check_placement(items, placed, placer)
    return placed


def _truncate(
    merged: list[ScoredItem], target: int, any_pinned: bool
) -> tuple[list[ScoredItem], list[tuple[ScoredItem, bool]]]:
    """Keep pinned items and, in merge order, whatever still fits ``target``; each dropped
    entry notes whether it would have fitted without the pinned items' tokens."""
    kept: list[ScoredItem] = []
    dropped: list[tuple[ScoredItem, bool]] = []
    current = 0
    pinned_total = 0
    for entry in merged:
        tokens = entry.item.tokens
        if entry.item.pinned:
            kept.append(entry)
            current += tokens
            pinned_total += tokens
        elif current + tokens <= target:
            kept.append(entry)
            current += tokens
        else:
            dropped.append((entry, any_pinned and current - pinned_total + tokens <= target))
    return kept, dropped


def _check_placement(merged: list[ContextItem], placed: list[ContextItem], placer: object) -> None:
    """The placer must return exactly the items it was given (as a multiset of objects)."""
    if len(placed) == len(merged):
        merged_ids = set(map(id, merged))
        if len(merged_ids) == len(merged) and merged_ids == set(map(id, placed)):
            return
        if Counter(map(id, placed)) == Counter(map(id, merged)):
            return
    raise CupelError(
        f"placer {placer!r} must return exactly the items it was given "
        f"(got {len(placed)} for {len(merged)})"
    )
