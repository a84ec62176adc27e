"""cupel.conversation.HistoryWindow: the plain-window fast path and the lazy report.

A plain recency window selected without a report is walked over the history's token and
block columns, never building items; these tests check it against the pipeline itself
(the report route, and a subclassed pipeline that always runs) on random conversations,
and that :meth:`HistoryWindow.explain` gives the report the eager route builds.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    CupelError,
    KindScorer,
    OverflowBudgetError,
    PinnedBudgetError,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
    SelectionReport,
    UShapedPlacer,
)
from cupel.conversation import Conversation, HistoryItems, HistoryWindow


class AlwaysRuns(Pipeline):
    """A subclass: the fast path never takes it, so the pipeline runs."""


def pipeline(low_water: float | None, placer: str, cls: type[Pipeline] = Pipeline) -> Pipeline:
    return cls(
        CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
        RecencyWindowSlice(low_water=low_water),
        ChronologicalPlacer() if placer == "chronological" else UShapedPlacer(),
        deduplication=False,
    )


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["user", "reply", "round", "bad_round", "system", "stray"]),
        st.integers(0, 60),
    ),
    min_size=1,
    max_size=50,
)


def build(events: list[tuple[str, int]]) -> tuple[Conversation, list[int]]:
    """A conversation from events: chat turns, tool rounds (valid or with an unknown
    answer), late system messages and stray tool results; tokens may be zero."""
    roles: list[str] = ["system"]
    tokens: list[int] = [3]
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    for step, (event, size) in enumerate(events):
        if event in ("user", "reply", "system"):
            roles.append({"reply": "assistant"}.get(event, event))
            tokens.append(size)
        elif event == "stray":
            answers[len(roles)] = f"nobody{step}"
            roles.append("tool")
            tokens.append(size)
        else:
            calls[len(roles)] = [f"c{step}"]
            roles.append("assistant")
            tokens.append(size // 2)
            answers[len(roles)] = f"c{step}" if event == "round" else f"other{step}"
            roles.append("tool")
            tokens.append(size)
    return Conversation(roles, calls=calls, answers=answers), tokens


def report_rows(report: SelectionReport) -> tuple[list[Any], list[Any]]:
    included = [(e.item.content, e.item.tokens, e.reason) for e in report.included]
    excluded = [(e.item.content, e.item.tokens, e.reason) for e in report.excluded]
    return included, excluded


def same_window(fast: HistoryWindow, slow: HistoryWindow) -> None:
    assert fast.messages == slow.messages
    assert fast.positions == slow.positions
    assert fast.tokens == slow.tokens
    assert fast.cut == slow.cut
    assert fast.stable_prefix == slow.stable_prefix
    assert fast.cut_moved == slow.cut_moved


@settings(max_examples=examples(300), deadline=None)
@given(
    events=EVENTS,
    limit=st.integers(0, 400),
    target_share=st.sampled_from([1.0, 0.8, 0.5]),
    reserve=st.integers(0, 40),
    keep_system=st.booleans(),
    keep_latest_user=st.booleans(),
    keep_last=st.integers(0, 3),
    low_water=st.sampled_from([None, 0.3, 0.6]),
    placer=st.sampled_from(["chronological", "u-shaped"]),
    start_on=st.sampled_from([(), ("user",)]),
)
def test_the_plain_window_is_the_pipelines_window(
    events: list[tuple[str, int]],
    limit: int,
    target_share: float,
    reserve: int,
    keep_system: bool,
    keep_latest_user: bool,
    keep_last: int,
    low_water: float | None,
    placer: str,
    start_on: tuple[str, ...],
) -> None:
    """Fast path, report route and a pipeline that always runs select the same window
    (messages, positions, tokens, cut, stable prefix, cut moved), also for cache-stable
    selections (the cut replayed from the history); and the lazy report is the eager one."""
    budget = ContextBudget(
        max_tokens=limit + reserve,
        target_tokens=int((limit + reserve) * target_share),
        output_reserve=reserve,
    )
    plain = pipeline(low_water, placer)
    runs = pipeline(low_water, placer, AlwaysRuns)
    conversation, tokens = build(events)

    def fresh() -> HistoryItems:
        return HistoryItems.from_conversation(
            conversation,
            [f"m{i}" for i in range(conversation.n_messages)],
            tokens,
            keep_system=keep_system,
            keep_latest_user=keep_latest_user,
            keep_last=keep_last,
        )

    def select(p: Pipeline, history: HistoryItems, with_report: bool) -> HistoryWindow:
        return history.select(p, budget, with_report=with_report, start_on=start_on)

    try:
        slow = select(plain, fresh(), True)
    except (PinnedBudgetError, OverflowBudgetError) as error:
        # pinned units over max (checked first) or over the target (the pipeline's
        # overflow strategy, THROW here): every route raises the same error
        with pytest.raises(type(error)):
            select(plain, fresh(), False)
        with pytest.raises(type(error)):
            select(runs, fresh(), False)
        return
    fast_history = fresh()
    fast = select(plain, fast_history, False)
    ran = select(runs, fresh(), False)
    same_window(fast, slow)
    same_window(ran, slow)
    assert fast.report is None and slow.report is not None
    assert report_rows(fast.explain()) == report_rows(slow.report)
    assert fast.explain() is fast.explain()  # built once
    assert [item.content for item in fast.items] == [item.content for item in slow.items]


def test_the_fast_path_builds_no_items_until_asked() -> None:
    conversation, tokens = build([("user", 10), ("reply", 20)] * 20)
    history = HistoryItems.from_conversation(conversation, ["x"] * conversation.n_messages, tokens)
    window = history.select(pipeline(None, "chronological"), _budget(100), with_report=False)
    assert history._items is None  # the columns sufficed
    assert window.report is None
    report = window.explain()
    assert history._items is not None
    assert {id(e.item) for e in report.included} == {id(item) for item in window.items}


def test_a_pipeline_that_picks_differently_when_run_again_cannot_explain() -> None:
    """explain() re-selects with a trace; a non-deterministic pipeline is caught."""

    class Flaky(Pipeline):
        calls = 0

        def run(self, *args: Any, **kwargs: Any) -> Any:
            Flaky.calls += 1
            return super().run(*args, **kwargs)

        def dry_run(self, items: Any, budget: Any, **kwargs: Any) -> Any:
            return super().dry_run(items[1:], budget, **kwargs)

    conversation, tokens = build([("user", 10), ("reply", 20)] * 5)
    history = HistoryItems.from_conversation(conversation, ["x"] * conversation.n_messages, tokens)
    flaky = Flaky(RecencyScorer(), RecencyWindowSlice())
    window = history.select(flaky, _budget(1000), with_report=False)
    assert Flaky.calls == 1
    with pytest.raises(CupelError, match="selected a different window"):
        window.explain()


def test_the_lazy_report_runs_the_overflow_callback_once() -> None:
    events: list[object] = []
    conversation, tokens = build([("user", 10), ("reply", 20)] * 5)
    history = HistoryItems.from_conversation(
        conversation, ["x"] * conversation.n_messages, tokens, keep_last=4
    )
    p = Pipeline(RecencyScorer(), RecencyWindowSlice(), overflow_strategy="proceed")
    budget = ContextBudget(max_tokens=200, target_tokens=40)  # pinned exceed the target
    window = history.select(p, budget, with_report=False, on_overflow=events.append)
    assert len(events) == 1
    window.explain()
    assert len(events) == 1


def _budget(n: int) -> ContextBudget:
    return ContextBudget(max_tokens=n, target_tokens=n)
