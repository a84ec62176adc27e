"""RecencyWindowSlice: the documented rule, both routes, the reasons and the errors."""

from __future__ import annotations

import math
import pickle
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from candidates_testkit import candidates_of
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ContextBudget,
    ContextItem,
    GreedySlice,
    ItemError,
    OutsideWindow,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
    ScoredItem,
    SlicerConfigError,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def reference(
    scored: list[ScoredItem],
    target: int,
    *,
    block_key: str | None = "cupel:turn",
    scored_share: float = 0.0,
    low_water: float | None = None,
    partial_blocks: bool = False,
) -> list[ContextItem]:
    """The rule as the module documentation states it, step by step."""
    if not scored or target <= 0:
        return []
    n = len(scored)
    full = target
    if low_water is not None and sum(s.item.tokens for s in scored) > target:
        target = math.floor(low_water * target)
    dated = [i for i in range(n) if scored[i].item.timestamp is not None]
    undated = [i for i in range(n) if scored[i].item.timestamp is None]
    # newest first; equal timestamps keep the given (Sort stage) order
    dated.sort(key=lambda i: (-scored[i].item.timestamp.timestamp(), i))  # type: ignore[union-attr]
    order = dated + undated

    def block(i: int) -> object:
        if block_key is None or block_key not in scored[i].item.metadata:
            return ("alone", i)
        value = scored[i].item.metadata[block_key]
        return (type(value), value)

    def walk(
        start: int, budget: int, taken: set[int], partial_blocks: bool = partial_blocks
    ) -> tuple[list[int], int]:
        out: list[int] = []
        index = start
        while index < len(order):
            members = [order[index]]
            following = index + 1
            while following < len(order) and block(order[following]) == block(order[index]):
                members.append(order[following])
                following += 1
            members = [m for m in members if m not in taken]
            need = sum(scored[m].item.tokens for m in members)
            if need > budget:
                if partial_blocks and len(members) > 1:  # the head and the newest that fit
                    head, room, tail = members[-1], budget - scored[members[-1]].item.tokens, []
                    for m in members[:-1]:
                        if scored[m].item.tokens > room:
                            break
                        tail.append(m)
                        room -= scored[m].item.tokens
                    if tail:
                        return out + tail + [head], following
                return out, index
            out += members
            budget -= need
            index = following
        return out, len(order)

    def newest_first(budget: int) -> tuple[list[int], int]:
        """The walk; after a low-water refill that takes nothing, the newest block alone
        when it fits the full target."""
        out, cut = walk(0, budget, set())
        if out or target == full:
            return out, cut
        members = [order[0]]
        while len(members) < len(order) and block(order[len(members)]) == block(order[0]):
            members.append(order[len(members)])
        following = len(members)
        if partial_blocks and len(members) > 2:  # the newest item and the head
            members = [members[0], members[-1]]
        if sum(scored[m].item.tokens for m in members) <= full:
            return members, following
        return out, cut

    if not scored_share:
        window, _ = newest_first(target)
        return [scored[i].item for i in window]
    reserve = math.floor(scored_share * target)
    window, cut = walk(0, target - reserve, set(), partial_blocks=False)
    if not window:  # the newest block needs more than the window's part
        members = [order[0]]
        while len(members) < len(order) and block(order[len(members)]) == block(order[0]):
            members.append(order[len(members)])
        need = sum(scored[m].item.tokens for m in members)
        if need > target:  # it does not fit whole: no share, the plain window
            window, _ = newest_first(target)
            return [scored[i].item for i in window]
        window, cut = members, len(members)  # it alone; the share gets what it leaves
        reserve = min(reserve, target - need)
    # the units behind the cut: blocks (consecutive in the walk, same value) or lone items,
    # each scored by its best member, ranked by GreedySlice as proxies of their sums
    units: list[list[int]] = []
    for i in order[cut:]:
        if units and block(i) == block(units[-1][-1]) and block(i)[0] != "alone":
            units[-1].append(i)
        else:
            units.append([i])
    units = [unit for unit in units if max(scored[i].score for i in unit) > 0]
    units.sort(key=min)
    proxies = [
        ScoredItem(
            ContextItem(content=f"unit {u}", tokens=sum(scored[i].item.tokens for i in unit)),
            max(scored[i].score for i in unit),
        )
        for u, unit in enumerate(units)
    ]
    greedy = (
        GreedySlice().slice(proxies, ContextBudget(max_tokens=reserve, target_tokens=reserve))
        if units and reserve > 0
        else []
    )
    picked = {id(item) for item in greedy}
    picked_positions = {
        i
        for proxy, unit in zip(proxies, units, strict=True)
        if id(proxy.item) in picked
        for i in unit
    }
    spent = sum(scored[i].item.tokens for i in window) + sum(
        scored[i].item.tokens for i in picked_positions
    )
    more, _ = walk(cut, target - spent, picked_positions)
    return [scored[i].item for i in [*window, *sorted(picked_positions), *more]]


@st.composite
def windows(draw: st.DrawFn) -> list[ScoredItem]:
    count = draw(st.integers(0, 14))
    items = []
    for i in range(count):
        minutes = draw(st.one_of(st.none(), st.integers(0, 12)))
        turn = draw(st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "b"])))
        items.append(
            ContextItem(
                content=f"item {i}",
                tokens=draw(st.integers(0, 30)),
                timestamp=None if minutes is None else T0 + timedelta(minutes=minutes),
                metadata={} if turn is None else {"cupel:turn": turn},
            )
        )
    scores = sorted((draw(st.floats(0, 1)) for _ in items), reverse=True)  # Sort stage order
    return [ScoredItem(item, score) for item, score in zip(items, scores, strict=True)]


def ids(items: list[ContextItem]) -> list[int]:
    return sorted(id(item) for item in items)


@settings(max_examples=examples(600), deadline=None)
@given(
    scored=windows(),
    target=st.integers(0, 120),
    blocks=st.booleans(),
    share=st.sampled_from([0.0, 0.0, 0.25, 0.5]),
    low=st.sampled_from([None, None, 0.5, 1.0]),
    partial=st.booleans(),
)
def test_both_routes_select_what_the_documented_rule_selects(
    scored: list[ScoredItem],
    target: int,
    blocks: bool,
    share: float,
    low: float | None,
    partial: bool,
) -> None:
    key = "cupel:turn" if blocks else None
    slicer = RecencyWindowSlice(key, scored_share=share, low_water=low, partial_blocks=partial)
    budget = ContextBudget(max_tokens=max(target, 1), target_tokens=target)
    expected = ids(
        reference(
            scored,
            target,
            block_key=key,
            scored_share=share,
            low_water=low,
            partial_blocks=partial,
        )
    )
    assert ids(slicer.slice(scored, budget)) == expected
    candidates = candidates_of(scored)
    assert candidates is not None
    positions = slicer._select_positions(candidates, budget).tolist()
    assert ids([scored[p].item for p in positions]) == expected
    selected = slicer.slice(scored, budget)
    assert sum(item.tokens for item in selected) <= target


@settings(max_examples=examples(200), deadline=None)
@given(scored=windows(), target=st.integers(1, 120))
def test_a_pure_window_is_one_stretch_ending_at_the_newest_item(
    scored: list[ScoredItem], target: int
) -> None:
    """Without scored_share the selection is a prefix of the walk order: no holes."""
    slicer = RecencyWindowSlice(None)
    selected = {
        id(i) for i in slicer.slice(scored, ContextBudget(max_tokens=target, target_tokens=target))
    }
    dated = sorted(
        (i for i in range(len(scored)) if scored[i].item.timestamp is not None),
        key=lambda i: (-scored[i].item.timestamp.timestamp(), i),  # type: ignore[union-attr]
    )
    order = dated + [i for i in range(len(scored)) if scored[i].item.timestamp is None]
    flags = [id(scored[i].item) in selected for i in order]
    assert flags == sorted(flags, reverse=True)  # taken ones first, then none


def test_a_conversation_in_order_takes_the_sorting_shortcut_and_agrees() -> None:
    items = [
        ContextItem(content=f"m{i}", tokens=10 + i % 7, timestamp=T0 + timedelta(seconds=i))
        for i in range(200)
    ]
    scored = [ScoredItem(item, 0.5) for item in items]
    budget = ContextBudget(max_tokens=300, target_tokens=300)
    candidates = candidates_of(scored)
    assert candidates is not None
    fast = RecencyWindowSlice()._select_positions(candidates, budget)
    assert isinstance(fast, np.ndarray)
    assert ids([items[p] for p in fast.tolist()]) == ids(reference(scored, 300))


def test_the_report_explains_everything_behind_the_cut() -> None:
    items = [
        ContextItem(content=f"m{i}", tokens=tokens, timestamp=T0 + timedelta(minutes=i))
        for i, tokens in enumerate([5, 30, 10, 10])
    ]
    pipeline = Pipeline(RecencyScorer(), RecencyWindowSlice(), deduplication=False)
    report = pipeline.dry_run(items, ContextBudget(max_tokens=35, target_tokens=35)).report
    assert report is not None
    assert [e.item.content for e in report.included] == ["m2", "m3"]
    assert {e.item.content: e.reason for e in report.excluded} == {
        "m1": OutsideWindow(cut_tokens=30, available_tokens=15),
        "m0": OutsideWindow(cut_tokens=30, available_tokens=15),  # it would fit: no holes
    }
    assert report.excluded[0].reason.describe() == (
        "OutsideWindow: not in the recency window, whose next unit needs 30 tokens, 15 available"
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"block_key": ""}, "block_key"),
        ({"block_key": 3}, "block_key"),
        ({"scored_share": 1.0}, "scored_share"),
        ({"scored_share": -0.1}, "scored_share"),
        ({"scored_share": True}, "scored_share"),
        ({"low_water": 0}, "low_water"),
        ({"low_water": 1.5}, "low_water"),
        ({"low_water": "0.5"}, "low_water"),
    ],
)
def test_bad_settings_are_refused_at_construction(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(SlicerConfigError) as raised:
        RecencyWindowSlice(**kwargs)  # type: ignore[arg-type]
    assert raised.value.field == field
    assert "RecencyWindowSlice" in str(raised.value)


def test_a_block_value_that_is_not_a_string_or_integer_names_the_item() -> None:
    item = ContextItem(content="odd", tokens=1, timestamp=T0, metadata={"cupel:turn": [1]})
    with pytest.raises(ItemError) as raised:
        RecencyWindowSlice().slice(
            [ScoredItem(item, 0.5)], ContextBudget(max_tokens=5, target_tokens=5)
        )
    assert raised.value.field == "metadata['cupel:turn']"
    assert "'odd'" in str(raised.value) and "FrozenList [1]" in str(raised.value)


def test_equal_settings_are_equal_and_survive_pickling() -> None:
    slicer = RecencyWindowSlice("thread", scored_share=0.2, low_water=0.6)
    assert slicer == RecencyWindowSlice("thread", scored_share=0.2, low_water=0.6)
    assert hash(slicer) == hash(pickle.loads(pickle.dumps(slicer)))
    assert pickle.loads(pickle.dumps(slicer)) == slicer
    assert repr(slicer) == (
        "RecencyWindowSlice(block_key='thread', scored_share=0.2, low_water=0.6)"
    )
    assert repr(RecencyWindowSlice()) == "RecencyWindowSlice()"
