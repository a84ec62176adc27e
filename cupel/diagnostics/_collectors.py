"""Trace collectors: the pipeline reports to one per run.

:class:`NullTraceCollector` (the default) records nothing and costs nothing: the
pipeline checks ``is_enabled`` once per stage and builds no event or reason otherwise.
:class:`DiagnosticTraceCollector` buffers stage events (and, at
``TraceDetailLevel.ITEM``, one event per decision) plus every inclusion and exclusion,
and builds the :class:`~cupel.SelectionReport` afterwards.

>>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
>>> collector = DiagnosticTraceCollector(TraceDetailLevel.ITEM)
>>> items = [ContextItem(content="a", tokens=5), ContextItem(content="b", tokens=50)]
>>> _ = Pipeline(RecencyScorer()).run(items, ContextBudget(max_tokens=10, target_tokens=10),
...                                   collector=collector)
>>> report = collector.build_report()
>>> [e.item.content for e in report.included], report.excluded[0].reason.name
(['a'], 'BudgetExceeded')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cupel._errors import InvalidOperationError
from cupel._model import ContextBudget
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._report import ExcludedItem, IncludedItem, SelectionReport
from cupel.slicers._base import CountRequirementShortfall

__all__ = ["DiagnosticTraceCollector", "NullTraceCollector", "TraceCollector"]


class TraceCollector:
    """The observer interface the pipeline reports to.

    ``record_stage_event`` and ``record_item_event`` are the spec's contract. The
    ``on_*`` hooks carry the decisions themselves; the pipeline calls them (and builds
    their arguments) only when ``is_enabled`` is true. Subclass and override what you need.
    """

    @property
    def is_enabled(self) -> bool:
        """Whether the pipeline should build events and decisions for this collector."""
        return False

    def record_stage_event(self, event: TraceEvent) -> None:
        """A stage finished (called once per stage, after the stage's item events)."""

    def record_item_event(self, event: TraceEvent) -> None:
        """One inclusion or exclusion decision, as a trace event."""

    def on_run_start(self, item_count: int, budget: ContextBudget) -> None:
        """A run begins with ``item_count`` candidates."""

    def on_stage_start(self, stage: PipelineStage) -> None:
        """A stage begins."""

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        """``stage`` excluded an item."""

    def on_included(self, included: IncludedItem) -> None:
        """An item is in the final window (called in placed order)."""

    def on_shortfalls(self, shortfalls: Sequence[CountRequirementShortfall]) -> None:
        """Count requirements the slicer could not meet."""

    def on_overflow(self, event: OverflowEvent) -> None:
        """``OverflowStrategy.PROCEED`` kept a window over its target."""

    def on_run_end(self, total_candidates: int, total_tokens_considered: int) -> None:
        """The run finished."""

    def build_report(self) -> SelectionReport | None:
        """The report of the run, for collectors that build one."""
        return None


class NullTraceCollector(TraceCollector):
    """The disabled collector: ``is_enabled`` is false and every call is a no-op."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NullTraceCollector()"


NULL_COLLECTOR = NullTraceCollector()


class DiagnosticTraceCollector(TraceCollector):
    """Records one run and builds its :class:`~cupel.SelectionReport`.

    ``detail_level=TraceDetailLevel.STAGE`` (default) keeps stage events only;
    ``ITEM`` adds one event per decision (each stage's item events precede its stage
    event). Inclusions and exclusions are recorded at every level, so the report is
    complete either way. Use one collector per run.
    """

    def __init__(
        self,
        detail_level: TraceDetailLevel = TraceDetailLevel.STAGE,
        *,
        observer: Callable[[TraceEvent], None] | None = None,
    ) -> None:
        self.detail_level = TraceDetailLevel(detail_level)
        self.observer = observer
        self.events: list[TraceEvent] = []
        self._included: list[IncludedItem] = []
        self._excluded: list[ExcludedItem] = []
        self._shortfalls: list[CountRequirementShortfall] = []
        self._totals: tuple[int, int] | None = None
        self._started = False
        self._overflow: OverflowEvent | None = None

    def __repr__(self) -> str:
        return f"DiagnosticTraceCollector(detail_level={self.detail_level.name})"

    @property
    def is_enabled(self) -> bool:
        return True

    def _emit(self, event: TraceEvent) -> None:
        self.events.append(event)
        if self.observer is not None:
            self.observer(event)

    def record_stage_event(self, event: TraceEvent) -> None:
        self._emit(event)

    def record_item_event(self, event: TraceEvent) -> None:
        if self.detail_level >= TraceDetailLevel.ITEM:
            self._emit(event)

    def on_run_start(self, item_count: int, budget: ContextBudget) -> None:
        if self._started:
            raise InvalidOperationError(
                "DiagnosticTraceCollector already recorded a run; use a new collector per run"
            )
        self._started = True

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        self._excluded.append(excluded)
        if self.detail_level >= TraceDetailLevel.ITEM:
            self._emit(
                TraceEvent(
                    stage,
                    0.0,
                    1,
                    f"excluded {excluded.item.content[:60]!r}: {excluded.reason.describe()}",
                )
            )

    def on_included(self, included: IncludedItem) -> None:
        self._included.append(included)
        if self.detail_level >= TraceDetailLevel.ITEM:
            self._emit(
                TraceEvent(
                    PipelineStage.PLACE,
                    0.0,
                    1,
                    f"included {included.item.content[:60]!r}: {included.reason.value} "
                    f"(score {included.score:.4f})",
                )
            )

    def on_shortfalls(self, shortfalls: Sequence[CountRequirementShortfall]) -> None:
        self._shortfalls.extend(shortfalls)

    def on_overflow(self, event: OverflowEvent) -> None:
        self._overflow = event

    def on_run_end(self, total_candidates: int, total_tokens_considered: int) -> None:
        self._totals = (total_candidates, total_tokens_considered)

    def build_report(self) -> SelectionReport:
        """The report of the recorded run (raises if no run completed)."""
        if self._totals is None:
            raise InvalidOperationError(
                "DiagnosticTraceCollector has no completed run to report on"
            )
        # Stable sort: equal scores keep exclusion order.
        excluded = sorted(self._excluded, key=lambda e: -e.score)
        return SelectionReport(
            events=tuple(self.events),
            included=tuple(self._included),
            excluded=tuple(excluded),
            total_candidates=self._totals[0],
            total_tokens_considered=self._totals[1],
            count_requirement_shortfalls=tuple(self._shortfalls),
            overflow=self._overflow,
        )
