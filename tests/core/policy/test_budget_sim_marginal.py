"""get_marginal_items over real pipelines: guards, preconditions, identity, determinism."""

from __future__ import annotations

import pytest
from policy_testkit import BUDGET, workload

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    InvalidOperationError,
    KnapsackSlice,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
)
from cupel.analytics import MARGINAL_ITEMS_GUARD_MESSAGE, get_marginal_items
from cupel.policy import Policy, QuotaEntrySpec, QuotaSpec, RecencySpec
from cupel.presets import preset

SPEC_MESSAGE = (
    "GetMarginalItems requires monotonic item inclusion. QuotaSlice produces non-monotonic "
    "inclusion as budget changes shift percentage allocations."
)


def included_ids(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget) -> list[int]:
    report = pipeline.dry_run(items, budget).report
    assert report is not None
    return [id(e.item) for e in report.included]


@pytest.mark.parametrize("slack", [0, 1, 25, 60, 150, 300])
@pytest.mark.parametrize("name", ["chat", "document_qa", "debugging"])
def test_marginal_items_are_the_full_window_minus_the_reduced_one(name: str, slack: int) -> None:
    items = workload()
    pipeline = preset(name).build()
    budget = ContextBudget(max_tokens=400, target_tokens=300, output_reserve=50)
    reduced = ContextBudget(max_tokens=400 - slack, target_tokens=300 - slack, output_reserve=50)
    full = included_ids(pipeline, items, budget)
    kept = set(included_ids(pipeline, items, reduced))
    expected = [i for i in full if i not in kept]
    marginal = get_marginal_items(pipeline, items, budget, slack)
    assert [id(i) for i in marginal] == expected
    assert all(any(m is item for item in items) for m in marginal)  # the caller's objects
    if slack == 0:
        assert marginal == []
    assert get_marginal_items(pipeline, items, budget, slack) == marginal  # deterministic


def test_marginal_items_on_a_small_greedy_case() -> None:
    items = [ContextItem(content=f"p{p}", tokens=30, priority=p) for p in (1, 2, 3, 4)]
    budget = ContextBudget(max_tokens=120, target_tokens=120)
    pipeline = Pipeline(PriorityScorer())
    assert [i.content for i in get_marginal_items(pipeline, items, budget, 30)] == ["p1"]
    # in the full run's placed order (untimestamped: the greedy order, best first)
    assert [i.content for i in get_marginal_items(pipeline, items, budget, 31)] == ["p2", "p1"]
    assert [i.content for i in get_marginal_items(pipeline, items, budget, 120)] == [
        "p4",
        "p3",
        "p2",
        "p1",
    ]


def test_matching_is_by_identity_not_equality() -> None:
    # Two equal items (same content, tokens, kind ...) are distinct objects; without
    # deduplication both compete, and only the one the reduced run drops is marginal.
    twin_a = ContextItem(content="twin", tokens=10, priority=5)
    twin_b = ContextItem(content="twin", tokens=10, priority=5)
    assert twin_a == twin_b
    items = [twin_a, twin_b]
    pipeline = Pipeline(PriorityScorer(), deduplication=False)
    budget = ContextBudget(max_tokens=20, target_tokens=20)
    marginal = get_marginal_items(pipeline, items, budget, 10)
    assert len(marginal) == 1
    assert marginal[0] is twin_b  # greedy keeps input order for equal densities


def test_reduced_budget_keeps_reserve_slots_and_margin() -> None:
    items = [
        ContextItem(content="doc", tokens=40, kind="Document", priority=1),
        ContextItem(content="msg", tokens=40, priority=2),
    ]
    budget = ContextBudget(
        max_tokens=200,
        target_tokens=130,
        output_reserve=20,
        reserved_slots={"Document": 10},
        estimation_safety_margin_percent=10.0,
    )
    pipeline = Pipeline(PriorityScorer())
    # full: effective target int((130-10)*0.9)=108 -> both fit; reduced by 40:
    # int((90-10)*0.9)=72 -> only "msg" (higher priority) fits. (Without the slots and
    # the margin the reduced target would be 90 and both would still fit.)
    assert [i.content for i in get_marginal_items(pipeline, items, budget, 40)] == ["doc"]
    assert get_marginal_items(pipeline, items, budget, 10) == []


def test_quota_slice_is_refused_with_the_spec_message() -> None:
    assert MARGINAL_ITEMS_GUARD_MESSAGE == SPEC_MESSAGE
    pipeline = Pipeline(RecencyScorer(), QuotaSlice(GreedySlice(), [QuotaEntry("Document", 10)]))
    with pytest.raises(InvalidOperationError) as caught:
        get_marginal_items(pipeline, workload(), BUDGET, 10)
    assert str(caught.value) == SPEC_MESSAGE
    assert isinstance(caught.value, RuntimeError)
    policy = Policy(
        scorer=RecencySpec(), slicer=QuotaSpec(quotas=[QuotaEntrySpec(kind="Document")])
    )
    with pytest.raises(InvalidOperationError, match=r"^GetMarginalItems requires monotonic"):
        get_marginal_items(policy, workload(), BUDGET, 10)


def test_a_quota_slice_inside_a_decorator_is_refused_too() -> None:
    inner = QuotaSlice(GreedySlice(), [QuotaEntry("Document", 10)])
    nested = CountQuotaSlice(inner, [CountQuotaEntry("Message", 1)])
    with pytest.raises(InvalidOperationError) as caught:
        get_marginal_items(Pipeline(PriorityScorer(), nested), workload(), BUDGET, 10)
    assert str(caught.value) == SPEC_MESSAGE


def test_count_quota_and_knapsack_pipelines_are_allowed() -> None:
    items = workload()
    for slicer in (
        CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", 1)]),
        KnapsackSlice(10),
    ):
        marginal = get_marginal_items(Pipeline(PriorityScorer(), slicer), items, BUDGET, 50)
        assert isinstance(marginal, list)


@pytest.mark.parametrize(
    ("slack", "message"),
    [
        (-1, r"^get_marginal_items: slack_tokens must be >= 0, got -1$"),
        (
            301,
            r"^get_marginal_items: slack_tokens must be <= budget\.target_tokens \(300\), got 301$",
        ),
        (True, r"^get_marginal_items: slack_tokens must be an integer, got bool True$"),
        (2.5, r"^get_marginal_items: slack_tokens must be an integer, got float 2\.5$"),
    ],
)
def test_slack_preconditions(slack: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        get_marginal_items(preset("chat"), workload(), BUDGET, slack)  # type: ignore[arg-type]
    assert caught.value.field == "slack_tokens"


def test_slack_must_leave_room_for_the_output_reserve() -> None:
    budget = ContextBudget(max_tokens=100, target_tokens=90, output_reserve=30)
    with pytest.raises(ConfigurationError, match=r"must leave max_tokens >= output_reserve \(30\)"):
        get_marginal_items(preset("chat"), workload(), budget, 80)


def test_inputs_are_not_mutated() -> None:
    items = workload()
    snapshot = [i.model_dump() for i in items]
    ids = [id(i) for i in items]
    get_marginal_items(preset("chat"), items, BUDGET, 100)
    assert [i.model_dump() for i in items] == snapshot
    assert [id(i) for i in items] == ids
