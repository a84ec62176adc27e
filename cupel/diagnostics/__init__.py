"""Diagnostics: trace collectors, events, inclusion/exclusion reasons and the report."""

from cupel.diagnostics._collectors import (
    NULL_COLLECTOR,
    DiagnosticTraceCollector,
    MultiTraceCollector,
    NullTraceCollector,
    ObserverError,
    ObserverErrorWarning,
    TraceCollector,
)
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._reasons import (
    BudgetExceeded,
    CountCapExceeded,
    CountRequireCandidatesExhausted,
    Deduplicated,
    ExclusionReason,
    Filtered,
    InclusionReason,
    NegativeTokens,
    PinnedOverride,
    QuotaCapExceeded,
    QuotaRequireDisplaced,
    ScoredTooLow,
    UnknownExclusionReason,
    exclusion_reason_from_dict,
)
from cupel.diagnostics._report import ExcludedItem, IncludedItem, SelectionReport
from cupel.slicers._base import CountRequirementShortfall

__all__ = [
    "NULL_COLLECTOR",
    "BudgetExceeded",
    "CountCapExceeded",
    "CountRequireCandidatesExhausted",
    "CountRequirementShortfall",
    "Deduplicated",
    "DiagnosticTraceCollector",
    "ExcludedItem",
    "ExclusionReason",
    "Filtered",
    "IncludedItem",
    "InclusionReason",
    "MultiTraceCollector",
    "NegativeTokens",
    "NullTraceCollector",
    "ObserverError",
    "ObserverErrorWarning",
    "OverflowEvent",
    "PinnedOverride",
    "PipelineStage",
    "QuotaCapExceeded",
    "QuotaRequireDisplaced",
    "ScoredTooLow",
    "SelectionReport",
    "TraceCollector",
    "TraceDetailLevel",
    "TraceEvent",
    "UnknownExclusionReason",
    "exclusion_reason_from_dict",
]
