"""Issue 15's fast paths agree exactly with the plain ones: the fields read once in chunks
and shared between stages, KindScorer by kind identity, TagScorer's sums, GreedySlice
over unranked candidates, and the chronological shortcut of an increasing hint."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from operator import attrgetter
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import (
    T0,
    PerItemScorer,
    SpecGreedy,
    SpecPlacer,
    assert_same_floats,
    budgets,
    outcome,
    passes,
    scored_lists,
    scorers,
    spec_chronological,
    spec_greedy,
    spec_u_shaped,
)

import cupel._fastpath
from cupel import (
    ChronologicalPlacer,
    ContextBudget,
    ContextItem,
    ContextKind,
    GreedySlice,
    KindScorer,
    Pipeline,
    ScoredItem,
    TagScorer,
    UShapedPlacer,
)
from cupel._fastpath import field_column, read_fields, sharing_fields, stable_argsort
from cupel.slicers._base import Candidates

NAMES = ("tokens", "pinned", "kind", "tags", "timestamp", "content", "priority")


@contextmanager
def chunks_of(size: int) -> Iterator[None]:
    """``read_fields`` reading ``size`` items per chunk (so small passes cross chunks)."""
    saved = cupel._fastpath.FIELD_CHUNK
    cupel._fastpath.FIELD_CHUNK = size
    try:
        yield
    finally:
        cupel._fastpath.FIELD_CHUNK = saved


class Shouting(ContextItem):
    """A subclass whose ``content`` reads differently from its stored field."""

    @property  # type: ignore[override]
    def content(self) -> str:
        return str(self.__dict__["content"]).upper()


@settings(max_examples=examples(300), deadline=None)
@given(items=passes(max_size=30, allow_pinned=True), size=st.integers(1, 5))
def test_read_fields_equals_one_pass_per_name(items: list[ContextItem], size: int) -> None:
    items = [*items, *(Shouting(**item.model_dump()) for item in items[:3])]
    with chunks_of(size):
        read = read_fields(items, NAMES)
    assert read == [list(map(attrgetter(name), items)) for name in NAMES]
    assert all(
        a is b
        for name, column in zip(NAMES, read, strict=True)
        for a, b in zip(column, map(attrgetter(name), items), strict=True)
    )


def test_read_fields_of_nothing_and_of_one_item() -> None:
    one = ContextItem(content="a", tokens=3, tags=("x",))
    assert read_fields([], NAMES) == [[] for _ in NAMES]
    with chunks_of(1):
        assert read_fields([one], ("tokens", "tags")) == [[3], [("x",)]]


def test_field_column_shares_only_for_the_very_same_items_object() -> None:
    items = [ContextItem(content="a", tokens=3)]
    shared = {"tokens": [99]}
    with sharing_fields(items, shared):
        assert field_column(items, "tokens") == [99]
        assert field_column(list(items), "tokens") == [3]  # another object: read
        assert field_column(items, "pinned") == [False]  # not shared: read
    assert field_column(items, "tokens") == [3]


@settings(max_examples=examples(300), deadline=None)
@given(
    scorer=scorers,
    placed=st.sampled_from(
        [
            (ChronologicalPlacer(), SpecPlacer(spec_chronological)),
            (UShapedPlacer(), SpecPlacer(spec_u_shaped)),
        ]
    ),
    items=passes(max_size=24, allow_pinned=True, allow_negative=True),
    target=st.integers(0, 200),
    deduplication=st.booleans(),
    size=st.integers(1, 4),
)
def test_pipeline_over_chunked_shared_fields_equals_the_per_item_definitions(
    scorer: Any,
    placed: tuple[Any, Any],
    items: list[ContextItem],
    target: int,
    deduplication: bool,
    size: int,
) -> None:
    items = [*items, *(Shouting(**item.model_dump()) for item in items[:2])]
    budget = ContextBudget(max_tokens=target + 20, target_tokens=target)
    fast = Pipeline(
        scorer, GreedySlice(), placed[0], deduplication=deduplication, overflow_strategy="proceed"
    )
    reference = Pipeline(
        PerItemScorer(scorer),
        SpecGreedy(),
        placed[1],
        deduplication=deduplication,
        overflow_strategy="proceed",
    )
    with chunks_of(size):
        assert outcome(fast, items, budget) == outcome(reference, items, budget)


def unranked_candidates(scored: list[ScoredItem]) -> tuple[Candidates, Candidates, np.ndarray]:
    """The same candidates in input order and ranked (descending score, ties in input
    order, as the Sort stage ranks them), with the ranking."""
    items = [entry.item for entry in scored]
    tokens = np.array([item.tokens for item in items], dtype=np.int64)
    values = np.array([entry.score for entry in scored], dtype=np.float64)
    rank = stable_argsort(-values)
    plain = Candidates(items, np.arange(len(items)), tokens, values)
    return plain, Candidates(items, rank, tokens[rank], values[rank]), rank


tied_scores = st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, float("inf"), -1.0])


@settings(max_examples=examples(500), deadline=None)
@given(scored=scored_lists(max_size=24), budget=budgets, data=st.data())
def test_greedy_over_unranked_candidates_selects_what_it_selects_over_ranked_ones(
    scored: list[ScoredItem], budget: ContextBudget, data: st.DataObject
) -> None:
    if data.draw(st.booleans()):  # many equal densities: few scores and token counts
        scored = [
            ScoredItem(
                entry.item.model_copy(update={"tokens": data.draw(st.sampled_from([0, 1, 2, 4]))}),
                data.draw(tied_scores),
            )
            for entry in scored
        ]
    plain, ranked, rank = unranked_candidates(scored)
    expected = rank[GreedySlice()._select_positions(ranked, budget)].tolist()
    assert GreedySlice()._select_unranked(plain, budget).tolist() == expected
    ranked_items = [scored[i] for i in rank.tolist()]
    assert [id(scored[i].item) for i in expected] == [
        id(item) for item in spec_greedy(ranked_items, budget)
    ]


def test_kind_scorer_with_many_distinct_and_equal_but_distinct_kind_objects() -> None:
    def fresh_kind(text: str) -> ContextKind:  # equal to the interned kind, another object
        kind = str.__new__(ContextKind, text)
        kind.key = ContextKind(text).key
        return kind

    kinds: list[Any] = [f"Kind{i}" for i in range(40)] + ["Document", "document", "MEMORY"]
    items = [ContextItem(content=str(i), tokens=1, kind=kind) for i, kind in enumerate(kinds)]
    items += [item.model_copy(update={"kind": fresh_kind(str(item.kind))}) for item in items[-3:]]
    assert len({id(item.kind) for item in items}) == len(items)  # one kind object each
    for scorer in (
        KindScorer(),
        KindScorer({"document": 2.0, "Kind3": 0.5, "Kind39": 1.5, "Memory": 0.25}),
    ):
        assert_same_floats(scorer.score_all(items), [scorer.score(i, items) for i in items])
        assert_same_floats(scorer.score_all(items[:1]), [scorer.score(items[0], items[:1])])
        assert scorer.score_all([]) == []


@settings(max_examples=examples(200), deadline=None)
@given(
    tags=st.lists(
        st.lists(st.sampled_from(["a", "A", "b", "db", "ops", "x", ""]), max_size=9), max_size=12
    ),
    insensitive=st.booleans(),
)
def test_tag_scorer_with_many_tags_per_item_agrees(
    tags: list[list[str]], insensitive: bool
) -> None:
    items = [ContextItem(content=str(i), tokens=1, tags=tuple(t)) for i, t in enumerate(tags)]
    items += items[:3]  # repeated tuples: the per-distinct-tuple route when tags are many
    scorer = TagScorer(
        {"a": 8e307, "db": 8e307, "ops": 0.25, "": 0.5}, case_insensitive=insensitive
    )
    assert_same_floats(scorer.score_all(items), [scorer.score(i, items) for i in items])


@settings(max_examples=examples(300), deadline=None)
@given(
    minutes=st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=16),
    shuffle=st.randoms(use_true_random=False),
)
def test_chronological_hint_in_time_order_is_taken_only_when_strictly_increasing(
    minutes: list[int | None], shuffle: Any
) -> None:
    items = [
        ContextItem(
            content=str(i),
            tokens=1,
            timestamp=None if m is None else T0 + timedelta(minutes=m),
        )
        for i, m in enumerate(minutes)
    ]
    keyed = sorted(range(len(items)), key=lambda i: (minutes[i] is None, minutes[i] or 0))
    hints = [keyed, list(range(len(items)))]
    shuffled = list(range(len(items)))
    shuffle.shuffle(shuffled)
    hints.append(shuffled)
    expected = [id(i) for i in spec_chronological([ScoredItem(i, 0.0) for i in items])]
    for hint in hints:
        origin = np.argsort(np.array(hint, dtype=np.intp), kind="stable")
        order = ChronologicalPlacer()._order(items, np.zeros(len(items)), origin)
        assert [id(items[i]) for i in order] == expected
