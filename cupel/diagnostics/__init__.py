"""Diagnostics: trace collectors, events, inclusion/exclusion reasons and the report."""

from cupel._public import publish
from cupel.diagnostics._collectors import (
    NULL_COLLECTOR,
    DiagnosticTraceCollector,
    MultiTraceCollector,
    NullTraceCollector,
    ObserverError,
    ObserverErrorWarning,
    TraceCollector,
)
from cupel.diagnostics._entries import ExcludedItem, IncludedItem
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._outcomes import (
    BucketRounding,
    CapExclusion,
    CountRequirementShortfall,
    Recalled,
    SliceOutcome,
)
from cupel.diagnostics._reasons import (
    BudgetExceeded,
    CountCapExceeded,
    CountRequireCandidatesExhausted,
    Deduplicated,
    ExclusionReason,
    Filtered,
    InclusionReason,
    InvalidToolCall,
    NegativeTokens,
    OutsideWindow,
    PackingChoice,
    PinnedOverride,
    QuotaCapExceeded,
    QuotaRequireDisplaced,
    ScoredTooLow,
    UnknownExclusionReason,
    exclusion_reason_from_dict,
)
from cupel.diagnostics._report import SelectionReport

__all__ = [
    "NULL_COLLECTOR",
    "BucketRounding",
    "BudgetExceeded",
    "CapExclusion",
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
    "InvalidToolCall",
    "MultiTraceCollector",
    "NegativeTokens",
    "NullTraceCollector",
    "ObserverError",
    "ObserverErrorWarning",
    "OutsideWindow",
    "OverflowEvent",
    "PackingChoice",
    "PinnedOverride",
    "PipelineStage",
    "QuotaCapExceeded",
    "QuotaRequireDisplaced",
    "Recalled",
    "ScoredTooLow",
    "SelectionReport",
    "SliceOutcome",
    "TraceCollector",
    "TraceDetailLevel",
    "TraceEvent",
    "UnknownExclusionReason",
    "exclusion_reason_from_dict",
]

publish(__name__, globals(), __all__)
