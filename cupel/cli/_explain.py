"""The ``explain`` account (private): every candidate in exactly one stage, the one whose
decision stands in the final report: Classify (pinned items, negative token counts),
Score / Deduplicate (duplicates), Slice (the slicer's picks and rejections) or Place
(items dropped by ``OverflowStrategy.TRUNCATE``).

>>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
>>> items = [ContextItem(content="keep", tokens=5), ContextItem(content="big", tokens=50)]
>>> account = explain(Pipeline(RecencyScorer()), items, ContextBudget(max_tokens=20,
...                                                                   target_tokens=20))
>>> for decision in account.stages[2].decisions:
...     print(decision.item.content, "->", decision.detail)
keep -> Scored: selected within the budget
big -> BudgetExceeded: needs 50 tokens, 15 available
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import ContextResult, Pipeline, effective_budget
from cupel.analytics import budget_utilization, kind_diversity, timestamp_coverage
from cupel.cli._wording import ReasonWording, count, reason_detail, undated_note
from cupel.diagnostics import (
    DiagnosticTraceCollector,
    ExcludedItem,
    IncludedItem,
    InclusionReason,
    PipelineStage,
    SelectionReport,
    TraceDetailLevel,
)

__all__ = ["CompareRow", "Decision", "Explanation", "StageAccount", "StageRecorder", "explain"]


class StageRecorder(DiagnosticTraceCollector):
    """An item-level :class:`~cupel.DiagnosticTraceCollector` that also remembers which
    stage made each exclusion (keyed by the identity of the report's ``ExcludedItem``)."""

    def __init__(self) -> None:
        super().__init__(TraceDetailLevel.ITEM)
        self.stage_of: dict[int, PipelineStage] = {}  # the report keeps the entries alive

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        self.stage_of[id(excluded)] = stage
        super().on_excluded(stage, excluded)


@dataclass(frozen=True, slots=True)
class Decision:
    """One candidate's final decision, as an explanation shows it."""

    item: ContextItem
    score: float | None
    """The score the decision used; ``None`` when the item was never scored (pinned,
    negative tokens)."""
    included: bool
    reason: str
    detail: str
    payload: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "content": self.item.content,
            "kind": str(self.item.kind),
            "tokens": self.item.tokens,
            "score": self.score,
            "decision": "included" if self.included else "excluded",
            "reason": self.payload,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class StageAccount:
    """What one stage decided: a summary line and its decisions."""

    stage: str
    summary: str
    decisions: tuple[Decision, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "stage": self.stage,
            "summary": self.summary,
            "decisions": [d.to_dict() for d in self.decisions],
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    """A run explained stage by stage, plus its report and totals."""

    budget: ContextBudget
    stages: tuple[StageAccount, ...]
    report: SelectionReport
    result: ContextResult
    effective_target: int
    stage_of: dict[int, PipelineStage]

    def summary(self) -> dict[str, Any]:
        """Totals: items, tokens, budget use, exclusions by reason, shortfalls, overflow."""
        report, budget = self.report, self.budget
        used = self.result.total_tokens
        return {
            "candidates": report.total_candidates,
            "tokens_considered": report.total_tokens_considered,
            "included": len(report.included),
            "included_tokens": used,
            "excluded": len(report.excluded),
            "excluded_by_reason": dict(Counter(e.reason.name for e in report.excluded)),
            "effective_target_tokens": self.effective_target,
            "target_utilization": used / budget.target_tokens if budget.target_tokens else None,
            "budget_utilization": budget_utilization(report, budget),
            "kind_diversity": kind_diversity(report),
            "timestamp_coverage": timestamp_coverage(report),
            "shortfalls": [s.to_dict() for s in report.count_requirement_shortfalls],
            "overflow_tokens": report.overflow.tokens_over_budget if report.overflow else 0,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON form: budget, stages, summary and the report's wire form."""
        return {
            "budget": self.budget.to_dict(),
            "stages": [s.to_dict() for s in self.stages],
            "summary": self.summary(),
            "report": self.report.to_dict(),
        }


def _included(entry: IncludedItem) -> Decision:
    pinned = entry.reason is InclusionReason.PINNED
    return Decision(
        entry.item,
        None if pinned else entry.score,
        True,
        entry.reason.value,
        reason_detail(entry),
        entry.reason.to_dict(),
    )


def _excluded(entry: ExcludedItem, wording: ReasonWording, *, scored: bool = True) -> Decision:
    return Decision(
        entry.item,
        entry.score if scored else None,
        False,
        entry.reason.name,
        wording(entry),
        entry.reason.to_dict(),
    )


def _by_score(decisions: list[Decision]) -> tuple[Decision, ...]:
    return tuple(sorted(decisions, key=lambda d: -(d.score if d.score is not None else 1.0)))


def explain(
    pipeline: Pipeline,
    items: Sequence[ContextItem],
    budget: ContextBudget,
    *,
    bucket_flag: str = "--bucket-size",
) -> Explanation:
    """Run ``pipeline`` with an item-level trace and group its decisions by stage."""
    recorder = StageRecorder()
    result = pipeline.run(items, budget, collector=recorder)
    report = recorder.build_report()
    wording = ReasonWording(report, pipeline, bucket_flag=bucket_flag)
    groups: dict[PipelineStage, list[ExcludedItem]] = {}
    for entry in report.excluded:
        stage = recorder.stage_of.get(id(entry), PipelineStage.SLICE)
        groups.setdefault(stage, []).append(entry)
    pinned = [e for e in report.included if e.reason is InclusionReason.PINNED]
    picked = [e for e in report.included if e.reason is not InclusionReason.PINNED]
    negative = groups.get(PipelineStage.CLASSIFY, [])
    duplicates = groups.get(PipelineStage.DEDUPLICATE, [])
    rejected = groups.get(PipelineStage.SLICE, [])
    truncated = groups.get(PipelineStage.PLACE, [])
    pinned_tokens = sum(e.item.tokens for e in pinned)
    eff = effective_budget(budget, pinned_tokens)
    scored_count = report.total_candidates - len(pinned) - len(negative)

    classify = StageAccount(
        "Classify",
        f"{report.total_candidates} candidates: {len(pinned)} pinned "
        f"({pinned_tokens:,} tokens), {len(negative)} with negative tokens, "
        f"{scored_count} go on to scoring",
        (*map(_included, pinned), *(_excluded(e, wording, scored=False) for e in negative)),
    )
    scores = [e.score for e in picked] + [e.score for e in (*duplicates, *rejected, *truncated)]
    score_range = f" (scores {min(scores):.3f} to {max(scores):.3f})" if scores else ""
    dedup = (
        f"deduplication on: {count(len(duplicates), 'duplicate')} removed"
        if pipeline.deduplication
        else "deduplication off"
    )
    score = StageAccount(
        "Score/Deduplicate",
        f"{scored_count} items scored by {type(pipeline.scorer).__name__}{score_range}; {dedup}",
        _by_score([_excluded(e, wording) for e in duplicates]),
    )
    sliced_tokens = sum(e.item.tokens for e in picked) + sum(e.item.tokens for e in truncated)
    room = (
        f"min(target {budget.target_tokens:,}, max {budget.max_tokens:,} - output reserve "
        f"{budget.output_reserve:,})"
        if budget.output_reserve
        else f"target {budget.target_tokens:,}"
    )
    slice_ = StageAccount(
        "Slice",
        f"{type(pipeline.slicer).__name__} with effective target {eff.target_tokens:,} tokens "
        f"({room} - pinned {pinned_tokens:,}"
        + (f" - reserved {sum(budget.reserved_slots.values()):,}" if budget.reserved_slots else "")
        + (
            f", less {budget.estimation_safety_margin_percent:g}% safety margin"
            if budget.estimation_safety_margin_percent
            else ""
        )
        + f"): selected {len(picked) + len(truncated)} of "
        f"{len(picked) + len(truncated) + len(rejected)} "
        f"({sliced_tokens:,} tokens), excluded {len(rejected)}",
        _by_score([_included(e) for e in picked] + [_excluded(e, wording) for e in rejected]),
    )
    place_summary = (
        f"{type(pipeline.placer).__name__} ordered {count(len(report.included), 'item')} "
        f"({result.total_tokens:,} tokens)"
    )
    if truncated:
        place_summary += f"; overflow truncate dropped {len(truncated)}"
    undated = undated_note(pipeline, report)
    if undated is not None:
        place_summary += f"; {undated}"
    if report.overflow is not None:
        place_summary += (
            f"; window exceeds target by {report.overflow.tokens_over_budget:,} tokens "
            "(overflow proceed)"
        )
    place = StageAccount(
        "Place", place_summary, _by_score([_excluded(e, wording) for e in truncated])
    )
    return Explanation(
        budget,
        (classify, score, slice_, place),
        report,
        result,
        eff.target_tokens,
        dict(recorder.stage_of),
    )


@dataclass(frozen=True, slots=True)
class CompareRow:
    """One swinging item: its content and, per policy label, ``(included, reason name)``."""

    content: str
    cells: tuple[tuple[str, bool, str | None], ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "content": self.content,
            "statuses": {label: "included" if inc else "excluded" for label, inc, _ in self.cells},
            "reasons": {label: reason for label, _, reason in self.cells},
        }
