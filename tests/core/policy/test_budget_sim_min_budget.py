"""find_min_budget_for: guards, preconditions, identity, and minimality checked by brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from policy_testkit import workload

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    InvalidOperationError,
    KnapsackSlice,
    PinnedBudgetError,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    ReflexiveScorer,
)
from cupel.analytics import FIND_MIN_BUDGET_GUARD_MESSAGE, find_min_budget_for
from cupel.policy import CountQuotaEntrySpec, CountQuotaSpec, Policy, PrioritySpec
from cupel.presets import preset

SPEC_MESSAGE = (
    "FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and CountQuotaSlice "
    "produce non-monotonic inclusion as budget changes shift allocations. Use a GreedySlice "
    "or KnapsackSlice inner slicer for budget simulation."
)


def included_at(pipeline: Pipeline, items: list[ContextItem], target: ContextItem, b: int) -> bool:
    """Brute force: is ``target`` in the window at max_tokens = target_tokens = b?"""
    try:
        report = pipeline.dry_run(items, ContextBudget(max_tokens=b, target_tokens=b)).report
    except PinnedBudgetError:
        return False
    assert report is not None
    return any(e.item is target for e in report.included)


def brute_force(
    pipeline: Pipeline, items: list[ContextItem], target: ContextItem, ceiling: int
) -> list[bool]:
    return [included_at(pipeline, items, target, b) for b in range(ceiling + 1)]


def test_small_priority_case() -> None:
    items = [ContextItem(content=f"p{p}", tokens=30, priority=p) for p in (1, 2, 3)]
    pipeline = Pipeline(PriorityScorer())
    assert find_min_budget_for(pipeline, items, items[2], 200) == 30
    assert find_min_budget_for(pipeline, items, items[1], 200) == 60
    assert find_min_budget_for(pipeline, items, items[0], 200) == 90
    assert find_min_budget_for(pipeline, items, items[0], 89) is None
    assert find_min_budget_for(pipeline, items, items[0], 90) == 90


def test_minimum_can_equal_the_items_own_tokens() -> None:
    # The spec's pseudocode never probes its lower bound; this implementation does.
    items = [ContextItem(content="only", tokens=25)]
    pipeline = Pipeline(PriorityScorer())
    assert find_min_budget_for(pipeline, items, items[0], 1000) == 25
    assert find_min_budget_for(pipeline, items, items[0], 25) == 25


def test_zero_token_item_needs_a_budget_of_one() -> None:
    # Slicers select nothing at target_tokens 0, zero-token items included.
    free = ContextItem(content="free", tokens=0)
    items = [free, ContextItem(content="x", tokens=5)]
    pipeline = Pipeline(PriorityScorer())
    assert find_min_budget_for(pipeline, items, free, 10) == 1
    assert brute_force(pipeline, items, free, 10).index(True) == 1


def test_pinned_items_raise_the_lower_bound_instead_of_failing() -> None:
    items = [
        ContextItem(content="system", tokens=40, pinned=True),
        ContextItem(content="a", tokens=10, priority=1),
        ContextItem(content="b", tokens=10, priority=2),
    ]
    pipeline = Pipeline(PriorityScorer())
    assert find_min_budget_for(pipeline, items, items[2], 100) == 50
    assert find_min_budget_for(pipeline, items, items[1], 100) == 60
    assert find_min_budget_for(pipeline, items, items[0], 100) == 40
    assert find_min_budget_for(pipeline, items, items[1], 39) is None  # below the pinned total
    assert find_min_budget_for(pipeline, items, items[1], 45) is None


def test_negative_token_items_are_never_selectable() -> None:
    broken = ContextItem(content="broken", tokens=-5)
    assert find_min_budget_for(Pipeline(PriorityScorer()), [broken], broken, 100) is None


def test_target_is_matched_by_identity() -> None:
    items = [ContextItem(content="twin", tokens=10, priority=1)]
    copy = ContextItem(content="twin", tokens=10, priority=1)
    assert copy == items[0]
    with pytest.raises(ConfigurationError) as caught:
        find_min_budget_for(Pipeline(PriorityScorer()), items, copy, 100)
    assert str(caught.value).startswith(
        "find_min_budget_for: target_item must be an element of items"
    )
    assert caught.value.field == "target_item"
    # two equal items without deduplication: each has its own answer
    first = ContextItem(content="same", tokens=10, priority=3)
    second = ContextItem(content="same", tokens=10, priority=3)
    pipeline = Pipeline(PriorityScorer(), deduplication=False)
    assert find_min_budget_for(pipeline, [first, second], first, 100) == 10
    assert find_min_budget_for(pipeline, [first, second], second, 100) == 20


def test_search_ceiling_preconditions() -> None:
    items = [ContextItem(content="a", tokens=40)]
    with pytest.raises(ConfigurationError) as caught:
        find_min_budget_for(Pipeline(PriorityScorer()), items, items[0], 39)
    assert str(caught.value) == (
        "find_min_budget_for: search_ceiling must be >= target_item.tokens (40), got 39"
    )
    assert caught.value.field == "search_ceiling"
    with pytest.raises(ConfigurationError, match="search_ceiling must be an integer, got float"):
        find_min_budget_for(Pipeline(PriorityScorer()), items, items[0], 50.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "slicer",
    [
        QuotaSlice(GreedySlice(), [QuotaEntry("Document", 10)]),
        CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", 1)]),
        CountConstrainedKnapsackSlice([CountQuotaEntry("Document", 1)]),
    ],
    ids=["quota", "count_quota", "count_constrained_knapsack"],
)
def test_quota_slicers_are_refused_with_the_spec_message(slicer: object) -> None:
    assert FIND_MIN_BUDGET_GUARD_MESSAGE == SPEC_MESSAGE
    items = workload()
    with pytest.raises(InvalidOperationError) as caught:
        find_min_budget_for(Pipeline(PriorityScorer(), slicer), items, items[0], 500)  # type: ignore[arg-type]
    assert str(caught.value) == SPEC_MESSAGE


def test_a_count_quota_slicer_inside_a_decorator_is_refused_too() -> None:
    class Logged(GreedySlice):
        """A user's decorator that exposes what it wraps as ``inner``."""

        def __init__(self, inner: object) -> None:
            self.inner = inner

    wrapped = Logged(CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", 1)]))
    items = workload()
    with pytest.raises(InvalidOperationError) as caught:
        find_min_budget_for(Pipeline(PriorityScorer(), wrapped), items, items[0], 500)
    assert str(caught.value) == SPEC_MESSAGE


def test_policies_and_preset_names_are_accepted_and_guarded() -> None:
    items = workload()
    target = items[-3]
    expected = find_min_budget_for(preset("document_qa").build(), items, target, 3000)
    assert expected is not None
    assert find_min_budget_for("document_qa", items, target, 3000) == expected
    assert find_min_budget_for(preset("document_qa"), items, target, 3000) == expected
    policy = Policy(
        scorer=PrioritySpec(),
        slicer=CountQuotaSpec(entries=[CountQuotaEntrySpec(kind="Document", require_count=1)]),
    )
    with pytest.raises(InvalidOperationError, match=r"^FindMinBudgetFor requires monotonic"):
        find_min_budget_for(policy, items, target, 1000)


@pytest.mark.parametrize("name", ["chat", "rag", "document_qa", "debugging", "long_running"])
def test_result_is_the_minimum_on_the_workload(name: str) -> None:
    items = workload()
    pipeline = preset(name).build()
    for target in items[::4]:
        found = find_min_budget_for(pipeline, items, target, 600)
        assert found == find_min_budget_for(pipeline, items, target, 600)  # deterministic
        if found is None:
            assert not included_at(pipeline, items, target, 600)
            continue
        assert included_at(pipeline, items, target, found)
        assert found == target.tokens or not included_at(pipeline, items, target, found - 1)


def test_inputs_are_not_mutated() -> None:
    items = workload()
    snapshot = [i.model_dump() for i in items]
    find_min_budget_for("chat", items, items[5], 500)
    assert [i.model_dump() for i in items] == snapshot


# -- brute force on small random cases ----------------------------------------------------
item_specs = st.lists(
    st.tuples(st.integers(0, 12), st.floats(0, 1), st.booleans()), min_size=1, max_size=6
)


@settings(max_examples=examples(120), deadline=None)
@given(
    specs=item_specs,
    target_index=st.integers(0, 5),
    slicer_kind=st.sampled_from(["greedy", "knapsack"]),
    extra=st.integers(0, 30),
)
def test_binary_search_matches_brute_force(
    specs: list[tuple[int, float, bool]], target_index: int, slicer_kind: str, extra: int
) -> None:
    items = [
        ContextItem(
            content=f"item {i}",
            tokens=tokens,
            future_relevance_hint=hint,
            pinned=pinned and i % 3 == 0,
        )
        for i, (tokens, hint, pinned) in enumerate(specs)
    ]
    target = items[target_index % len(items)]
    slicer = GreedySlice() if slicer_kind == "greedy" else KnapsackSlice(bucket_size=1)
    pipeline = Pipeline(ReflexiveScorer(), slicer)
    ceiling = target.tokens + extra
    found = find_min_budget_for(pipeline, items, target, ceiling)
    table = brute_force(pipeline, items, target, ceiling)
    if found is None:
        assert not table[ceiling]
        return
    # Always: selected at the answer, and not one token below it.
    assert table[found]
    assert found == 0 or not table[found - 1]
    assert found >= target.tokens
    # When inclusion is monotonic in the budget, the answer is the global minimum.
    first = table.index(True)
    if all(table[first:]):
        assert found == first
