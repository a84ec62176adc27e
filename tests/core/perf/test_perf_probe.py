"""Budget probes (scores and sort reused, no report) agree with full runs.

``BudgetProbe.window`` must hold exactly the items ``Pipeline.run`` selects at the same
budget (or raise the same error), and ``find_min_budget_for`` — which probes — must give
the answer of the binary search over full dry runs it replaced.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import PerItemScorer, SpecGreedy, passes, scorers

from cupel import (
    ContextBudget,
    ContextItem,
    CupelError,
    GreedySlice,
    KnapsackSlice,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
    find_min_budget_for,
)
from cupel._pipeline.probe import BudgetProbe
from cupel.analytics import smallest_included

SLICERS = [GreedySlice(), SpecGreedy(), KnapsackSlice(bucket_size=3), RecencyWindowSlice()]


def run_window(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget) -> Any:
    try:
        return sorted(id(i) for i in pipeline.run(items, budget).items)
    except CupelError as error:
        return (type(error), str(error))


def probe_window(probe: BudgetProbe, budget: ContextBudget) -> Any:
    try:
        return sorted(id(i) for i in probe.window(budget))
    except CupelError as error:
        return (type(error), str(error))


@settings(max_examples=examples(300), deadline=None)
@given(
    scorer=scorers,
    per_item=st.booleans(),
    slicer=st.sampled_from(SLICERS),
    items=passes(max_size=16, allow_pinned=True, allow_negative=True),
    budgets=st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 40), st.integers(0, 10)),
        min_size=1,
        max_size=6,
    ),
    deduplication=st.booleans(),
    strategy=st.sampled_from(["throw", "truncate", "proceed"]),
)
def test_a_probe_selects_what_a_run_selects_at_every_budget(
    scorer: Any,
    per_item: bool,
    slicer: Any,
    items: list[ContextItem],
    budgets: list[tuple[int, int, int]],
    deduplication: bool,
    strategy: str,
) -> None:
    """One probe, many budgets (target, extra max, reserve): each window is the run's,
    including errors (pinned over budget, overflow under THROW), on both routes."""
    pipeline = Pipeline(
        PerItemScorer(scorer) if per_item else scorer,
        slicer,
        deduplication=deduplication,
        overflow_strategy=strategy,
    )
    try:
        probe = BudgetProbe(pipeline, items)
    except CupelError as error:  # scoring refused: so does every run
        budget = ContextBudget(max_tokens=10**6, target_tokens=10**6)
        assert run_window(pipeline, items, budget) == (type(error), str(error))
        return
    for target, extra, reserve in budgets:
        budget = ContextBudget(
            max_tokens=target + extra, target_tokens=target, output_reserve=min(reserve, target)
        )
        window = run_window(pipeline, items, budget)
        assert probe_window(probe, budget) == window
        for item in items:  # membership read off the slicer's positions agrees
            try:
                selected: Any = probe.selects(item, budget)
            except CupelError as error:
                selected = (type(error), str(error))
            assert selected == (window if isinstance(window, tuple) else id(item) in window)


def min_budget_by_dry_runs(
    pipeline: Pipeline, items: list[ContextItem], target: ContextItem, ceiling: int
) -> int | None:
    """The binary search find_min_budget_for made before probes: a full dry run, report
    and all, per budget tried."""

    def included(tokens: int) -> bool:
        report = pipeline.dry_run(items, ContextBudget(max_tokens=tokens, target_tokens=tokens))
        assert report.report is not None
        return any(entry.item is target for entry in report.report.included)

    if target.tokens < 0:
        return None
    pinned = sum(i.tokens for i in items if i.pinned and i.tokens >= 0)
    low = max(target.tokens, pinned)
    return None if low > ceiling else smallest_included(low, ceiling, included)


@settings(max_examples=examples(300), deadline=None)
@given(
    scorer=scorers,
    slicer=st.sampled_from(SLICERS),
    items=passes(max_size=16, allow_pinned=True).filter(bool),
    pick=st.integers(0, 15),
    slack=st.integers(0, 300),
    deduplication=st.booleans(),
)
def test_find_min_budget_for_gives_the_answer_of_full_dry_runs(
    scorer: Any,
    slicer: Any,
    items: list[ContextItem],
    pick: int,
    slack: int,
    deduplication: bool,
) -> None:
    pipeline = Pipeline(scorer, slicer, deduplication=deduplication, overflow_strategy="truncate")
    target = items[pick % len(items)]
    ceiling = max(target.tokens, 0) + slack
    probed: list[int] = []
    try:
        expected: Any = min_budget_by_dry_runs(pipeline, items, target, ceiling)
    except CupelError as error:
        expected = (type(error), str(error))
    try:
        found: Any = find_min_budget_for(pipeline, items, target, ceiling, on_probe=probed.append)
    except CupelError as error:
        found = (type(error), str(error))
    assert found == expected
    assert all(0 <= b <= ceiling for b in probed)
    if isinstance(found, int):
        assert found in probed  # the answer was tried, not guessed


def test_a_pipeline_subclass_is_probed_with_its_own_dry_run() -> None:
    calls: list[int] = []

    class Counting(Pipeline):
        def dry_run(self, items: Any, budget: ContextBudget, **kwargs: Any) -> Any:
            calls.append(budget.max_tokens)
            return super().dry_run(items, budget, **kwargs)

    items = [ContextItem(content=f"m{i}", tokens=10) for i in range(5)]
    pipeline = Counting(RecencyScorer(), GreedySlice())
    assert find_min_budget_for(pipeline, items, items[2], 50) is not None
    assert calls and calls[0] == 50
