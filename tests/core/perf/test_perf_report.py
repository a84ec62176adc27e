"""The report's entries (each stage's built in bulk from its columns, equal reasons
shared) are the entries the spec's per-item definitions give (the oracle builders below);
``dry_run`` builds them on first read, collectors that need each decision (item detail,
observers, subclasses overriding ``on_excluded`` / ``on_included``) get them one by one
as the stages end: the same report, bit for bit."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from perf_testkit import PerItemScorer, SpecGreedy, passes, report_key, scorers

import cupel._pipeline.report
import cupel.diagnostics._collectors
from cupel import (
    ChronologicalPlacer,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    CupelError,
    DiagnosticTraceCollector,
    Filtered,
    GreedySlice,
    KnapsackSlice,
    MultiTraceCollector,
    Pipeline,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    RecencyWindowSlice,
    ScoredItem,
    SelectionReport,
    TraceCollector,
    TraceDetailLevel,
    UShapedPlacer,
)
from cupel.diagnostics import (
    BudgetExceeded,
    CountCapExceeded,
    ExcludedItem,
    ExclusionReason,
    IncludedItem,
    InclusionReason,
    PinnedOverride,
    PipelineStage,
    SliceOutcome,
)

SLICERS = [
    GreedySlice(),
    SpecGreedy(),
    QuotaSlice(
        GreedySlice(), [QuotaEntry("Message", require=25.0), QuotaEntry("Document", cap=30.0)]
    ),
    CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Message", require_count=1, cap_count=2)]),
    KnapsackSlice(bucket_size=3),
    RecencyWindowSlice(),
    RecencyWindowSlice(None, scored_share=0.5),
]
PLACERS = [ChronologicalPlacer(), UShapedPlacer()]


class Recording(DiagnosticTraceCollector):
    """A collector whose per-item methods are overridden: the per-item route."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        self.calls.append(("excluded", id(excluded.item)))
        super().on_excluded(stage, excluded)

    def on_included(self, included: IncludedItem) -> None:
        self.calls.append(("included", id(included.item)))
        super().on_included(included)


def per_item(pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget) -> Any:
    """Every entry built as its stage ends and passed on one by one."""
    return pipeline.run(items, budget, collector=MultiTraceCollector(DiagnosticTraceCollector()))


def wire(report: SelectionReport | None) -> dict[str, Any]:
    """The wire form without stage durations."""
    assert report is not None
    data = report.to_dict()
    for event in data["events"]:
        event.pop("duration_ms")
    return data


@settings(max_examples=examples(400), deadline=None)
@given(
    scorer=scorers,
    per_item_scorer=st.booleans(),
    slicer=st.sampled_from(SLICERS),
    placer=st.sampled_from(PLACERS),
    items=passes(max_size=16, allow_pinned=True, allow_negative=True),
    target=st.integers(0, 150),
    extra=st.integers(0, 40),
    reserve=st.integers(0, 10),
    deduplication=st.booleans(),
    strategy=st.sampled_from(["throw", "truncate", "proceed"]),
)
def test_the_deferred_report_is_the_per_item_report(
    scorer: Any,
    per_item_scorer: bool,
    slicer: Any,
    placer: Any,
    items: list[ContextItem],
    target: int,
    extra: int,
    reserve: int,
    deduplication: bool,
    strategy: str,
) -> None:
    budget = ContextBudget(
        max_tokens=target + extra, target_tokens=target, output_reserve=min(reserve, target)
    )
    pipeline = Pipeline(
        PerItemScorer(scorer) if per_item_scorer else scorer,
        slicer,
        placer,
        deduplication=deduplication,
        overflow_strategy=strategy,
    )
    try:
        reference = per_item(pipeline, items, budget)
    except CupelError as error:
        with pytest.raises(type(error)) as raised:
            pipeline.dry_run(items, budget)
        assert str(raised.value) == str(error)
        return
    deferred = pipeline.dry_run(items, budget)
    assert [id(i) for i in deferred.items] == [id(i) for i in reference.items]
    assert report_key(deferred.report) == report_key(reference.report)
    assert wire(deferred.report) == wire(reference.report)
    assert deferred.report is not None and reference.report is not None
    assert deferred.report.bucket_rounding == reference.report.bucket_rounding
    assert_entries_are_the_oracle_entries(pipeline, items, budget, deferred.report)


@settings(max_examples=examples(100), deadline=None)
@given(
    items=passes(max_size=12, allow_pinned=True, allow_negative=True),
    target=st.integers(0, 120),
    strategy=st.sampled_from(["truncate", "proceed"]),
)
def test_collectors_that_need_each_decision_still_get_every_call(
    items: list[ContextItem], target: int, strategy: str
) -> None:
    """A subclass overriding ``on_excluded``/``on_included`` gets one call per entry, in
    decision order, and the report it builds is the deferred one."""
    pipeline = Pipeline(RecencyScorer(), overflow_strategy=strategy, deduplication=False)
    budget = ContextBudget(max_tokens=target + 5, target_tokens=target)
    try:
        deferred = pipeline.dry_run(items, budget)
    except CupelError:
        return
    recording = Recording()
    traced = pipeline.run(items, budget, collector=recording)
    assert report_key(traced.report) == report_key(deferred.report)
    assert deferred.report is not None
    assert sorted(recording.calls) == sorted(
        [("excluded", id(e.item)) for e in deferred.report.excluded]
        + [("included", id(e.item)) for e in deferred.report.included]
    )
    assert [key for kind, key in recording.calls if kind == "included"] == [
        id(e.item) for e in deferred.report.included
    ]


def test_item_detail_and_observers_take_the_per_item_route() -> None:
    items = [ContextItem(content=f"m{i}", tokens=10) for i in range(6)]
    budget = ContextBudget(max_tokens=30, target_tokens=30)
    pipeline = Pipeline(RecencyScorer())
    seen: list[str] = []
    collector = DiagnosticTraceCollector(
        TraceDetailLevel.ITEM, observer=lambda e: seen.append(e.message or "")
    )
    result = pipeline.run(items, budget, collector=collector)
    assert sum(m.startswith("excluded") for m in seen) == 3
    assert sum(m.startswith("included") for m in seen) == 3
    deferred = report_key(pipeline.dry_run(items, budget).report)
    assert report_key(result.report)[:2] == deferred[:2]  # entries (events: item ones too)
    stage_only: list[object] = []
    pipeline.run(
        items,
        budget,
        collector=DiagnosticTraceCollector(observer=lambda e: stage_only.append(e.stage)),
    )
    assert stage_only == list(PipelineStage)


def test_dry_run_builds_no_entry_until_the_report_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []
    for name in ("_slice_entries", "_window_entries", "_negative_entries", "_duplicate_entries"):
        original = getattr(cupel._pipeline.report, name)

        def spy(*args: Any, _name: str = name, _original: Any = original) -> Any:
            built.append(_name)
            return _original(*args)

        monkeypatch.setattr(cupel._pipeline.report, name, spy)
    items = [ContextItem(content=f"m{i % 5}", tokens=10 - i) for i in range(12)]
    pipeline = Pipeline(RecencyScorer())
    budget = ContextBudget(max_tokens=20, target_tokens=20)
    result = pipeline.dry_run(items, budget)
    assert built == []
    report = result.report
    assert report is not None
    assert [e.item.content for e in report.included] == [i.content for i in result.items]
    assert built == ["_window_entries"]
    assert len(report.excluded) == 10
    assert sorted(built) == [
        "_duplicate_entries",
        "_negative_entries",
        "_slice_entries",
        "_window_entries",
    ]
    built.clear()
    assert report_key(per_item(pipeline, items, budget).report) == report_key(report)
    assert report.excluded is report.excluded and report.included is report.included


def deferred_and_eager() -> tuple[SelectionReport, SelectionReport]:
    """A deferred report (entries not read yet) and the same report built entry by entry
    (with the deferred one's stage events, whose durations differ)."""
    items = [ContextItem(content="system", tokens=3, pinned=True)]
    items += [ContextItem(content=f"m{i % 7}", tokens=4 + i % 3) for i in range(9)]
    items.append(ContextItem(content="gone", tokens=-1))
    pipeline = Pipeline(RecencyScorer())
    budget = ContextBudget(max_tokens=20, target_tokens=20)
    deferred = pipeline.dry_run(items, budget).report
    eager = per_item(pipeline, items, budget).report
    assert deferred is not None and eager is not None
    return deferred, dataclasses.replace(eager, events=deferred.events)


OPERATIONS = [
    lambda r: pickle.loads(pickle.dumps(r)),
    copy.copy,
    copy.deepcopy,
    lambda r: dataclasses.replace(r, total_candidates=r.total_candidates + 1),
    dataclasses.asdict,
    lambda r: r.to_json(),
    repr,
    hash,
    lambda r: r.included_tokens,
    lambda r: r.excluded_by("Deduplicated"),
    lambda r: r.with_excluded(added=[(ContextItem(content="x", tokens=1), Filtered("f"))]),
    lambda r: SelectionReport.from_dict(r.to_dict()).to_dict(),
]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_deferred_report_behaves_like_a_built_one(operation: Any) -> None:
    """Equality, hashing, repr, pickling, copying, ``dataclasses.replace``, the wire form,
    ``with_excluded``: each reads the entries (building them) and sees plain tuples."""
    deferred, eager = deferred_and_eager()
    assert operation(deferred) == operation(eager)
    assert type(deferred.included) is tuple and type(deferred.excluded) is tuple
    assert deferred == eager and hash(deferred) == hash(eager)
    assert {e.reason.name for e in deferred.excluded} == {
        "Deduplicated",
        "BudgetExceeded",
        "NegativeTokens",
    }


def test_a_deferred_report_is_still_a_frozen_slotted_dataclass() -> None:
    deferred, eager = deferred_and_eager()
    with pytest.raises(dataclasses.FrozenInstanceError):
        deferred.included = ()  # type: ignore[misc]
    assert deferred == eager
    assert not hasattr(deferred, "__dict__")
    assert [f.name for f in dataclasses.fields(SelectionReport)][:3] == [
        "events",
        "included",
        "excluded",
    ]


def test_a_report_built_twice_from_one_collector_shares_its_entries() -> None:
    collector = DiagnosticTraceCollector()
    items = [ContextItem(content=f"m{i}", tokens=10) for i in range(4)]
    Pipeline(RecencyScorer()).run(
        items, ContextBudget(max_tokens=20, target_tokens=20), collector=collector
    )
    first, second = collector.build_report(), collector.build_report()
    assert first == second
    assert first.excluded[0] is second.excluded[0]


def test_a_collector_subclass_keeping_the_per_item_methods_defers() -> None:
    class Named(DiagnosticTraceCollector):
        def __repr__(self) -> str:
            return "Named()"

    assert cupel.diagnostics._collectors.deferring(Named()) is not None
    assert cupel.diagnostics._collectors.deferring(Recording()) is None
    assert cupel.diagnostics._collectors.deferring(DiagnosticTraceCollector("item")) is None
    assert cupel.diagnostics._collectors.deferring(TraceCollector()) is None
    assert cupel.diagnostics._collectors.deferring(MultiTraceCollector()) is None


def test_scored_items_of_a_custom_slicer_are_checked_before_the_report_is_read() -> None:
    """A slicer returning a stranger fails during the run, not when the report is read."""

    class Stranger:
        def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
            return [ContextItem(content="stranger", tokens=1)]

    with pytest.raises(CupelError, match="not among its candidates"):
        Pipeline(RecencyScorer(), Stranger()).dry_run(
            [ContextItem(content="a", tokens=1)], ContextBudget(max_tokens=5, target_tokens=5)
        )


def oracle_slice_entries(
    ranked_items: list[ContextItem],
    ranked_scores: list[Any],
    sliced: Any,
    classified: Any,
    budget: ContextBudget,
    explained: Mapping[int, ExclusionReason],
) -> list[ExcludedItem]:
    """The Slice stage's exclusions as the definitions read, one candidate at a time: an
    unselected candidate (per occurrence, the first ones in ranked order being the
    selected ones) is ``CountCapExceeded`` when a cap removed it, else the slicer's own
    reason, else ``PinnedOverride`` when it would have fitted without the pinned items
    (ruling 2), else ``BudgetExceeded`` against what the selection left (ruling 5)."""
    outcome = sliced.outcome if sliced.outcome is not None else SliceOutcome(sliced.items)
    selected = Counter(map(id, sliced.items))
    capped = {id(c.item): c for c in outcome.cap_exclusions}
    pinned = classified.pinned
    target = sliced.budget.target_tokens
    out = []
    for item, item_score in zip(ranked_items, ranked_scores, strict=True):
        if selected[id(item)] > 0:
            selected[id(item)] -= 1
            continue
        reason: ExclusionReason
        if id(item) in capped:
            cap = capped[id(item)]
            reason = CountCapExceeded(cap.kind, cap.cap, cap.count)
        elif id(item) in explained:
            reason = explained[id(item)]
        elif pinned and target < item.tokens <= budget.target_tokens - budget.output_reserve:
            reason = PinnedOverride(pinned[0].content)
        else:
            reason = BudgetExceeded(item.tokens, target - sliced.tokens)
        out.append(ExcludedItem(item, item_score, reason))
    return out


def oracle_window_entries(
    placed: list[ContextItem], merged: Any, classified: Any
) -> list[IncludedItem]:
    """``_window_entries`` as the definition reads, one entry per placed item, each read
    again (``pinned``, ``tokens``)."""
    scores = dict(zip(map(id, merged.items), merged.scores, strict=True))
    out = []
    for item in placed:
        if item.pinned:
            out.append(IncludedItem(item, 1.0, InclusionReason.PINNED))
        elif item.tokens == 0:
            out.append(IncludedItem(item, float(scores[id(item)]), InclusionReason.ZERO_TOKEN))
        else:
            out.append(IncludedItem(item, float(scores[id(item)]), InclusionReason.SCORED))
    return out


def assert_entries_are_the_oracle_entries(
    pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget, built: SelectionReport
) -> None:
    """The report is the one the per-item oracle builders give, entry for entry; equal
    budget reasons are one object (one ``BudgetExceeded`` per token count)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cupel._pipeline.report, "_slice_entries", oracle_slice_entries)
        patch.setattr(cupel._pipeline.report, "_window_entries", oracle_window_entries)
        oracle = pipeline.dry_run(items, budget).report
        assert oracle is not None
    assert wire(built) == wire(oracle)
    for entries_built, reference in (
        (built.included, oracle.included),
        (built.excluded, oracle.excluded),
    ):
        assert [type(e) for e in entries_built] == [type(e) for e in reference]
        assert [(id(e.item), e.score, e.reason) for e in entries_built] == [
            (id(e.item), e.score, e.reason) for e in reference
        ]
        assert [type(e.score) for e in entries_built] == [float] * len(entries_built)
    shared: dict[ExclusionReason, int] = {}
    for entry in built.excluded:
        if isinstance(entry.reason, BudgetExceeded):
            assert shared.setdefault(entry.reason, id(entry.reason)) == id(entry.reason)


def test_entries_built_in_bulk_are_frozen_dataclass_instances() -> None:
    from cupel.diagnostics._entries import entries
    from cupel.diagnostics._reasons import BudgetExceeded

    items = [ContextItem(content=f"c{i}", tokens=i + 1) for i in range(3)]
    reasons = [BudgetExceeded(i + 1, 0) for i in range(3)]
    built = entries(ExcludedItem, items, [0.5, 0.25, 0.0], reasons)
    assert built == [
        ExcludedItem(i, s, r) for i, s, r in zip(items, [0.5, 0.25, 0.0], reasons, strict=True)
    ]
    assert hash(built[0]) == hash(ExcludedItem(items[0], 0.5, reasons[0]))
    assert pickle.loads(pickle.dumps(built)) == built and copy.deepcopy(built) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].score = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="differ in length"):
        entries(ExcludedItem, items, [0.5], reasons)
