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
>>> for event in collector.events:
...     print(event.stage.value, event.item_count, event.message or "")
Classify 2
Score 2
Deduplicate 2
Slice 1 excluded 'b': BudgetExceeded: needs 50 tokens, 5 available
Slice 2
Place 1 included 'a': Scored (score 0.0000)
Place 1
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cupel._errors import InvalidOperationError, refusal
from cupel._model import ContextBudget, ascii_fold
from cupel.diagnostics._entries import ExcludedItem, IncludedItem, by_score
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._outcomes import CountRequirementShortfall
from cupel.diagnostics._report import Deferred, SelectionReport

Entry = TypeVar("Entry", IncludedItem, ExcludedItem)

__all__ = [
    "DiagnosticTraceCollector",
    "MultiTraceCollector",
    "NullTraceCollector",
    "ObserverError",
    "ObserverErrorWarning",
    "TraceCollector",
    "deferring",
    "exclusion_event",
    "inclusion_event",
]

Entries = Callable[[], Sequence[Entry]]
"""Builds a stage's entries when the report is first read (see :func:`deferring`)."""

TraceObserver = Callable[[TraceEvent], object]
"""An observer receives each recorded :class:`TraceEvent`; its return value is ignored."""


def exclusion_event(stage: PipelineStage, excluded: ExcludedItem) -> TraceEvent:
    """The item-level event of one exclusion decision (``duration_ms`` 0.0, ``item_count`` 1).

    >>> from cupel import ContextItem, NegativeTokens
    >>> event = exclusion_event(PipelineStage.CLASSIFY,
    ...     ExcludedItem(ContextItem(content="x", tokens=-3), 0.0, NegativeTokens(-3)))
    >>> event.duration_ms, event.item_count, event.message
    (0.0, 1, "excluded 'x': NegativeTokens: tokens = -3")
    """
    return TraceEvent(
        stage, 0.0, 1, f"excluded {excluded.item.content[:60]!r}: {excluded.reason.describe()}"
    )


def inclusion_event(included: IncludedItem) -> TraceEvent:
    """The item-level event of one inclusion decision (recorded at the Place stage)."""
    return TraceEvent(
        PipelineStage.PLACE,
        0.0,
        1,
        f"included {included.item.content[:60]!r}: {included.reason.value} "
        f"(score {included.score:.4f})",
    )


class TraceCollector:
    """The observer interface the pipeline reports to.

    ``record_stage_event`` and ``record_item_event`` are the spec's contract. The
    ``on_*`` hooks carry the decisions themselves; the pipeline calls them (and builds
    their arguments) only when ``is_enabled`` is true. Subclass and override what you need:
    a subclass that overrides ``record_item_event`` receives one item event per decision
    from the default ``on_excluded`` / ``on_included`` (before the stage's own event).

    >>> class Printer(TraceCollector):
    ...     is_enabled = True
    ...     def record_item_event(self, event: TraceEvent) -> None:
    ...         print(event.stage.value, event.message)
    >>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
    >>> _ = Pipeline(RecencyScorer()).run([ContextItem(content="hi", tokens=1)],
    ...     ContextBudget(max_tokens=5, target_tokens=5), collector=Printer())
    Place included 'hi': Scored (score 0.0000)
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
        """``stage`` excluded an item (forwarded to ``record_item_event`` when overridden)."""
        if type(self).record_item_event is not TraceCollector.record_item_event:
            self.record_item_event(exclusion_event(stage, excluded))

    def on_included(self, included: IncludedItem) -> None:
        """An item is in the final window (called in placed order; forwarded to
        ``record_item_event`` when overridden)."""
        if type(self).record_item_event is not TraceCollector.record_item_event:
            self.record_item_event(inclusion_event(included))

    def on_shortfalls(self, shortfalls: Sequence[CountRequirementShortfall]) -> None:
        """Count requirements the slicer could not meet."""

    def on_overflow(self, event: OverflowEvent) -> None:
        """``OverflowStrategy.PROCEED`` kept a window over its target."""

    def on_run_end(self, total_candidates: int, total_tokens_considered: int) -> None:
        """The run finished."""

    def on_run_error(self, error: BaseException) -> None:
        """The run raised ``error`` (pinned budget, overflow under THROW, a failing stage);
        the pipeline re-raises it after this call."""

    def build_report(self) -> SelectionReport | None:
        """The report of the run, for collectors that build one."""
        return None


class NullTraceCollector(TraceCollector):
    """The disabled collector: ``is_enabled`` is false and every call is a no-op."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NullTraceCollector()"


NULL_COLLECTOR = NullTraceCollector()


@dataclass(frozen=True, slots=True)
class ObserverError:
    """An exception an observer raised, and the event it was given."""

    event: TraceEvent
    error: Exception


class ObserverErrorWarning(RuntimeWarning):
    """Issued (once per collector) when a trace observer raises; the run carries on."""


class DiagnosticTraceCollector(TraceCollector):
    """Records one run and builds its :class:`~cupel.SelectionReport`.

    ``detail_level=TraceDetailLevel.STAGE`` (default) keeps stage events only;
    ``ITEM`` adds one event per decision (each stage's item events precede its stage
    event); the level may also be given by name (``"item"``, any case) or value (``1``).
    Inclusions and exclusions are recorded at every level, so the report is complete
    either way. Use one collector per run.

    ``observer`` is called synchronously with every recorded event, as it is recorded.
    Observer failures are **isolated**: an exception (any ``Exception``) raised by the
    observer is caught, the event stays recorded, the run and its report are unaffected,
    the failure is kept in :attr:`observer_errors`, and the first failure of a collector
    issues an :class:`ObserverErrorWarning` (turn warnings into errors, e.g. pytest's
    ``-W error``, to make a failing observer abort the run instead).

    >>> seen = []
    >>> def flaky(event):
    ...     seen.append(event.stage.value)
    ...     if event.stage is PipelineStage.SCORE:
    ...         raise ValueError("dashboard offline")
    >>> import warnings
    >>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
    >>> collector = DiagnosticTraceCollector(observer=flaky)
    >>> with warnings.catch_warnings(record=True):
    ...     result = Pipeline(RecencyScorer()).run([ContextItem(content="a", tokens=1)],
    ...         ContextBudget(max_tokens=5, target_tokens=5), collector=collector)
    >>> seen, [e.error for e in collector.observer_errors]
    (['Classify', 'Score', 'Deduplicate', 'Slice', 'Place'], [ValueError('dashboard offline')])
    >>> [i.content for i in result.items], len(result.report.events)
    (['a'], 5)
    """

    def __init__(
        self,
        detail_level: TraceDetailLevel | str = TraceDetailLevel.STAGE,
        *,
        observer: TraceObserver | None = None,
    ) -> None:
        owner = "DiagnosticTraceCollector"
        try:
            self.detail_level = _detail_level(detail_level)
        except ValueError:
            allowed = ", ".join(f"{m.name} ({m.value})" for m in TraceDetailLevel)
            raise refusal(
                owner, "detail_level", f"must be one of {allowed}", detail_level
            ) from None
        if observer is not None and not callable(observer):
            rule = "must be callable (it receives each TraceEvent) or None"
            raise refusal(owner, "observer", rule, observer)
        self.observer = observer
        self.events: list[TraceEvent] = []
        self.observer_errors: list[ObserverError] = []
        """Exceptions the observer raised, in order, with the events that triggered them."""
        self._included: list[IncludedItem] = []
        self._excluded: list[ExcludedItem] = []
        # Entries the pipeline hands over unbuilt (see deferring): (how many recorded
        # entries precede them, their builder), in decision order.
        self._deferred_included: list[tuple[int, Entries[IncludedItem]]] = []
        self._deferred_excluded: list[tuple[int, Entries[ExcludedItem]]] = []
        self._entries: tuple[Deferred[IncludedItem], Deferred[ExcludedItem]] | None = None
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
        observer = self.observer
        if observer is None:
            return
        try:
            observer(event)
        except Exception as error:
            self.observer_errors.append(ObserverError(event, error))
            if len(self.observer_errors) == 1:
                warnings.warn(
                    f"trace observer {observer!r} raised {error!r} on a {event.to_dict()['stage']} "
                    f"event; the run continues and further observer errors of this collector "
                    f"are kept in DiagnosticTraceCollector.observer_errors",
                    ObserverErrorWarning,
                    stacklevel=2,
                )

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
            self.record_item_event(exclusion_event(stage, excluded))

    def on_included(self, included: IncludedItem) -> None:
        self._included.append(included)
        if self.detail_level >= TraceDetailLevel.ITEM:
            self.record_item_event(inclusion_event(included))

    def defer_excluded(self, build: Entries[ExcludedItem]) -> None:
        """Exclusions decided now, their entries built by ``build()`` when the report's
        ``excluded`` is first read (only through :func:`deferring`)."""
        self._deferred_excluded.append((len(self._excluded), build))

    def defer_included(self, build: Entries[IncludedItem]) -> None:
        """Inclusions decided now, built when the report's ``included`` is first read."""
        self._deferred_included.append((len(self._included), build))

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
        if self._entries is None:  # built on the report's first read, in decision order
            included = _spliced(self._included, self._deferred_included)
            unsorted = _spliced(self._excluded, self._deferred_excluded)
            self._entries = (Deferred(included), Deferred(lambda: by_score(unsorted())))
        return SelectionReport.deferred(
            tuple(self.events),
            *self._entries,
            self._totals[0],
            self._totals[1],
            tuple(self._shortfalls),
            self._overflow,
        )


def deferring(trace: TraceCollector) -> DiagnosticTraceCollector | None:
    """``trace`` when nothing it does needs the entries one by one as the run goes: a
    :class:`DiagnosticTraceCollector` at ``STAGE`` detail whose per-item methods are its
    own (observers then see stage events only). The pipeline then hands it each stage's
    entries unbuilt (:meth:`~DiagnosticTraceCollector.defer_excluded`), and the report
    builds them on first read; else it calls ``on_excluded`` / ``on_included`` per item."""
    if not isinstance(trace, DiagnosticTraceCollector):
        return None
    methods = ("on_excluded", "on_included", "record_item_event")
    own = all(getattr(type(trace), m) is getattr(DiagnosticTraceCollector, m) for m in methods)
    return trace if own and trace.detail_level < TraceDetailLevel.ITEM else None


def _spliced(
    recorded: list[Entry], deferred: list[tuple[int, Entries[Entry]]]
) -> Callable[[], list[Entry]]:
    """The builder of all entries in decision order: the recorded ones with the deferred
    ones built and put back where they were decided."""
    recorded = list(recorded)
    deferred = list(deferred)

    def build() -> list[Entry]:
        out: list[Entry] = []
        done = 0
        for at, entries in deferred:
            out.extend(recorded[done:at])
            out.extend(entries())
            done = at
        out.extend(recorded[done:])
        return out

    return build


def _detail_level(value: object) -> TraceDetailLevel:
    """A level from a member, its value or its name (ASCII case-insensitive)."""
    if isinstance(value, int):
        return TraceDetailLevel(value)  # ValueError for an unknown value
    if isinstance(value, str):
        folded = ascii_fold(value.strip())
        for member in TraceDetailLevel:
            if ascii_fold(member.name) == folded:
                return member
    raise ValueError(value)


class MultiTraceCollector(TraceCollector):
    """Forwards one run to several collectors (e.g. a report and OpenTelemetry spans).

    Enabled when any of its collectors is; disabled ones receive no calls.
    ``build_report`` returns the first report one of them builds.

    >>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
    >>> first, second = DiagnosticTraceCollector(), DiagnosticTraceCollector()
    >>> result = Pipeline(RecencyScorer()).run([ContextItem(content="a", tokens=1)],
    ...     ContextBudget(max_tokens=5, target_tokens=5),
    ...     collector=MultiTraceCollector(first, NULL_COLLECTOR, second))
    >>> result.report == first.build_report() == second.build_report()
    True
    """

    def __init__(self, *collectors: TraceCollector) -> None:
        for index, collector in enumerate(collectors):
            if not isinstance(collector, TraceCollector):
                field = f"collectors[{index}]"
                raise refusal("MultiTraceCollector", field, "must be a TraceCollector", collector)
        self.collectors: tuple[TraceCollector, ...] = collectors
        self._enabled = tuple(c for c in collectors if c.is_enabled)

    def __repr__(self) -> str:
        return f"MultiTraceCollector({', '.join(map(repr, self.collectors))})"

    @property
    def is_enabled(self) -> bool:
        return bool(self._enabled)

    def record_stage_event(self, event: TraceEvent) -> None:
        for collector in self._enabled:
            collector.record_stage_event(event)

    def record_item_event(self, event: TraceEvent) -> None:
        for collector in self._enabled:
            collector.record_item_event(event)

    def on_run_start(self, item_count: int, budget: ContextBudget) -> None:
        for collector in self._enabled:
            collector.on_run_start(item_count, budget)

    def on_stage_start(self, stage: PipelineStage) -> None:
        for collector in self._enabled:
            collector.on_stage_start(stage)

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        for collector in self._enabled:
            collector.on_excluded(stage, excluded)

    def on_included(self, included: IncludedItem) -> None:
        for collector in self._enabled:
            collector.on_included(included)

    def on_shortfalls(self, shortfalls: Sequence[CountRequirementShortfall]) -> None:
        for collector in self._enabled:
            collector.on_shortfalls(shortfalls)

    def on_overflow(self, event: OverflowEvent) -> None:
        for collector in self._enabled:
            collector.on_overflow(event)

    def on_run_end(self, total_candidates: int, total_tokens_considered: int) -> None:
        for collector in self._enabled:
            collector.on_run_end(total_candidates, total_tokens_considered)

    def on_run_error(self, error: BaseException) -> None:
        for collector in self._enabled:
            collector.on_run_error(error)

    def build_report(self) -> SelectionReport | None:
        for collector in self._enabled:
            report = collector.build_report()
            if report is not None:
                return report
        return None
