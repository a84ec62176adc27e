"""Item-level tracing: one item event per decision, ordering, the observer and its error
policy, record_item_event for custom collectors, and MultiTraceCollector."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pytest
from diag_scenarios import (
    BUDGET,
    TRUNCATION_BUDGET,
    every_decision_items,
    every_decision_pipeline,
    truncating_pipeline,
    truncation_items,
)

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    DiagnosticTraceCollector,
    InvalidOperationError,
    NullTraceCollector,
    PipelineStage,
    SelectionReport,
    TraceCollector,
    TraceDetailLevel,
    TraceEvent,
)
from cupel.diagnostics import MultiTraceCollector, ObserverError, ObserverErrorWarning

CLASSIFY, SCORE, DEDUP, SLICE, PLACE = PipelineStage


def run_items(collector: TraceCollector) -> list[ContextItem]:
    return every_decision_pipeline().run(every_decision_items(), BUDGET, collector=collector).items


def event_rows(events: Sequence[TraceEvent]) -> list[tuple[PipelineStage | str, int, str | None]]:
    return [(e.stage, e.item_count, e.message) for e in events]


EVERY_DECISION_EVENTS = [
    (CLASSIFY, 1, "excluded 'neg': NegativeTokens: tokens = -1"),
    (CLASSIFY, 9, None),
    (SCORE, 7, None),
    (DEDUP, 1, "excluded 'dup': Deduplicated: same content as kept item 'dup'"),
    (DEDUP, 7, None),
    (SLICE, 1, "excluded 'big': PinnedOverride: displaced by pinned item 'sys'"),
    (SLICE, 1, "excluded 'tool2': CountCapExceeded: kind 'ToolOutput' already has 1 of 1"),
    (SLICE, 1, "excluded 'note': BudgetExceeded: needs 40 tokens, 35 available"),
    (SLICE, 6, None),
    # Chronological placement of untimestamped items keeps the merge order: pinned first,
    # then the selection by score, descending (DESIGN.md ruling 13), not greedy's density
    # order (zero, dup, tool1).
    (PLACE, 1, "included 'sys': Pinned (score 1.0000)"),
    (PLACE, 1, "included 'tool1': Scored (score 0.8000)"),
    (PLACE, 1, "included 'dup': Scored (score 0.6000)"),
    (PLACE, 1, "included 'zero': ZeroToken (score 0.1000)"),
    (PLACE, 4, None),
]


class TestItemEvents:
    def test_every_decision_of_every_stage_has_an_item_event_before_its_stage_event(
        self,
    ) -> None:
        collector = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        run_items(collector)
        assert event_rows(collector.events) == EVERY_DECISION_EVENTS
        item_events = [e for e in collector.events if e.message is not None]
        assert all(e.duration_ms == 0.0 and e.item_count == 1 for e in item_events)

    def test_one_item_event_per_report_entry(self) -> None:
        collector = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        run_items(collector)
        report = collector.build_report()
        item_events = [e for e in collector.events if e.message is not None]
        assert len(item_events) == len(report.included) + len(report.excluded)
        assert report.total_candidates == len(every_decision_items())
        excluded_messages = {
            e.message for e in item_events if e.message and e.message.startswith("excluded")
        }
        assert {f"excluded {e.item.content!r}" for e in report.excluded} == {
            m.split(":")[0] for m in excluded_messages
        }

    def test_truncation_drops_are_place_item_events_before_the_inclusions(self) -> None:
        report = (
            truncating_pipeline()
            .dry_run(truncation_items(), TRUNCATION_BUDGET, detail_level=TraceDetailLevel.ITEM)
            .report
        )
        assert report is not None
        assert event_rows(report.events)[4:] == [
            (PLACE, 1, "excluded 'b': PinnedOverride: displaced by pinned item 'pin'"),
            (PLACE, 1, "excluded 'c': BudgetExceeded: needs 60 tokens, 5 available"),
            (PLACE, 1, "included 'pin': Pinned (score 1.0000)"),
            (PLACE, 1, "included 'a': Scored (score 0.9000)"),
            (PLACE, 2, None),
        ]

    def test_stage_level_keeps_the_same_report_without_item_events(self) -> None:
        item_level = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        stage_level = DiagnosticTraceCollector(TraceDetailLevel.STAGE)
        run_items(item_level)
        run_items(stage_level)
        assert [e.stage for e in stage_level.events] == list(PipelineStage)
        a, b = item_level.build_report(), stage_level.build_report()
        assert (a.included, a.excluded) == (b.included, b.excluded)

    def test_detail_level_accepts_its_integer_value(self) -> None:
        assert DiagnosticTraceCollector(1).detail_level is TraceDetailLevel.ITEM  # type: ignore[arg-type]

    @pytest.mark.parametrize("name", ["item", "ITEM", " Item "])
    def test_detail_level_accepts_its_name_in_any_case(self, name: str) -> None:
        assert DiagnosticTraceCollector(name).detail_level is TraceDetailLevel.ITEM

    @pytest.mark.parametrize("level", [7, "items", "\u0131tem"])
    def test_invalid_detail_level_is_rejected_naming_the_allowed_values(
        self, level: object
    ) -> None:
        with pytest.raises(ConfigurationError) as err:
            DiagnosticTraceCollector(level)  # type: ignore[arg-type]
        assert str(err.value) == (
            f"DiagnosticTraceCollector: detail_level must be one of STAGE (0), ITEM (1), "
            f"got {level!r}"
        )
        assert (err.value.field, err.value.value) == ("detail_level", level)


class TestObserver:
    def test_observer_sees_each_event_synchronously_as_it_is_recorded(self) -> None:
        seen: list[tuple[TraceEvent, int]] = []
        collector = DiagnosticTraceCollector(
            TraceDetailLevel.ITEM, observer=lambda e: seen.append((e, len(collector.events)))
        )
        run_items(collector)
        assert [event for event, _ in seen] == collector.events
        # when the observer ran for event i, exactly i + 1 events were recorded
        assert [recorded for _, recorded in seen] == list(range(1, len(seen) + 1))

    def test_stage_level_observer_sees_only_stage_events(self) -> None:
        seen: list[TraceEvent] = []
        run_items(DiagnosticTraceCollector(observer=seen.append))
        assert [e.stage for e in seen] == list(PipelineStage)

    def test_a_raising_observer_does_not_change_the_run_or_the_report(self) -> None:
        def broken(event: TraceEvent) -> None:
            assert isinstance(event.stage, PipelineStage)
            raise RuntimeError(f"sink down at {event.stage.value}")

        clean = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        clean_items = run_items(clean)
        failing = DiagnosticTraceCollector(TraceDetailLevel.ITEM, observer=broken)
        with pytest.warns(ObserverErrorWarning) as caught:
            failing_items = run_items(failing)
        assert [i.content for i in failing_items] == [i.content for i in clean_items]
        assert event_rows(failing.events) == EVERY_DECISION_EVENTS
        a, b = failing.build_report(), clean.build_report()
        assert (a.included, a.excluded, a.total_candidates) == (
            b.included,
            b.excluded,
            b.total_candidates,
        )
        # every failure is kept, with its event; only the first one warns
        assert [e.event for e in failing.observer_errors] == failing.events
        assert all(isinstance(e, ObserverError) for e in failing.observer_errors)
        assert str(failing.observer_errors[0].error) == "sink down at Classify"
        assert len(caught) == 1
        assert "raised RuntimeError('sink down at Classify') on a Classify event" in (
            str(caught[0].message)
        )

    def test_an_observer_failing_once_mid_run_loses_no_later_events(self) -> None:
        seen: list[str] = []

        def flaky(event: TraceEvent) -> None:
            seen.append(str(event.stage))
            if event.stage is SCORE:
                raise ValueError("once")

        collector = DiagnosticTraceCollector(observer=flaky)
        with pytest.warns(ObserverErrorWarning):
            run_items(collector)
        assert len(seen) == 5 and len(collector.events) == 5
        assert [(e.event.stage, repr(e.error)) for e in collector.observer_errors] == [
            (SCORE, "ValueError('once')")
        ]

    def test_warnings_as_errors_make_a_failing_observer_abort_the_run(self) -> None:
        def broken(event: TraceEvent) -> None:
            raise RuntimeError("boom")

        collector = DiagnosticTraceCollector(observer=broken)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ObserverErrorWarning)
            with pytest.raises(ObserverErrorWarning, match="boom"):
                run_items(collector)
        with pytest.raises(InvalidOperationError, match="no completed run"):
            collector.build_report()

    def test_keyboard_interrupt_in_an_observer_is_not_swallowed(self) -> None:
        def interrupt(event: TraceEvent) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_items(DiagnosticTraceCollector(observer=interrupt))

    def test_non_callable_observer_is_rejected_at_construction(self) -> None:
        with pytest.raises(ConfigurationError, match="observer must be callable") as err:
            DiagnosticTraceCollector(observer="print")  # type: ignore[arg-type]
        assert (err.value.field, err.value.value) == ("observer", "print")


class TestCustomCollectors:
    def test_overriding_record_item_event_receives_every_decision(self) -> None:
        class Recorder(TraceCollector):
            def __init__(self) -> None:
                self.events: list[TraceEvent] = []

            @property
            def is_enabled(self) -> bool:
                return True

            def record_stage_event(self, event: TraceEvent) -> None:
                self.events.append(event)

            def record_item_event(self, event: TraceEvent) -> None:
                self.events.append(event)

        recorder = Recorder()
        run_items(recorder)
        assert event_rows(recorder.events) == EVERY_DECISION_EVENTS

    def test_stage_only_custom_collector_gets_no_item_events(self) -> None:
        class Stages(TraceCollector):
            def __init__(self) -> None:
                self.events: list[TraceEvent] = []

            @property
            def is_enabled(self) -> bool:
                return True

            def record_stage_event(self, event: TraceEvent) -> None:
                self.events.append(event)

        stages = Stages()
        run_items(stages)
        assert [e.stage for e in stages.events] == list(PipelineStage)


class TestMultiTraceCollector:
    def test_every_collector_records_the_same_run(self) -> None:
        items_level = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
        stage_level = DiagnosticTraceCollector()
        result = every_decision_pipeline().run(
            every_decision_items(),
            BUDGET,
            collector=MultiTraceCollector(stage_level, items_level),
        )
        assert event_rows(items_level.events) == EVERY_DECISION_EVENTS
        assert isinstance(result.report, SelectionReport)
        assert result.report is not None
        assert result.report.events == tuple(stage_level.events)  # the first report wins
        assert result.report.excluded == items_level.build_report().excluded

    def test_disabled_collectors_receive_no_calls(self) -> None:
        class Spy(NullTraceCollector):
            calls = 0

            def on_run_start(self, item_count: int, budget: ContextBudget) -> None:
                Spy.calls += 1

        multi = MultiTraceCollector(Spy(), NullTraceCollector())
        assert not multi.is_enabled
        result = every_decision_pipeline().run(every_decision_items(), BUDGET, collector=multi)
        assert Spy.calls == 0 and result.report is None

    def test_non_collector_is_rejected_naming_its_position(self) -> None:
        with pytest.raises(ConfigurationError, match=r"collectors\[1\] must be a TraceCollector"):
            MultiTraceCollector(DiagnosticTraceCollector(), print)  # type: ignore[arg-type]
