"""Text and JSON accounts for the ``cupel`` command line: ``explain`` and ``compare``.

Package-private: :mod:`cupel.cli` builds the data here and prints it. An
:class:`Explanation` puts every candidate in exactly one stage, the one whose decision
stands in the final report: Classify (pinned items, negative token counts), Score /
Deduplicate (duplicates), Slice (the slicer's picks and rejections) or Place (items
dropped by ``OverflowStrategy.TRUNCATE``).

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

from cupel._cli_io import terminal_safe
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import ContextResult, Pipeline, effective_budget
from cupel.analytics import budget_utilization, kind_diversity, timestamp_coverage
from cupel.diagnostics import (
    BudgetExceeded,
    DiagnosticTraceCollector,
    ExcludedItem,
    IncludedItem,
    InclusionReason,
    OverflowEvent,
    PipelineStage,
    SelectionReport,
    TraceDetailLevel,
)

__all__ = [
    "CompareRow",
    "Decision",
    "Explanation",
    "ReasonWording",
    "StageAccount",
    "StageRecorder",
    "clip",
    "explain",
    "format_compare",
    "format_explanation",
    "reason_detail",
    "undated_note",
]

_INCLUSION_DETAIL = {
    InclusionReason.PINNED: "Pinned: bypasses scoring and slicing",
    InclusionReason.SCORED: "Scored: selected within the budget",
    InclusionReason.ZERO_TOKEN: "ZeroToken: costs no tokens",
}


def clip(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (``…`` marks a cut); control
    characters are shown escaped (``\\x1b``), never sent to the terminal."""
    flat = terminal_safe(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


class ReasonWording:
    """The one wording of every reason, for every text the CLI writes (``select``,
    ``demo``, ``explain``, ``min-budget``, the HTML page): the reason's
    :meth:`~cupel.diagnostics.ExclusionReason.describe`, plus why a
    ``BudgetExceeded`` item that would fit in the tokens left was still left out — by
    knapsack bucket rounding (item sizes round up, the budget down, to whole buckets),
    by a quota share, or by the slicer's choice.

    ``bucket_flag`` names the bucket size where the user set it (``--bucket-size`` from
    the command line, ``bucket_size`` in a policy).

    >>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer, KnapsackSlice
    >>> items = [ContextItem(content="a", tokens=100, timestamp="2025-01-02T00:00:00Z"),
    ...          ContextItem(content="b", tokens=52, timestamp="2025-01-01T00:00:00Z")]
    >>> pipeline = Pipeline(RecencyScorer(), KnapsackSlice(bucket_size=100))
    >>> report = pipeline.dry_run(items, ContextBudget(max_tokens=199, target_tokens=199)).report
    >>> wording = ReasonWording(report, pipeline)
    >>> print(wording(report.excluded[0]))  # doctest: +NORMALIZE_WHITESPACE
    BudgetExceeded: needs 52 tokens, 99 available; only knapsack bucket rounding excludes
    it: with --bucket-size 100 it takes 1 bucket and 0 of 1 are left
    """

    def __init__(
        self,
        report: SelectionReport,
        pipeline: Pipeline,
        *,
        bucket_flag: str = "--bucket-size",
    ) -> None:
        from cupel.slicers import KnapsackSlice, QuotaSlice

        slicer = pipeline.slicer
        self._slicer_name = type(slicer).__name__
        self._bucket_flag = bucket_flag
        size = slicer.bucket_size if type(slicer) is KnapsackSlice else None
        if size == "auto":  # the size this run used, known when rounding cost something
            rounding = report.bucket_rounding
            size = None if rounding is None else rounding.bucket_size
        self._bucket_size: int | None = size
        self._quota = isinstance(slicer, QuotaSlice) or bool(
            getattr(slicer, "is_count_quota", False)
        )
        self._selected = [
            e.item.tokens for e in report.included if e.reason is InclusionReason.SCORED
        ]
        self._memo: dict[tuple[int, int], str] = {}

    def __call__(self, entry: IncludedItem | ExcludedItem) -> str:
        """``entry``'s reason in words, with its numbers."""
        if isinstance(entry, IncludedItem):
            return _INCLUSION_DETAIL.get(entry.reason, entry.reason.value)
        reason = entry.reason
        text = reason.describe()
        if isinstance(reason, BudgetExceeded) and reason.item_tokens <= reason.available_tokens:
            key = (reason.item_tokens, reason.available_tokens)
            why = self._memo.get(key)
            if why is None:
                why = self._memo[key] = self._fits_but_excluded(*key)
            text = f"{text}; {why}"
        return terminal_safe(text)

    def _fits_but_excluded(self, tokens: int, available: int) -> str:
        size = self._bucket_size
        if size is not None:
            capacity = (available + sum(self._selected)) // size
            left = capacity - sum(-(-t // size) for t in self._selected if t > 0)
            needs = -(-tokens // size)
            if needs > left:
                return (
                    f"only knapsack bucket rounding excludes it: with {self._bucket_flag} "
                    f"{size} it takes {_count(needs, 'bucket')} and {left:,} of "
                    f"{capacity:,} are left"
                )
            return "it fits, but the knapsack's best-scoring packing leaves it out"
        if self._quota:
            return f"it fits the tokens left, but not its kind's share under {self._slicer_name}"
        return f"it fits the tokens left, but {self._slicer_name} left it out"


def undated_note(pipeline: Pipeline, report: SelectionReport) -> str | None:
    """Under the chronological placer, why some window items come after the newest ones:
    items without a timestamp go last (the specification's rule). ``None`` when no
    such item is placed after dated ones."""
    from cupel.placers import ChronologicalPlacer

    if type(pipeline.placer) is not ChronologicalPlacer:
        return None
    window = [entry.item for entry in report.included]
    undated = [item for item in window if item.timestamp is None]
    if not undated or len(undated) == len(window):
        return None
    kinds = Counter(str(item.kind) for item in undated).most_common()
    listed = ", ".join(f"{kind} {n}" for kind, n in kinds)
    return (
        f"{_count(len(undated), 'item')} without a timestamp ({listed}) placed after the "
        "dated ones: the chronological placer puts undated items last (give them a "
        "timestamp, or use --placer u-shaped)"
    )


def reason_detail(entry: IncludedItem | ExcludedItem) -> str:
    """The reason with its numbers, e.g. ``BudgetExceeded: needs 400 tokens, 50 available``
    (without a pipeline's context: see :class:`ReasonWording`)."""
    if isinstance(entry, IncludedItem):
        return _INCLUSION_DETAIL.get(entry.reason, entry.reason.value)
    return terminal_safe(entry.reason.describe())


class StageRecorder(DiagnosticTraceCollector):
    """An item-level :class:`~cupel.DiagnosticTraceCollector` that also remembers which
    stage made each exclusion (keyed by the identity of the report's ``ExcludedItem``)."""

    def __init__(self) -> None:
        super().__init__(TraceDetailLevel.ITEM)
        self.stage_of: dict[int, PipelineStage] = {}
        self._kept: list[ExcludedItem] = []  # keeps the ids above valid

    def on_excluded(self, stage: PipelineStage, excluded: ExcludedItem) -> None:
        self.stage_of[id(excluded)] = stage
        self._kept.append(excluded)
        super().on_excluded(stage, excluded)

    def stage(self, excluded: ExcludedItem) -> PipelineStage | None:
        """The stage that excluded ``excluded`` (an entry of the built report)."""
        return self.stage_of.get(id(excluded))


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
    pinned_tokens: int
    stage_of: dict[int, PipelineStage]
    wording: ReasonWording

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
            "target_utilization": _ratio(used, budget.target_tokens),
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


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


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
        stage = recorder.stage(entry) or PipelineStage.SLICE
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
        tuple(
            [
                *(_included(e) for e in pinned),
                *(_excluded(e, wording, scored=False) for e in negative),
            ]
        ),
    )
    scores = [e.score for e in picked] + [e.score for e in (*duplicates, *rejected, *truncated)]
    score_range = f" (scores {min(scores):.3f} to {max(scores):.3f})" if scores else ""
    dedup = (
        f"deduplication on: {_count(len(duplicates), 'duplicate')} removed"
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
        f"{type(pipeline.placer).__name__} ordered {_count(len(report.included), 'item')} "
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
        pinned_tokens,
        dict(recorder.stage_of),
        wording,
    )


# -- text ----------------------------------------------------------------------------------
def _decision_line(d: Decision, width: int) -> str:
    if d.score is not None:
        score = f"{d.score:6.3f}"
    else:
        score = "pinned" if d.reason == InclusionReason.PINNED.value else "   n/a"
    mark = "+" if d.included else "-"
    preview = '"' + clip(d.item.content, 44) + '"'
    verdict = "included" if d.included else "excluded"
    head = (
        f"  {mark} {score} {d.item.tokens:>6} tok {clip(str(d.item.kind), 12):<12} {preview:<46} "
    )
    line = f"{head}{verdict}: {d.detail}"
    if len(line) > width and "; " in d.detail:
        # The reason's numbers on the line, the why on the next one.
        first, rest = d.detail.split("; ", 1)
        line = f"{head}{verdict}: {first};\n{' ' * 11}{rest}"
    return "\n".join(
        part if len(part) <= width else part[: width - 1] + "…" for part in line.split("\n")
    )


def format_explanation(explanation: Explanation, header: Sequence[str], width: int = 160) -> str:
    """The readable account: header lines, each stage with its decisions, the window
    in placed order, and a summary."""
    lines = [*header]
    for account in explanation.stages:
        lines += ["", f"{account.stage}: {account.summary}"]
        lines += [_decision_line(d, width) for d in account.decisions]
        if account.stage == "Place":
            lines.append("  window (placed order):")
            for i, entry in enumerate(explanation.report.included, start=1):
                lines.append(
                    f"  {i:>6}. {entry.item.tokens:>6} tok {clip(str(entry.item.kind), 12):<12} "
                    f"{clip(entry.item.content, 60)}"
                )
    s = explanation.summary()
    budget = explanation.budget
    target_pct = _pct(s["target_utilization"])
    max_pct = _pct(s["budget_utilization"])
    lines += [
        "",
        "Summary:",
        f"  included {s['included']} of {s['candidates']} items, "
        f"{s['included_tokens']:,} of {s['tokens_considered']:,} tokens",
        f"  budget use: {target_pct} of target {budget.target_tokens:,}, "
        f"{max_pct} of max {budget.max_tokens:,}"
        + (f" (output reserve {budget.output_reserve:,})" if budget.output_reserve else ""),
    ]
    lines.append(
        f"  window mix: {_count(s['kind_diversity'], 'kind')}, "
        f"{_pct(s['timestamp_coverage'])} of items timestamped"
    )
    by_reason = ", ".join(f"{k} {n}" for k, n in s["excluded_by_reason"].items())
    lines.append(f"  excluded {s['excluded']}" + (f" ({by_reason})" if by_reason else ""))
    shortfalls = explanation.report.count_requirement_shortfalls
    if shortfalls:
        for sf in shortfalls:
            lines.append(
                f"  shortfall: kind {sf.kind} has {sf.satisfied_count} of "
                f"{sf.required_count} required items"
            )
    else:
        lines.append("  shortfalls: none")
    overflow: OverflowEvent | None = explanation.report.overflow
    lines.append(
        f"  overflow: window exceeds target by {overflow.tokens_over_budget:,} tokens"
        if overflow is not None
        else "  overflow: none"
    )
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100.0 * value:.1f}%"


# -- compare -------------------------------------------------------------------------------
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


def _cell(included: bool, reason: str | None) -> str:
    if included:
        return "included"
    return f"excluded ({reason})" if reason else "excluded"


def format_compare(
    header: Sequence[str],
    labels: Sequence[str],
    rows: Sequence[CompareRow],
    totals: Sequence[tuple[int, int]],
) -> str:
    """An aligned table: one row per swinging item, one column per policy, then totals."""
    preview = [f'"{clip(row.content, 48)}"' for row in rows]
    first = max([len("item"), len("included items"), len("included tokens"), *map(len, preview)])
    cells = [[_cell(inc, reason) for _, inc, reason in row.cells] for row in rows]
    total_cells = [[f"{n:,}" for n, _ in totals], [f"{t:,}" for _, t in totals]]
    widths = [
        max([len(label), *(len(c[i]) for c in cells), *(len(c[i]) for c in total_cells)])
        for i, label in enumerate(labels)
    ]

    def line(first_cell: str, rest: Sequence[str]) -> str:
        out = first_cell.ljust(first)
        for value, w in zip(rest, widths, strict=True):
            out += "  " + value.ljust(w)
        return out.rstrip()

    lines = [*header, ""]
    lines.append(line("item", labels))
    lines.append(line("-" * first, ["-" * w for w in widths]))
    if rows:
        lines += [line(p, c) for p, c in zip(preview, cells, strict=True)]
    else:
        lines.append("(no item changes status between these policies)")
    lines.append(line("-" * first, ["-" * w for w in widths]))
    lines.append(line("included items", total_cells[0]))
    lines.append(line("included tokens", total_cells[1]))
    return "\n".join(lines)
