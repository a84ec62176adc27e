"""cupel.otel against the real OpenTelemetry SDK (TracerProvider + InMemorySpanExporter)."""

from __future__ import annotations

import ast
import contextlib
import itertools
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from diag_scenarios import (
    BUDGET,
    TRUNCATION_BUDGET,
    every_decision_items,
    every_decision_pipeline,
    hinted,
    truncating_pipeline,
    truncation_items,
)
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import cupel
from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    InvalidOperationError,
    OverflowBudgetError,
    PinnedBudgetError,
    Pipeline,
    ReflexiveScorer,
)
from cupel.otel import TRACER_NAME, CupelVerbosity, OpenTelemetryTraceCollector, run_traced

STAGES = ["classify", "score", "deduplicate", "slice", "place"]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    spans = exporter.get_finished_spans()
    named = {span.name: span for span in spans}
    assert len(named) == len(spans), "span names repeat"
    return named


def stage_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    named = by_name(exporter)
    return [named[f"cupel.stage.{s}"] for s in STAGES if f"cupel.stage.{s}" in named]


def traced(
    provider: TracerProvider,
    verbosity: CupelVerbosity | str,
    pipeline: Pipeline | None = None,
    items: Sequence[ContextItem] | None = None,
    budget: ContextBudget = BUDGET,
) -> list[ContextItem]:
    collector = OpenTelemetryTraceCollector(verbosity, tracer_provider=provider)
    with collector:
        result = (pipeline or every_decision_pipeline()).run(
            every_decision_items() if items is None else items, budget, collector=collector
        )
    return result.items


def attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def event_attrs(span: ReadableSpan, name: str) -> list[dict[str, object]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


class TestHierarchy:
    def test_one_root_and_five_stage_children_from_the_cupel_tracer(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.STAGE_ONLY)
        spans = exporter.get_finished_spans()
        assert [s.name for s in spans] == [*(f"cupel.stage.{s}" for s in STAGES), "cupel.pipeline"]
        root = spans[-1]
        assert root.parent is None
        for span in spans[:-1]:
            assert span.parent is not None
            assert span.parent.span_id == root.context.span_id
            assert span.context.trace_id == root.context.trace_id
        scopes = {s.instrumentation_scope for s in spans}
        assert {(scope.name, scope.version) for scope in scopes if scope is not None} == {
            (TRACER_NAME, cupel.__version__)
        }
        assert TRACER_NAME == "cupel" and None not in scopes

    def test_root_nests_under_the_callers_current_span(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        with provider.get_tracer("app").start_as_current_span("handle-request") as request:
            traced(provider, CupelVerbosity.STAGE_ONLY)
        root = by_name(exporter)["cupel.pipeline"]
        assert root.parent is not None
        assert root.parent.span_id == request.get_span_context().span_id

    def test_spans_made_by_a_custom_scorer_nest_under_the_score_stage(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        class EmbeddingScorer(ReflexiveScorer):
            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                with provider.get_tracer("embeddings").start_as_current_span("embed"):
                    return super().score_all(items)

        traced(provider, "StageOnly", pipeline=Pipeline(EmbeddingScorer()))
        named = by_name(exporter)
        embed = named["embed"]
        assert embed.parent is not None
        assert embed.parent.span_id == named["cupel.stage.score"].context.span_id
        assert trace.get_current_span() is trace.INVALID_SPAN  # context restored after the run

    def test_without_the_context_manager_the_stage_spans_are_not_made_current(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        class EmbeddingScorer(ReflexiveScorer):
            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                with provider.get_tracer("embeddings").start_as_current_span("embed"):
                    return super().score_all(items)

        collector = OpenTelemetryTraceCollector(tracer_provider=provider)
        Pipeline(EmbeddingScorer()).run(every_decision_items(), BUDGET, collector=collector)
        named = by_name(exporter)
        assert named["embed"].parent is None
        assert named["cupel.stage.score"].parent is not None
        assert named["cupel.pipeline"].end_time is not None


class TestTiming:
    def test_stage_spans_lie_inside_the_root_in_order_without_overlap(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.FULL)
        root = by_name(exporter)["cupel.pipeline"]
        stages = stage_spans(exporter)
        assert root.start_time is not None and root.end_time is not None
        for span in stages:
            assert span.start_time is not None and span.end_time is not None
            assert root.start_time <= span.start_time <= span.end_time <= root.end_time
        for earlier, later in itertools.pairwise(stages):
            assert earlier.end_time is not None and later.start_time is not None
            assert earlier.end_time <= later.start_time

    def test_a_slow_scorer_makes_a_score_span_of_real_duration(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        class SlowScorer(ReflexiveScorer):
            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                time.sleep(0.02)
                return super().score_all(items)

        traced(provider, CupelVerbosity.STAGE_ONLY, pipeline=Pipeline(SlowScorer()))
        named = by_name(exporter)
        score, root = named["cupel.stage.score"], named["cupel.pipeline"]
        assert score.start_time is not None and score.end_time is not None
        assert root.start_time is not None and root.end_time is not None
        assert score.end_time - score.start_time >= 20_000_000  # ns
        assert root.end_time - root.start_time >= score.end_time - score.start_time
        classify = named["cupel.stage.classify"]
        assert classify.end_time is not None
        assert classify.end_time <= score.start_time

    def test_exclusion_events_are_stamped_inside_their_stage_span(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.STAGE_AND_EXCLUSIONS)
        for span in stage_spans(exporter):
            assert span.start_time is not None and span.end_time is not None
            for event in span.events:
                assert span.start_time <= event.timestamp <= span.end_time


class TestTiers:
    def test_stage_only_has_counts_and_no_events(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.STAGE_ONLY)
        named = by_name(exporter)
        assert attrs(named["cupel.pipeline"]) == {
            "cupel.budget.max_tokens": 100,
            "cupel.verbosity": "StageOnly",
        }
        assert [attrs(s) for s in stage_spans(exporter)] == [
            {"cupel.stage.name": "classify", **counts(9, 8)},
            {"cupel.stage.name": "score", **counts(7, 7)},
            {"cupel.stage.name": "deduplicate", **counts(7, 6)},
            {"cupel.stage.name": "slice", **counts(6, 3)},
            {"cupel.stage.name": "place", **counts(4, 4)},
        ]
        assert all(not s.events for s in exporter.get_finished_spans())

    def test_stage_and_exclusions_adds_one_event_per_exclusion_on_its_stage(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.STAGE_AND_EXCLUSIONS)
        named = by_name(exporter)
        assert attrs(named["cupel.pipeline"])["cupel.verbosity"] == "StageAndExclusions"
        assert [attrs(s)["cupel.exclusion.count"] for s in stage_spans(exporter)] == [
            1,
            0,
            1,
            3,
            0,
        ]
        assert event_attrs(named["cupel.stage.classify"], "cupel.exclusion") == [
            exclusion("NegativeTokens", "Message", -1)
        ]
        assert event_attrs(named["cupel.stage.deduplicate"], "cupel.exclusion") == [
            exclusion("Deduplicated", "Message", 5)
        ]
        assert event_attrs(named["cupel.stage.slice"], "cupel.exclusion") == [
            exclusion("PinnedOverride", "Document", 55),
            exclusion("CountCapExceeded", "ToolOutput", 10),
            exclusion("BudgetExceeded", "Message", 40),
        ]
        assert not named["cupel.pipeline"].events
        assert sum(len(s.events) for s in exporter.get_finished_spans()) == 5

    def test_full_adds_included_item_events_on_the_root_after_place(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.FULL)
        named = by_name(exporter)
        root, place = named["cupel.pipeline"], named["cupel.stage.place"]
        assert attrs(root)["cupel.verbosity"] == "Full"
        assert event_attrs(root, "cupel.item.included") == [
            {"cupel.item.kind": "SystemPrompt", "cupel.item.tokens": 10, "cupel.item.score": 1.0},
            {"cupel.item.kind": "ToolOutput", "cupel.item.tokens": 10, "cupel.item.score": 0.8},
            {"cupel.item.kind": "Message", "cupel.item.tokens": 5, "cupel.item.score": 0.6},
            {"cupel.item.kind": "Message", "cupel.item.tokens": 0, "cupel.item.score": 0.1},
        ]
        assert place.end_time is not None
        assert all(e.timestamp >= place.end_time for e in root.events)
        exclusion_events = [e for s in stage_spans(exporter) for e in s.events]
        assert len(exclusion_events) == 5  # the StageAndExclusions events are kept

    def test_truncate_drops_are_place_exclusions(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(
            provider,
            CupelVerbosity.STAGE_AND_EXCLUSIONS,
            pipeline=truncating_pipeline(),
            items=truncation_items(),
            budget=TRUNCATION_BUDGET,
        )
        place = by_name(exporter)["cupel.stage.place"]
        assert attrs(place) == {
            "cupel.stage.name": "place",
            **counts(4, 2),
            "cupel.exclusion.count": 2,
        }
        assert event_attrs(place, "cupel.exclusion") == [
            exclusion("PinnedOverride", "Message", 15),
            exclusion("BudgetExceeded", "Message", 60),
        ]

    def test_an_empty_run_still_has_five_stage_spans_with_zero_counts(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        traced(provider, CupelVerbosity.FULL, items=[])
        assert [attrs(s) for s in stage_spans(exporter)] == [
            {"cupel.stage.name": s, **counts(0, 0), "cupel.exclusion.count": 0} for s in STAGES
        ]


def counts(count_in: int, count_out: int) -> dict[str, int]:
    return {"cupel.stage.item_count_in": count_in, "cupel.stage.item_count_out": count_out}


def exclusion(reason: str, kind: str, tokens: int) -> dict[str, object]:
    return {
        "cupel.exclusion.reason": reason,
        "cupel.exclusion.item_kind": kind,
        "cupel.exclusion.item_tokens": tokens,
    }


class TestFailedRuns:
    def test_pinned_overflow_ends_root_and_classify_with_error_status(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        items = [hinted("huge", 500, pinned=True)]
        with pytest.raises(PinnedBudgetError):
            traced(provider, CupelVerbosity.FULL, items=items)
        spans = exporter.get_finished_spans()
        assert [s.name for s in spans] == ["cupel.stage.classify", "cupel.pipeline"]
        for span in spans:
            assert span.status.status_code is StatusCode.ERROR
            assert span.status.description == (
                "PinnedBudgetError: Pinned items require 500 tokens, but only 100 are available"
            )
            assert attrs(span)["error.type"] == "cupel.PinnedBudgetError"
            (event,) = [e for e in span.events if e.name == "exception"]
            assert dict(event.attributes or {})["exception.type"] == "cupel.PinnedBudgetError"

    def test_overflow_throw_at_place_fails_only_place_and_root(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        items = [hinted("pinned", 70, pinned=True), hinted("a", 5)]
        with pytest.raises(OverflowBudgetError):
            run_traced(
                Pipeline(ReflexiveScorer()),
                items,
                ContextBudget(max_tokens=100, target_tokens=60),
                verbosity="Full",
                tracer_provider=provider,
            )
        spans = stage_spans(exporter)
        assert [s.name for s in spans] == [f"cupel.stage.{s}" for s in STAGES]
        assert [s.status.status_code for s in spans] == [StatusCode.UNSET] * 4 + [StatusCode.ERROR]
        assert by_name(exporter)["cupel.pipeline"].status.status_code is StatusCode.ERROR
        assert "cupel.stage.item_count_out" not in attrs(spans[-1])  # the stage never completed
        assert trace.get_current_span() is trace.INVALID_SPAN

    def test_a_failing_scorer_is_recorded_on_the_score_span(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        class Broken(ReflexiveScorer):
            def score_all(self, items: Sequence[ContextItem]) -> list[float]:
                raise ZeroDivisionError("model weights missing")

        with pytest.raises(ZeroDivisionError):
            traced(provider, CupelVerbosity.STAGE_ONLY, pipeline=Pipeline(Broken()))
        score = by_name(exporter)["cupel.stage.score"]
        assert score.status.description == "ZeroDivisionError: model weights missing"

    def test_an_exception_caught_inside_the_block_still_ends_the_spans(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        # the inner suppress swallows the error before the collector's __exit__ sees it; the
        # pipeline's on_run_error hook has already ended the spans with the real error
        with (
            OpenTelemetryTraceCollector(tracer_provider=provider) as collector,
            contextlib.suppress(PinnedBudgetError),
        ):
            Pipeline(ReflexiveScorer()).run(
                [hinted("huge", 500, pinned=True)], BUDGET, collector=collector
            )
        root = by_name(exporter)["cupel.pipeline"]
        assert root.status.description == (
            "PinnedBudgetError: Pinned items require 500 tokens, but only 100 are available"
        )

    def test_without_a_guard_a_failed_run_still_ends_its_spans(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        collector = OpenTelemetryTraceCollector(tracer_provider=provider)
        with pytest.raises(PinnedBudgetError):
            Pipeline(ReflexiveScorer()).run(
                [hinted("huge", 500, pinned=True)], BUDGET, collector=collector
            )
        # the pipeline's on_run_error hook ended the open stage span and the root
        finished = exporter.get_finished_spans()
        assert [s.name for s in finished] == ["cupel.stage.classify", "cupel.pipeline"]
        assert all(s.status.status_code.name == "ERROR" for s in finished)
        collector.on_run_error(PinnedBudgetError(500, 100))  # a second call is harmless
        assert len(exporter.get_finished_spans()) == 2


class TestCollectorContract:
    def test_run_traced_returns_the_run_with_its_report(
        self, provider: TracerProvider, exporter: InMemorySpanExporter
    ) -> None:
        result = run_traced(
            every_decision_pipeline(), every_decision_items(), BUDGET, tracer_provider=provider
        )
        expected = every_decision_pipeline().dry_run(every_decision_items(), BUDGET)
        assert [i.content for i in result.items] == [i.content for i in expected.items]
        assert result.report is not None and expected.report is not None
        assert (result.report.included, result.report.excluded) == (
            expected.report.included,
            expected.report.excluded,
        )
        assert len(exporter.get_finished_spans()) == 6

    def test_a_collector_traces_one_run(self, provider: TracerProvider) -> None:
        collector = OpenTelemetryTraceCollector(tracer_provider=provider)
        Pipeline(ReflexiveScorer()).run(every_decision_items(), BUDGET, collector=collector)
        with pytest.raises(InvalidOperationError, match="use a new collector per run"):
            Pipeline(ReflexiveScorer()).run(every_decision_items(), BUDGET, collector=collector)
        with pytest.raises(InvalidOperationError, match="use a new collector per run"):
            collector.__enter__()

    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            ("StageOnly", CupelVerbosity.STAGE_ONLY),
            ("stage_and_exclusions", CupelVerbosity.STAGE_AND_EXCLUSIONS),
            ("FULL", CupelVerbosity.FULL),
        ],
    )
    def test_verbosity_names_parse_case_insensitively(
        self, given: str, expected: CupelVerbosity
    ) -> None:
        assert OpenTelemetryTraceCollector(given).verbosity is expected

    def test_unknown_verbosity_is_rejected_naming_the_tiers(self) -> None:
        with pytest.raises(ConfigurationError) as err:
            OpenTelemetryTraceCollector("Verbose")
        assert str(err.value) == (
            "OpenTelemetryTraceCollector: verbosity must be one of StageOnly, "
            "StageAndExclusions, Full, got 'Verbose'"
        )
        assert err.value.field == "verbosity"

    def test_a_non_provider_is_rejected(self) -> None:
        with pytest.raises(ConfigurationError, match="tracer_provider must be an OpenTelemetry"):
            OpenTelemetryTraceCollector(tracer_provider="otlp")  # type: ignore[arg-type]

    @pytest.mark.slow
    def test_default_uses_the_global_tracer_provider(self) -> None:
        script = (
            "from opentelemetry import trace\n"
            "from opentelemetry.sdk.trace import TracerProvider\n"
            "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
            "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
            "InMemorySpanExporter\n"
            "exporter = InMemorySpanExporter()\n"
            "provider = TracerProvider()\n"
            "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
            "trace.set_tracer_provider(provider)\n"
            "from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer\n"
            "from cupel.otel import run_traced\n"
            "run_traced(Pipeline(RecencyScorer()), [ContextItem(content='a', tokens=1)],\n"
            "           ContextBudget(max_tokens=10, target_tokens=10))\n"
            "print(len(exporter.get_finished_spans()))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
        )
        assert out.stdout.strip() == "6"


class TestCoreIndependence:
    @pytest.mark.slow
    def test_importing_cupel_does_not_import_opentelemetry(self) -> None:
        script = (
            "import sys\n"
            "import cupel, cupel.diagnostics, cupel.testing, cupel.analytics, cupel.policy\n"
            "import cupel.presets, cupel.cli, cupel.conformance\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
        )
        assert out.stdout.strip() == "[]"

    def test_only_cupel_otel_imports_opentelemetry(self) -> None:
        importers = []
        for path in sorted((REPO / "cupel").rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(n.split(".")[0] == "opentelemetry" for n in names):
                    importers.append(path.relative_to(REPO).as_posix())
        assert sorted(set(importers)) == ["cupel/otel.py"]
