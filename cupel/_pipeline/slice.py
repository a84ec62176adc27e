"""Stage 5, Slice: the slicer fits the ranked candidates into the effective budget."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import compress
from typing import Any, NamedTuple

import numpy as np

from cupel._errors import CupelError
from cupel._fastpath import FloatArray
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel._pipeline.classify import Classified
from cupel._pipeline.sort import Ranking, ranked_lists
from cupel._pipeline.values import ITEM, SCORE, TOKENS, first_occurrences, scored_pairs, take
from cupel.diagnostics._outcomes import SliceOutcome
from cupel.slicers._base import Candidates, Slicer, fast_selector, floor_times, slice_detailed

__all__ = ["Sliced", "effective_budget", "effective_limits", "slice_items"]


class Sliced(NamedTuple):
    """The selection, in the Sort stage's order (ruling 13), with its scores and total.
    ``ranked`` is the ScoredItem list a slicer without an array route was given and
    ``outcome`` what it returned (cap exclusions and shortfalls included); both are
    ``None`` when the built-in slicer selected from the columns."""

    budget: ContextBudget
    items: list[ContextItem]
    scores: FloatArray | list[Any]
    tokens: int
    outcome: SliceOutcome | None = None
    ranked: list[ScoredItem] | None = None


def effective_budget(budget: ContextBudget, pinned_tokens: int) -> ContextBudget:
    """The budget the slicer sees: the spec's COMPUTE-EFFECTIVE-BUDGET.

    >>> effective_budget(ContextBudget(max_tokens=1000, target_tokens=800, output_reserve=100,
    ...                                estimation_safety_margin_percent=10.0), 50).target_tokens
    675
    """
    eff_max, eff_target = effective_limits(budget, pinned_tokens)
    return ContextBudget(max_tokens=eff_max, target_tokens=eff_target)


def effective_limits(budget: ContextBudget, pinned_tokens: int) -> tuple[int, int]:
    """:func:`effective_budget`'s ``(max_tokens, target_tokens)``, without building it."""
    slots = budget.reserved_slots
    held = pinned_tokens + sum(slots.values()) if slots else pinned_tokens
    eff_max = budget.max_tokens - budget.output_reserve - held
    if eff_max < 0:
        eff_max = 0
    eff_target = budget.target_tokens - held
    if eff_target < 0:
        eff_target = 0
    elif eff_target > eff_max:
        eff_target = eff_max
    margin = budget.estimation_safety_margin_percent
    if margin > 0:
        multiplier = 1.0 - margin / 100.0
        eff_max = floor_times(eff_max, multiplier)
        eff_target = min(floor_times(eff_target, multiplier), eff_max)
    return eff_max, eff_target


def slice_items(
    slicer: Slicer, classified: Classified, ranking: Ranking, budget: ContextBudget
) -> Sliced:
    """Run the slicer: its array fast path when it has one and the columns allow it,
    else its ``slice_detailed`` (or ``slice``) over the spec's ScoredItem list."""
    scoreable = classified.scoreable
    sliced_budget = effective_budget(budget, classified.pinned_tokens)
    found = ranking.columns
    select = fast_selector(slicer)
    if select is not None and found is not None:
        order = ranking.order
        candidates = Candidates(scoreable, order, found.tokens[order], found.scores[order])
        # Ruling 13: the selection enters the merge in the Sort stage's order.
        selected = np.zeros(len(scoreable), dtype=np.bool_)
        selected[order[select(candidates, sliced_budget)]] = True
        chosen = order[selected[order]]
        return Sliced(
            sliced_budget,
            take(scoreable, chosen.tolist()),
            found.scores[chosen],
            int(found.tokens[chosen].sum()),
        )
    ranked = scored_pairs(*ranked_lists(scoreable, ranking))
    outcome = slice_detailed(slicer, ranked, sliced_budget)
    kept = _reassociate(ranked, outcome.selected, slicer)
    items = list(map(ITEM, kept))
    return Sliced(
        sliced_budget, items, list(map(SCORE, kept)), sum(map(TOKENS, items)), outcome, ranked
    )


def _reassociate(
    ranked: list[ScoredItem], selected: Sequence[ContextItem], slicer: object
) -> list[ScoredItem]:
    """The slicer's selection with its scores, in ranked order (ruling 13). Items are
    matched by identity; the slicer must return a subset of its candidates (an object
    listed n times at most n times: :func:`first_occurrences`)."""
    ids = list(map(id, map(ITEM, ranked)))
    present = dict.fromkeys(ids)
    wanted = list(map(id, selected))
    if not all(map(present.__contains__, wanted)):
        stranger = next(item for item in selected if id(item) not in present)
        raise CupelError(
            f"slicer {slicer!r} returned an item that was not among its candidates: "
            f"{stranger.content[:60]!r}"
        )
    remaining = Counter(wanted)
    if len(remaining) != len(wanted):
        available = Counter(ids)
        if any(count > available[key] for key, count in remaining.items()):
            raise CupelError(f"slicer {slicer!r} returned the same item more than once")
    return list(compress(ranked, first_occurrences(ids, wanted)))
