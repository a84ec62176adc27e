"""The pipeline against a literal transcription of the spec's pseudocode (hypothesis).

The reference below is written from the specification's chapters alone, one function per
pseudocode block (CLASSIFY, the rank/kind/reflexive scorers, COMPOSITE-SCORE, DEDUPLICATE,
SORT, COMPUTE-EFFECTIVE-BUDGET, GREEDY-SLICE, KNAPSACK-SLICE, QUOTA-SLICE with
DISTRIBUTE-BUDGET, PLACE with HANDLE-OVERFLOW, CHRONOLOGICAL-PLACE, U-SHAPED-PLACE), item
by item and without any of cupel's batch or array shortcuts. The pipeline must select the
same items in the same order, with the same token total, and raise where the reference
raises. Sliced items are re-associated with their scores by identity (spec: Stage 5
conformance notes) and enter the merge in the Sort stage's order, score descending
(spec: Stage 6 conformance notes; DESIGN.md ruling 13), whatever order the slicer
returned them in.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    OverflowBudgetError,
    OverflowStrategy,
    PinnedBudgetError,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    UShapedPlacer,
)
from cupel._model import ascii_fold

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
KINDS = ("Message", "message", "Document", "ToolOutput", "Memory", "SystemPrompt", "Scratch")
DEFAULT_KIND_WEIGHTS = {
    "systemprompt": 1.0,
    "memory": 0.8,
    "tooloutput": 0.6,
    "document": 0.4,
    "message": 0.2,
}

Scored = tuple[ContextItem, float]
RefScorer = Callable[[ContextItem, Sequence[ContextItem]], float]


class PinnedError(Exception):
    pass


class OverflowError_(Exception):
    pass


# -- scorers ------------------------------------------------------------------------------
def rank_score(key: Any, keys: Sequence[Any]) -> float:
    if key is None:
        return 0.0
    count, rank = 0, 0
    for other in keys:
        if other is None:
            continue
        count += 1
        if other < key:
            rank += 1
    if count <= 1:
        return 1.0
    return rank / (count - 1)


def recency(item: ContextItem, all_items: Sequence[ContextItem]) -> float:
    return rank_score(item.timestamp, [i.timestamp for i in all_items])


def priority(item: ContextItem, all_items: Sequence[ContextItem]) -> float:
    return rank_score(item.priority, [i.priority for i in all_items])


def kind(item: ContextItem, all_items: Sequence[ContextItem]) -> float:
    return DEFAULT_KIND_WEIGHTS.get(ascii_fold(str(item.kind)), 0.0)


def reflexive(item: ContextItem, all_items: Sequence[ContextItem]) -> float:
    value = item.future_relevance_hint
    if value is None or not math.isfinite(value):
        return 0.0
    return min(max(value, 0.0), 1.0)


def composite(entries: list[tuple[RefScorer, float]]) -> RefScorer:
    total = sum(w for _, w in entries)
    normalized = [(s, w / total) for s, w in entries]

    def score(item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        result = 0.0
        for scorer, weight in normalized:
            result = result + scorer(item, all_items) * weight
        return result

    return score


# -- slicers ------------------------------------------------------------------------------
def greedy_slice(scored: list[Scored], target: int) -> list[ContextItem]:
    if not scored or target <= 0:
        return []
    densities = []
    for i, (item, score) in enumerate(scored):
        densities.append((sys.float_info.max if item.tokens == 0 else score / item.tokens, i))
    densities.sort(key=lambda d: (-d[0], d[1]))
    remaining, selected = target, []
    for _, index in densities:
        item = scored[index][0]
        if item.tokens == 0:
            selected.append(item)
        elif item.tokens <= remaining:
            selected.append(item)
            remaining -= item.tokens
    return selected


def knapsack_slice(scored: list[Scored], target: int, bucket: int) -> list[ContextItem]:
    if not scored or target <= 0:
        return []
    zero = [item for item, _ in scored if item.tokens == 0]
    candidates = [(item, score) for item, score in scored if item.tokens > 0]
    if not candidates:
        return zero
    capacity = target // bucket
    if capacity == 0:
        return zero
    weights = [-(-item.tokens // bucket) for item, _ in candidates]
    values = [max(0, math.floor(score * 10000)) for _, score in candidates]
    dp = [0] * (capacity + 1)
    keep = [[False] * (capacity + 1) for _ in candidates]
    for i, (dw, dv) in enumerate(zip(weights, values, strict=True)):
        for w in range(capacity, dw - 1, -1):
            with_item = dp[w - dw] + dv
            if with_item > dp[w]:
                dp[w] = with_item
                keep[i][w] = True
    selected, remaining = [], capacity
    for i in range(len(candidates) - 1, -1, -1):
        if keep[i][remaining]:
            selected.append(candidates[i][0])
            remaining -= weights[i]
    return zero + selected


def quota_slice(
    scored: list[Scored], target: int, quotas: dict[str, tuple[float, float]]
) -> list[ContextItem]:
    if not scored or target <= 0:
        return []
    partitions: dict[str, list[Scored]] = {}
    for entry in scored:
        partitions.setdefault(ascii_fold(str(entry[0].kind)), []).append(entry)
    mass = {k: sum(i.tokens for i, _ in v) for k, v in partitions.items()}
    require = {k: math.floor(r / 100.0 * target) for k, (r, _) in quotas.items()}
    cap = {k: math.floor(c / 100.0 * target) for k, (_, c) in quotas.items()}
    unassigned = max(0, target - sum(require.values()))
    total_mass = sum(mass[k] for k in partitions if cap.get(k, target) > require.get(k, 0))
    budgets = {}
    for k in partitions:
        req, kcap = require.get(k, 0), cap.get(k, target)
        proportional = 0
        if total_mass > 0 and kcap > req:
            proportional = unassigned * mass[k] // total_mass
        budgets[k] = min(req + proportional, kcap)
    selected: list[ContextItem] = []
    for k, items in partitions.items():
        if budgets[k] <= 0:
            continue
        selected += greedy_slice(items, budgets[k])  # inner: greedy (max = cap, unused)
    return selected


# -- placers ------------------------------------------------------------------------------
def chronological(merged: list[Scored]) -> list[ContextItem]:
    order = sorted(
        range(len(merged)),
        key=lambda i: (merged[i][0].timestamp is None, merged[i][0].timestamp or T0, i),
    )
    return [merged[i][0] for i in order]


def u_shaped(merged: list[Scored]) -> list[ContextItem]:
    n = len(merged)
    ranked = sorted(range(n), key=lambda i: (-merged[i][1], i))
    result: list[Any] = [None] * n
    left, right = 0, n - 1
    for rank, index in enumerate(ranked):
        if rank % 2 == 0:
            result[left] = merged[index][0]
            left += 1
        else:
            result[right] = merged[index][0]
            right -= 1
    return result


# -- the pipeline -------------------------------------------------------------------------
def reference_run(
    items: list[ContextItem],
    budget: ContextBudget,
    scorer: RefScorer,
    slicer: Callable[[list[Scored], int], list[ContextItem]],
    placer: Callable[[list[Scored]], list[ContextItem]],
    dedup: bool,
    strategy: OverflowStrategy,
) -> list[ContextItem]:
    pinned = [i for i in items if i.tokens >= 0 and i.pinned]
    scoreable = [i for i in items if i.tokens >= 0 and not i.pinned]
    pinned_tokens = sum(i.tokens for i in pinned)
    if pinned_tokens > budget.max_tokens - budget.output_reserve:
        raise PinnedError
    scored = [(item, scorer(item, scoreable)) for item in scoreable]
    if dedup and scored:
        best: dict[str, int] = {}
        for i, (item, score) in enumerate(scored):
            if item.content not in best or score > scored[best[item.content]][1]:
                best[item.content] = i
        scored = [s for i, s in enumerate(scored) if best[s[0].content] == i]
    ordered = [scored[i] for i in sorted(range(len(scored)), key=lambda i: (-scored[i][1], i))]
    reserved = sum(budget.reserved_slots.values())
    eff_max = max(0, budget.max_tokens - budget.output_reserve - pinned_tokens - reserved)
    eff_target = min(max(0, budget.target_tokens - pinned_tokens - reserved), eff_max)
    if budget.estimation_safety_margin_percent > 0:
        multiplier = 1.0 - budget.estimation_safety_margin_percent / 100.0
        eff_max = math.floor(eff_max * multiplier)
        eff_target = min(math.floor(eff_target * multiplier), eff_max)
    sliced = slicer(ordered, eff_target)
    # walk the sorted list, keeping what the slicer selected (an object listed twice
    # counts twice)
    remaining: dict[int, int] = {}
    for item in sliced:
        remaining[id(item)] = remaining.get(id(item), 0) + 1
    sliced_scored = []
    for item, score in ordered:
        if remaining.get(id(item), 0) > 0:
            remaining[id(item)] -= 1
            sliced_scored.append((item, score))
    merged = [(p, 1.0) for p in pinned] + sliced_scored
    merged_tokens = sum(i.tokens for i, _ in merged)
    if merged_tokens > budget.target_tokens:
        if strategy is OverflowStrategy.THROW:
            raise OverflowError_
        if strategy is OverflowStrategy.TRUNCATE:
            kept, current = [], 0
            for item, score in merged:
                if item.pinned or current + item.tokens <= budget.target_tokens:
                    kept.append((item, score))
                    current += item.tokens
            merged = kept
    return placer(merged)


# -- the comparison -----------------------------------------------------------------------
SCORERS: list[tuple[Any, RefScorer]] = [
    (
        CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
        composite([(recency, 3.0), (kind, 1.0)]),
    ),
    (
        CompositeScorer([(PriorityScorer(), 1.0), (ReflexiveScorer(), 2.0)]),
        composite([(priority, 1.0), (reflexive, 2.0)]),
    ),
    (ReflexiveScorer(), reflexive),
    (KindScorer(), kind),
]
QUOTAS = {"message": (20.0, 60.0), "document": (0.0, 30.0)}
SLICERS: list[tuple[Any, Callable[[list[Scored], int], list[ContextItem]]]] = [
    (GreedySlice(), greedy_slice),
    (KnapsackSlice(bucket_size=7), lambda s, t: knapsack_slice(s, t, 7)),
    (KnapsackSlice(bucket_size=1), lambda s, t: knapsack_slice(s, t, 1)),
    (
        QuotaSlice(
            GreedySlice(), [QuotaEntry("Message", 20.0, 60.0), QuotaEntry("Document", 0.0, 30.0)]
        ),
        lambda s, t: quota_slice(s, t, QUOTAS),
    ),
]
PLACERS: list[tuple[Any, Callable[[list[Scored]], list[ContextItem]]]] = [
    (ChronologicalPlacer(), chronological),
    (UShapedPlacer(), u_shaped),
]

items_strategy = st.lists(
    st.builds(
        lambda content, tokens, kind, minute, prio, hint, pinned: ContextItem(
            content=content,
            tokens=tokens,
            kind=kind,
            timestamp=None if minute is None else T0 + timedelta(minutes=minute),
            priority=prio,
            future_relevance_hint=hint,
            pinned=pinned,
        ),
        content=st.sampled_from([f"c{i}" for i in range(20)]),
        tokens=st.integers(min_value=-3, max_value=90),
        kind=st.sampled_from(KINDS),
        minute=st.none() | st.integers(0, 20),
        prio=st.none() | st.integers(-2, 6),
        hint=st.none() | st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1.5]),
        pinned=st.sampled_from([False, False, False, False, True]),
    ),
    max_size=25,
)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    max_tokens = draw(st.integers(0, 500))
    target = draw(st.integers(0, max_tokens))
    return {
        "items": draw(items_strategy),
        "budget": ContextBudget(
            max_tokens=max_tokens,
            target_tokens=target,
            output_reserve=draw(st.integers(0, max_tokens // 3)),
            reserved_slots={"Memory": draw(st.integers(0, 20))},
            estimation_safety_margin_percent=draw(st.sampled_from([0.0, 0.0, 5.0, 12.5])),
        ),
        "scorer": draw(st.sampled_from(SCORERS)),
        "slicer": draw(st.sampled_from(SLICERS)),
        "placer": draw(st.sampled_from(PLACERS)),
        "dedup": draw(st.booleans()),
        "strategy": draw(st.sampled_from(list(OverflowStrategy))),
    }


def _outcome(run: Callable[[], list[ContextItem]]) -> tuple[str, list[int]]:
    try:
        return "ok", [id(item) for item in run()]
    except (PinnedBudgetError, PinnedError):
        return "pinned", []
    except (OverflowBudgetError, OverflowError_):
        return "overflow", []


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_pipeline_matches_the_spec_pseudocode(case: dict[str, Any]) -> None:
    (scorer, ref_scorer), (slicer, ref_slicer), (placer, ref_placer) = (
        case["scorer"],
        case["slicer"],
        case["placer"],
    )
    pipeline = Pipeline(
        scorer,
        slicer,
        placer,
        deduplication=case["dedup"],
        overflow_strategy=case["strategy"],
    )
    items, budget = case["items"], case["budget"]
    expected = _outcome(
        lambda: reference_run(
            items, budget, ref_scorer, ref_slicer, ref_placer, case["dedup"], case["strategy"]
        )
    )
    assert _outcome(lambda: pipeline.run(items, budget, on_overflow=lambda e: None).items) == (
        expected
    )
    assert _outcome(lambda: pipeline.dry_run(items, budget, on_overflow=lambda e: None).items) == (
        expected
    )
