"""Stage 6, Place: merge pinned and sliced items, enforce the overflow strategy, order them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from cupel._errors import CupelError, OverflowBudgetError
from cupel._fastpath import FloatArray, IntArray, float_column, sharing_fields
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.slice import Sliced
from cupel._pipeline.values import ITEM, SCORE, TOKENS, as_list, scored_pairs, take
from cupel.diagnostics._events import OverflowEvent
from cupel.placers._base import Placer, fast_orderer

__all__ = ["Merged", "arrange", "merge"]

OverflowCallback = Callable[[OverflowEvent], Any]


class Merged:
    """Pinned then sliced items (scores: 1.0 for pinned ones) after the overflow
    strategy: ``target`` is the ceiling checked, ``overflow`` the event under
    ``PROCEED``, ``dropped`` the entries ``TRUNCATE`` removed, each with whether a
    pinned item forced it out. ``parts``: the pinned items and the selection when the
    window is exactly both (nothing truncated); ``items`` is then built when first read
    (a run whose placer reads the selection's positions never builds it)."""

    __slots__ = ("_items", "dropped", "overflow", "parts", "scores", "target", "tokens")

    def __init__(
        self,
        items: list[ContextItem] | None,
        scores: FloatArray | list[Any],
        tokens: int,
        target: int,
        overflow: OverflowEvent | None,
        dropped: list[tuple[ScoredItem, bool]],
        parts: tuple[list[ContextItem], Sliced] | None = None,
    ) -> None:
        self._items = items
        self.scores = scores
        self.tokens = tokens
        self.target = target
        self.overflow = overflow
        self.dropped = dropped
        self.parts = parts

    @property
    def items(self) -> list[ContextItem]:
        """The window's items, pinned first, in merge order."""
        if self._items is None:
            if self.parts is None:  # pragma: no cover - see __init__
                raise RuntimeError("Merged without items or parts")
            pinned, sliced = self.parts
            self._items = [*pinned, *sliced.items]
        return self._items


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
    parts = (pinned, sliced)
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
        return Merged(None, scores, tokens, target, None, [], parts)
    if strategy is OverflowStrategy.THROW:
        raise OverflowBudgetError(tokens, target)
    items = [*pinned, *sliced.items]
    if strategy is OverflowStrategy.TRUNCATE:
        kept, dropped = _truncate(scored_pairs(items, as_list(scores)), target, bool(pinned))
        kept_items = list(map(ITEM, kept))
        return Merged(
            kept_items, list(map(SCORE, kept)), sum(map(TOKENS, kept_items)), target, None, dropped
        )
    overflow = OverflowEvent(tokens - target, tuple(items), budget)
    if on_overflow is not None:
        on_overflow(overflow)
    return Merged(items, scores, tokens, target, overflow, [], parts)


def arrange(
    placer: Placer, classified: Classified, sliced: Sliced, merged: Merged
) -> list[ContextItem]:
    """The placer's order: the built-in placer's array fast path when the scores are
    NaN-free floats, else ``placer.place`` checked to return exactly its input.

    When the window is exactly the pinned items and the array route's selection, the
    fast path is also given where each item came from (its origin) and the scoreable
    items (whose fields the Classify stage read), and the window is read off them: the
    merged list is not built unless something reads it."""
    chosen = sliced.chosen
    source = sliced.source
    order = fast_orderer(placer)
    array = None if order is None else float_column(merged.scores)
    if order is None or array is None:
        items = merged.items
        placed = list(placer.place(scored_pairs(items, as_list(merged.scores))))
        _check_placement(items, placed, placer)
        return placed
    if merged.parts is None or chosen is None or source is None:
        items = merged.items
        return take(items, _listed(order(items, array, None, None)))
    pinned = classified.pinned
    # where each merged item came from: pinned items first, then input positions
    origin = np.concatenate((np.arange(-len(pinned), 0), chosen))
    if not all(name in classified.fields for name in getattr(placer, "_fields", ())):
        items = merged.items
        return take(items, _listed(order(items, array, origin, None)))
    # the placer reads the fields the Classify stage read from the scoreable items
    window = _Window(pinned, source, chosen, merged)
    with sharing_fields(source, classified.fields):
        return window.take(origin, order(window, array, origin, source))


def _listed(order: list[int] | IntArray) -> list[int]:
    """A placer's positions as a list."""
    return order.tolist() if isinstance(order, np.ndarray) else order


class _Window(Sequence[ContextItem]):
    """The merged items (pinned, then ``source[chosen]``) as a sequence that builds the
    merged list (``merged.items``) only when an item beyond the pinned ones is read."""

    __slots__ = ("_chosen", "_merged", "_pinned", "_source")

    def __init__(
        self, pinned: list[ContextItem], source: list[ContextItem], chosen: IntArray, merged: Merged
    ) -> None:
        self._pinned = pinned
        self._source = source
        self._chosen = chosen
        self._merged = merged

    def __len__(self) -> int:
        return len(self._pinned) + len(self._chosen)

    @overload
    def __getitem__(self, index: int) -> ContextItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[ContextItem]: ...

    def __getitem__(self, index: int | slice) -> ContextItem | list[ContextItem]:
        if isinstance(index, slice) and index.step is None:
            start, stop, _ = index.indices(len(self))
            if stop <= len(self._pinned):
                return self._pinned[start:stop]
        elif isinstance(index, int) and 0 <= index < len(self._pinned):
            return self._pinned[index]
        return self._merged.items[index]

    def take(self, origin: IntArray, order: list[int] | IntArray) -> list[ContextItem]:
        """``[self[i] for i in order]``, each read off its origin (``origin[i]``)."""
        if isinstance(order, np.ndarray):
            positions = origin[order].tolist()
        else:
            positions = take(origin.tolist(), order)
        if not self._pinned:
            return take(self._source, positions)
        pinned, source, count = self._pinned, self._source, len(self._pinned)
        return [pinned[i + count] if i < 0 else source[i] for i in positions]


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
