"""OpenTelemetry bridge: trace a pipeline run as spans (extra ``cupel-context[otel]``).

This is the only cupel module that imports OpenTelemetry; ``import cupel`` never does.
:class:`OpenTelemetryTraceCollector` turns one run into a ``cupel.pipeline`` span with
five children ``cupel.stage.{classify,score,deduplicate,slice,place}`` from the tracer
named ``"cupel"``. Each span starts when its stage starts and ends when it completes, so
span durations are the real stage durations. :class:`CupelVerbosity` picks the tier:

==================== ================================================================
tier                 emits
==================== ================================================================
STAGE_ONLY           spans; root ``cupel.budget.max_tokens``, ``cupel.verbosity``;
                     stage ``cupel.stage.name``, ``cupel.stage.item_count_in/out``
STAGE_AND_EXCLUSIONS + per stage ``cupel.exclusion.count`` and one ``cupel.exclusion``
                     event per excluded item (``cupel.exclusion.reason``,
                     ``cupel.exclusion.item_kind``, ``cupel.exclusion.item_tokens``)
FULL                 + after Place, one ``cupel.item.included`` event per window item on
                     the root span (``cupel.item.kind``, ``cupel.item.tokens``,
                     ``cupel.item.score``)
==================== ================================================================

A run that raises (pinned items over budget, overflow under ``Throw``, a failing scorer)
still ends its open stage span and the root with an ``ERROR`` status and the exception
recorded: the pipeline reports the failure through :meth:`TraceCollector.on_run_error
<cupel.TraceCollector.on_run_error>`. Used as a context manager (as :func:`run_traced`
does), the collector also makes each stage span the *current* span, so spans your own
scorer or slicer creates nest under it.

>>> from opentelemetry.sdk.trace import TracerProvider
>>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
>>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
>>> from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer
>>> exporter = InMemorySpanExporter()
>>> provider = TracerProvider()
>>> provider.add_span_processor(SimpleSpanProcessor(exporter))
>>> items = [ContextItem(content="a", tokens=5), ContextItem(content="b", tokens=50)]
>>> result = run_traced(Pipeline(RecencyScorer()), items,
...                     ContextBudget(max_tokens=10, target_tokens=10),
...                     verbosity=CupelVerbosity.STAGE_AND_EXCLUSIONS, tracer_provider=provider)
>>> [s.name for s in exporter.get_finished_spans()]  # doctest: +NORMALIZE_WHITESPACE
['cupel.stage.classify', 'cupel.stage.score', 'cupel.stage.deduplicate',
 'cupel.stage.slice', 'cupel.stage.place', 'cupel.pipeline']
>>> slice_span = exporter.get_finished_spans()[3]
>>> dict(slice_span.attributes)  # doctest: +NORMALIZE_WHITESPACE
{'cupel.stage.name': 'slice', 'cupel.stage.item_count_in': 2,
 'cupel.stage.item_count_out': 1, 'cupel.exclusion.count': 1}
>>> [dict(e.attributes) for e in slice_span.events]  # doctest: +NORMALIZE_WHITESPACE
[{'cupel.exclusion.reason': 'BudgetExceeded', 'cupel.exclusion.item_kind': 'Message',
  'cupel.exclusion.item_tokens': 50}]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import Token
from enum import Enum
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from cupel import __version__
from cupel._errors import InvalidOperationError, refusal
from cupel._model import ContextBudget, ContextItem, ascii_fold
from cupel._pipeline import ContextResult, Pipeline
from cupel.diagnostics import (
    DiagnosticTraceCollector,
    ExcludedItem,
    ExclusionReason,
    IncludedItem,
    MultiTraceCollector,
    PipelineStage,
    TraceCollector,
    TraceEvent,
    UnknownExclusionReason,
)
from cupel.diagnostics._events import OverflowEvent

__all__ = ["TRACER_NAME", "CupelVerbosity", "OpenTelemetryTraceCollector", "run_traced"]

TRACER_NAME = "cupel"
"""The instrumentation scope (tracer) name of every cupel span."""

_ONE_RUN = "OpenTelemetryTraceCollector already traced a run; use a new collector per run"


class CupelVerbosity(str, Enum):
    """How much an :class:`OpenTelemetryTraceCollector` emits per run.

    >>> CupelVerbosity.parse("stageandexclusions")
    <CupelVerbosity.STAGE_AND_EXCLUSIONS: 'StageAndExclusions'>
    """

    STAGE_ONLY = "StageOnly"
    """Spans with item counts only: production-safe, ~6 spans per run."""
    STAGE_AND_EXCLUSIONS = "StageAndExclusions"
    """Plus one event per excluded item: staging."""
    FULL = "Full"
    """Plus one event per included item: development only (high cardinality)."""

    @classmethod
    def _missing_(cls, value: object) -> CupelVerbosity | None:
        if not isinstance(value, str):
            return None
        folded = ascii_fold(value).replace("_", "")
        return next((member for member in cls if ascii_fold(member.value) == folded), None)

    @classmethod
    def parse(cls, value: CupelVerbosity | str) -> CupelVerbosity:
        """Parse a tier name case-insensitively (``"Full"``, ``"stage_only"``, ...)."""
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(m.value for m in cls)
            raise refusal(
                "OpenTelemetryTraceCollector", "verbosity", f"must be one of {allowed}", value
            ) from None


def _reason_name(reason: ExclusionReason) -> str:
    name = reason.reason if isinstance(reason, UnknownExclusionReason) else reason.name
    return name or "Unknown"


class OpenTelemetryTraceCollector(TraceCollector):
    """A trace collector that emits one run as OpenTelemetry spans.

    Parameters:
        verbosity: the tier (:class:`CupelVerbosity` or its name).
        tracer_provider: where spans go; ``None`` uses the global provider.

    Stage item counts: ``item_count_in`` is what the stage received (Classify: every
    candidate; Score and Deduplicate: the scoreable items; Slice: the deduplicated ones;
    Place: pinned + sliced) and ``item_count_out = item_count_in - exclusions`` of the
    stage (Score excludes nothing; Place's exclusions are Truncate drops).

    One collector traces one run; a run that raises ends its spans as ``ERROR`` (through
    :meth:`on_run_error`). As a context manager around ``pipeline.run``, it makes the root
    and each stage span current while open, and ends a run still open at the block's end
    as failed. ``build_report`` returns ``None``: combine it with a
    :class:`~cupel.DiagnosticTraceCollector` in a :class:`~cupel.diagnostics.MultiTraceCollector`
    (as :func:`run_traced` does) for a report as well.
    """

    def __init__(
        self,
        verbosity: CupelVerbosity | str = CupelVerbosity.STAGE_ONLY,
        *,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.verbosity = CupelVerbosity.parse(verbosity)
        if tracer_provider is not None and not callable(
            getattr(tracer_provider, "get_tracer", None)
        ):
            rule = "must be an OpenTelemetry TracerProvider (or None for the global one)"
            raise refusal("OpenTelemetryTraceCollector", "tracer_provider", rule, tracer_provider)
        self._tracer = trace.get_tracer(TRACER_NAME, __version__, tracer_provider=tracer_provider)
        self._exclusions = self.verbosity is not CupelVerbosity.STAGE_ONLY
        self._full = self.verbosity is CupelVerbosity.FULL
        self._state = "new"  # new -> running -> ended
        self._activate = False
        self._root: Span | None = None
        self._root_token: Token[Context] | None = None
        self._stage_span: Span | None = None
        self._stage_token: Token[Context] | None = None
        self._stage_exclusions = 0
        self._included: list[IncludedItem] = []

    def __repr__(self) -> str:
        return f"OpenTelemetryTraceCollector(verbosity={self.verbosity.name})"

    @property
    def is_enabled(self) -> bool:
        return True

    # -- context manager -----------------------------------------------------------
    def __enter__(self) -> OpenTelemetryTraceCollector:
        if self._state != "new":
            raise InvalidOperationError(_ONE_RUN)
        self._activate = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state == "running":
            incomplete = InvalidOperationError("the traced pipeline run did not complete")
            self.on_run_error(exc if exc is not None else incomplete)
        self._activate = False

    # -- pipeline hooks ----------------------------------------------------------------
    def on_run_start(self, item_count: int, budget: ContextBudget) -> None:
        if self._state != "new":
            raise InvalidOperationError(_ONE_RUN)
        self._state = "running"
        self._root = self._tracer.start_span(
            "cupel.pipeline",
            attributes={
                "cupel.budget.max_tokens": budget.max_tokens,
                "cupel.verbosity": self.verbosity.value,
            },
        )
        if self._activate:
            self._root_token = otel_context.attach(trace.set_span_in_context(self._root))

    def on_stage_start(self, stage: PipelineStage) -> None:
        if self._root is None:
            return
        name = stage.value.lower()
        self._stage_exclusions = 0
        self._stage_span = self._tracer.start_span(
            f"cupel.stage.{name}",
            context=trace.set_span_in_context(self._root),
            attributes={"cupel.stage.name": name},
        )
        if self._activate:
            self._stage_token = otel_context.attach(trace.set_span_in_context(self._stage_span))

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        self._stage_exclusions += 1
        span = self._stage_span if self._stage_span is not None else self._root
        if self._exclusions and span is not None:
            span.add_event(
                "cupel.exclusion",
                {
                    "cupel.exclusion.reason": _reason_name(excluded.reason),
                    "cupel.exclusion.item_kind": str(excluded.item.kind),
                    "cupel.exclusion.item_tokens": excluded.item.tokens,
                },
            )

    def on_included(self, included: IncludedItem) -> None:
        if self._full:
            self._included.append(included)

    def record_stage_event(self, event: TraceEvent) -> None:
        span = self._stage_span
        if span is None:
            return
        exclusions = self._stage_exclusions
        count_in = event.item_count  # Place reports its output count
        if event.stage is PipelineStage.PLACE:
            count_in += exclusions
        span.set_attribute("cupel.stage.item_count_in", count_in)
        span.set_attribute("cupel.stage.item_count_out", count_in - exclusions)
        if self._exclusions:
            span.set_attribute("cupel.exclusion.count", exclusions)
        self._end_stage()
        if self._full and event.stage is PipelineStage.PLACE and self._root is not None:
            for included in self._included:
                self._root.add_event(
                    "cupel.item.included",
                    {
                        "cupel.item.kind": str(included.item.kind),
                        "cupel.item.tokens": included.item.tokens,
                        "cupel.item.score": float(included.score),
                    },
                )
            self._included.clear()

    def on_run_end(self, total_candidates: int, total_tokens_considered: int) -> None:
        self._finish()

    def on_run_error(self, error: BaseException) -> None:
        """End the open stage span and the root span with an ``ERROR`` status and
        ``error`` recorded (the pipeline calls this when a run raises; a later call is a
        no-op)."""
        if self._state != "running":
            return
        status = Status(StatusCode.ERROR, f"{type(error).__name__}: {error}")
        attributes = {"error.type": f"{type(error).__module__}.{type(error).__qualname__}"}
        for span in (self._stage_span, self._root):
            if span is not None:
                if isinstance(error, Exception):
                    span.record_exception(error)
                span.set_status(status)
                span.set_attributes(attributes)
        self._finish()

    # -- helpers ---------------------------------------------------------------------
    def _end_stage(self) -> None:
        if self._stage_token is not None:
            otel_context.detach(self._stage_token)
            self._stage_token = None
        if self._stage_span is not None:
            self._stage_span.end()
            self._stage_span = None

    def _finish(self) -> None:
        if self._state != "running":
            return
        self._end_stage()
        if self._root_token is not None:
            otel_context.detach(self._root_token)
            self._root_token = None
        if self._root is not None:
            self._root.end()
        self._state = "ended"


def run_traced(
    pipeline: Pipeline,
    items: Sequence[ContextItem],
    budget: ContextBudget,
    *,
    verbosity: CupelVerbosity | str = CupelVerbosity.STAGE_ONLY,
    tracer_provider: TracerProvider | None = None,
    on_overflow: Callable[[OverflowEvent], Any] | None = None,
) -> ContextResult:
    """Run ``pipeline`` traced as OpenTelemetry spans; the result carries the report too.

    Equivalent to running with ``MultiTraceCollector(DiagnosticTraceCollector(),
    collector)`` inside ``with OpenTelemetryTraceCollector(verbosity, ...) as collector``:
    when the run raises, the spans still end (status ``ERROR``, exception recorded) and the
    exception propagates.
    """
    with OpenTelemetryTraceCollector(verbosity, tracer_provider=tracer_provider) as collector:
        return pipeline.run(
            items,
            budget,
            collector=MultiTraceCollector(DiagnosticTraceCollector(), collector),
            on_overflow=on_overflow,
        )
