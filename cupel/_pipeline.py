"""The six-stage pipeline: Classify → Score → Deduplicate → Sort → Slice → Place.

>>> from cupel import (ContextItem, ContextBudget, Pipeline, CompositeScorer,
...                    RecencyScorer, KindScorer, GreedySlice, ChronologicalPlacer)
>>> pipeline = Pipeline(CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
...                     GreedySlice(), ChronologicalPlacer())
>>> items = [ContextItem(content="You are terse.", tokens=4, pinned=True, kind="SystemPrompt"),
...          ContextItem(content="old question", tokens=40),
...          ContextItem(content="new question", tokens=40)]
>>> result = pipeline.run(items, ContextBudget(max_tokens=60, target_tokens=50))
>>> [i.content for i in result.items], result.total_tokens
(['You are terse.', 'old question'], 44)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any

from cupel._errors import (
    ConfigurationError,
    CupelError,
    ItemError,
    OverflowBudgetError,
    PinnedBudgetError,
)
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem
from cupel.diagnostics._collectors import NULL_COLLECTOR, DiagnosticTraceCollector, TraceCollector
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._reasons import (
    BudgetExceeded,
    CountCapExceeded,
    Deduplicated,
    ExclusionReason,
    InclusionReason,
    NegativeTokens,
    PinnedOverride,
)
from cupel.diagnostics._report import ExcludedItem, IncludedItem, SelectionReport
from cupel.placers._base import Placer
from cupel.scorers._base import Scorer, score_all
from cupel.slicers._base import SliceOutcome, Slicer, slice_detailed

if TYPE_CHECKING:
    from cupel.policy import Policy

__all__ = ["ContextResult", "Pipeline", "effective_budget"]

OverflowCallback = Callable[[OverflowEvent], Any]


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The outcome of a run: the window in placed order, its token total, the report
    (when a diagnostic collector was used, always for ``dry_run``) and the overflow
    record (``OverflowStrategy.PROCEED`` over target only)."""

    items: list[ContextItem]
    total_tokens: int
    report: SelectionReport | None = None
    overflow: OverflowEvent | None = None


def effective_budget(budget: ContextBudget, pinned_tokens: int) -> ContextBudget:
    """The budget the slicer sees: the spec's COMPUTE-EFFECTIVE-BUDGET.

    >>> effective_budget(ContextBudget(max_tokens=1000, target_tokens=800, output_reserve=100,
    ...                                estimation_safety_margin_percent=10.0), 50).target_tokens
    675
    """
    reserved = sum(budget.reserved_slots.values())
    eff_max = max(0, budget.max_tokens - budget.output_reserve - pinned_tokens - reserved)
    eff_target = min(max(0, budget.target_tokens - pinned_tokens - reserved), eff_max)
    margin = budget.estimation_safety_margin_percent
    if margin > 0:
        multiplier = 1.0 - margin / 100.0
        eff_max = int(eff_max * multiplier)
        eff_target = min(int(eff_target * multiplier), eff_max)
    return ContextBudget(max_tokens=eff_max, target_tokens=eff_target)


def _require(obj: object, method: str, param: str, kind: str) -> None:
    if obj is None or not callable(getattr(obj, method, None)):
        raise ConfigurationError(
            f"Pipeline: {param} must be a {kind} (an object with a callable "
            f"'{method}' method), got {obj!r}",
            field=param,
            value=obj,
        )


class Pipeline:
    """A configured selection pipeline. Stateless between runs and safe to share.

    Parameters:
        scorer: ranks items (any object with ``score(item, all_items)``).
        slicer: fits the budget (default :class:`~cupel.GreedySlice`).
        placer: orders the window (default :class:`~cupel.ChronologicalPlacer`).
        deduplication: drop byte-identical content, keeping the best-scored copy.
        overflow_strategy: what to do when pinned + sliced tokens exceed the target.
        on_overflow: receives the :class:`~cupel.OverflowEvent` under ``PROCEED``.
    """

    __slots__ = ("deduplication", "on_overflow", "overflow_strategy", "placer", "scorer", "slicer")

    def __init__(
        self,
        scorer: Scorer,
        slicer: Slicer | None = None,
        placer: Placer | None = None,
        *,
        deduplication: bool = True,
        overflow_strategy: OverflowStrategy | str = OverflowStrategy.THROW,
        on_overflow: OverflowCallback | None = None,
    ) -> None:
        if slicer is None:
            from cupel.slicers import GreedySlice

            slicer = GreedySlice()
        if placer is None:
            from cupel.placers import ChronologicalPlacer

            placer = ChronologicalPlacer()
        _require(scorer, "score", "scorer", "scorer")
        _require(slicer, "slice", "slicer", "slicer")
        _require(placer, "place", "placer", "placer")
        if not isinstance(deduplication, bool):
            raise ConfigurationError(
                f"Pipeline: deduplication must be a bool, got {deduplication!r}",
                field="deduplication",
                value=deduplication,
            )
        if on_overflow is not None and not callable(on_overflow):
            raise ConfigurationError(
                f"Pipeline: on_overflow must be callable, got {on_overflow!r}",
                field="on_overflow",
                value=on_overflow,
            )
        self.scorer = scorer
        self.slicer = slicer
        self.placer = placer
        self.deduplication = deduplication
        self.overflow_strategy = OverflowStrategy.parse(overflow_strategy)
        self.on_overflow = on_overflow

    @classmethod
    def from_policy(cls, policy: Policy | str) -> Pipeline:
        """A pipeline built from a :class:`~cupel.policy.Policy` or a preset name
        (``"chat"``, ``"rag"``, ... see :mod:`cupel.presets`).

        >>> Pipeline.from_policy("rag").placer
        UShapedPlacer()
        """
        from cupel.policy import _pipeline_from_policy

        return _pipeline_from_policy(policy)

    def __repr__(self) -> str:
        return (
            f"Pipeline(scorer={self.scorer!r}, slicer={self.slicer!r}, placer={self.placer!r}, "
            f"deduplication={self.deduplication}, "
            f"overflow_strategy={self.overflow_strategy.name})"
        )

    # ------------------------------------------------------------------------------
    def dry_run(
        self,
        items: Sequence[ContextItem],
        budget: ContextBudget,
        *,
        detail_level: TraceDetailLevel = TraceDetailLevel.STAGE,
        on_overflow: OverflowCallback | None = None,
    ) -> ContextResult:
        """Run with a fresh :class:`~cupel.DiagnosticTraceCollector`; ``.report`` is set."""
        return self.run(
            items,
            budget,
            collector=DiagnosticTraceCollector(detail_level),
            on_overflow=on_overflow,
        )

    def run(
        self,
        items: Sequence[ContextItem],
        budget: ContextBudget,
        *,
        collector: TraceCollector | None = None,
        on_overflow: OverflowCallback | None = None,
    ) -> ContextResult:
        """Select and order ``items`` within ``budget``.

        Raises :class:`~cupel.PinnedBudgetError` when pinned items alone exceed
        ``max_tokens - output_reserve`` and :class:`~cupel.OverflowBudgetError` when the
        window exceeds ``target_tokens`` under ``OverflowStrategy.THROW``. ``items`` is
        never modified; the window holds the very same item objects.
        """
        if not isinstance(budget, ContextBudget):
            raise ConfigurationError(
                f"Pipeline.run: budget must be a ContextBudget, got {type(budget).__name__}",
                field="budget",
                value=budget,
            )
        trace = collector if collector is not None else NULL_COLLECTOR
        if not trace.is_enabled:
            return self._run(items, budget, trace, False, on_overflow)
        trace.on_run_start(len(items), budget)
        try:
            return self._run(items, budget, trace, True, on_overflow)
        except Exception as exc:
            trace.on_run_error(exc)
            raise

    def _run(
        self,
        items: Sequence[ContextItem],
        budget: ContextBudget,
        trace: TraceCollector,
        on: bool,
        on_overflow: OverflowCallback | None,
    ) -> ContextResult:
        clock = perf_counter if on else _no_clock

        # 1. Classify ------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.CLASSIFY)
        start = clock()
        pinned: list[ContextItem] = []
        scoreable: list[ContextItem] = []
        negative: list[ContextItem] = []
        total_tokens_considered = 0
        for index, item in enumerate(items):
            if not isinstance(item, ContextItem):
                raise ItemError(
                    f"Pipeline.run: items[{index}] must be a ContextItem, "
                    f"got {type(item).__name__}",
                    field=f"items[{index}]",
                    value=item,
                )
            tokens = item.tokens
            total_tokens_considered += tokens
            if tokens < 0:
                negative.append(item)
            elif item.pinned:
                pinned.append(item)
            else:
                scoreable.append(item)
        pinned_tokens = sum(item.tokens for item in pinned)
        available_for_pinned = budget.max_tokens - budget.output_reserve
        if pinned_tokens > available_for_pinned:
            raise PinnedBudgetError(pinned_tokens, available_for_pinned)
        if on:
            for item in negative:
                trace.on_excluded(
                    PipelineStage.CLASSIFY, ExcludedItem(item, 0.0, NegativeTokens(item.tokens))
                )
            trace.record_stage_event(
                TraceEvent(PipelineStage.CLASSIFY, _ms(clock() - start), len(items))
            )

        # 2. Score -----------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.SCORE)
        start = clock()
        scores = score_all(self.scorer, scoreable) if scoreable else []
        if len(scores) != len(scoreable):
            raise CupelError(
                f"scorer {self.scorer!r} returned {len(scores)} scores for {len(scoreable)} items"
            )
        if on:
            trace.record_stage_event(
                TraceEvent(PipelineStage.SCORE, _ms(clock() - start), len(scoreable))
            )

        # 3. Deduplicate -------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.DEDUPLICATE)
        start = clock()
        if self.deduplication and scoreable:
            best: dict[str, int] = {}
            for i, item in enumerate(scoreable):
                kept = best.get(item.content)
                if kept is None or scores[i] > scores[kept]:
                    best[item.content] = i
            survivors = [i for i, item in enumerate(scoreable) if best[item.content] == i]
            if on and len(survivors) != len(scoreable):
                for i, item in enumerate(scoreable):
                    kept = best[item.content]
                    if kept != i:
                        trace.on_excluded(
                            PipelineStage.DEDUPLICATE,
                            ExcludedItem(item, scores[i], Deduplicated(scoreable[kept].content)),
                        )
        else:
            survivors = list(range(len(scoreable)))
        if on:
            trace.record_stage_event(
                TraceEvent(PipelineStage.DEDUPLICATE, _ms(clock() - start), len(scoreable))
            )

        # 4. Sort (stable: equal scores keep their order) -----------------------------------
        survivors.sort(key=lambda i: -scores[i])
        ranked = [ScoredItem(scoreable[i], scores[i]) for i in survivors]

        # 5. Slice -----------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.SLICE)
        start = clock()
        sliced_budget = effective_budget(budget, pinned_tokens)
        outcome = slice_detailed(self.slicer, ranked, sliced_budget)
        sliced = _reassociate(ranked, outcome.selected, self.slicer)
        if on:
            self._report_slice(trace, ranked, outcome, sliced, pinned, budget, sliced_budget)
            trace.record_stage_event(
                TraceEvent(PipelineStage.SLICE, _ms(clock() - start), len(ranked))
            )

        # 6. Place -----------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.PLACE)
        start = clock()
        merged = [ScoredItem(item, 1.0) for item in pinned]
        merged.extend(sliced)
        merged_tokens = sum(entry.item.tokens for entry in merged)
        overflow: OverflowEvent | None = None
        # The spec checks overflow against target_tokens and also requires the window never
        # to exceed max_tokens - output_reserve; with target above that ceiling, only the
        # lower of the two honours both (count quotas can commit past the slicer's budget).
        target = min(budget.target_tokens, budget.max_tokens - budget.output_reserve)
        if merged_tokens > target:
            strategy = self.overflow_strategy
            if strategy is OverflowStrategy.THROW:
                raise OverflowBudgetError(merged_tokens, target)
            if strategy is OverflowStrategy.TRUNCATE:
                merged = self._truncate(merged, target, pinned, trace if on else None)
            else:
                overflow = OverflowEvent(
                    merged_tokens - target, tuple(entry.item for entry in merged), budget
                )
                callback = on_overflow if on_overflow is not None else self.on_overflow
                if callback is not None:
                    callback(overflow)
                if on:
                    trace.on_overflow(overflow)
        placed = list(self.placer.place(merged))
        _check_placement(merged, placed, self.placer)
        total = sum(item.tokens for item in placed)
        report: SelectionReport | None = None
        if on:
            scores_by_id = {id(entry.item): entry.score for entry in merged}
            for item in placed:
                if item.pinned:
                    trace.on_included(IncludedItem(item, 1.0, InclusionReason.PINNED))
                elif item.tokens == 0:
                    trace.on_included(
                        IncludedItem(item, scores_by_id[id(item)], InclusionReason.ZERO_TOKEN)
                    )
                else:
                    trace.on_included(
                        IncludedItem(item, scores_by_id[id(item)], InclusionReason.SCORED)
                    )
            trace.record_stage_event(
                TraceEvent(PipelineStage.PLACE, _ms(clock() - start), len(placed))
            )
            trace.on_run_end(len(items), total_tokens_considered)
            report = trace.build_report()
        return ContextResult(placed, total, report, overflow)

    # ------------------------------------------------------------------------------
    @staticmethod
    def _report_slice(
        trace: TraceCollector,
        ranked: list[ScoredItem],
        outcome: SliceOutcome,
        sliced: list[ScoredItem],
        pinned: list[ContextItem],
        budget: ContextBudget,
        sliced_budget: ContextBudget,
    ) -> None:
        if outcome.shortfalls:
            trace.on_shortfalls(outcome.shortfalls)
        selected_ids = {id(entry.item) for entry in sliced}
        capped = {id(c.item): c for c in outcome.cap_exclusions}
        selected_tokens = sum(entry.item.tokens for entry in sliced)
        available = sliced_budget.target_tokens - selected_tokens
        without_pinned = budget.target_tokens - budget.output_reserve
        displaced_by = pinned[0].content if pinned else None
        for entry in ranked:
            item = entry.item
            if id(item) in selected_ids:
                continue
            cap = capped.get(id(item))
            reason: ExclusionReason
            if cap is not None:
                reason = CountCapExceeded(cap.kind, cap.cap, cap.count)
            elif (
                displaced_by is not None
                and item.tokens > sliced_budget.target_tokens
                and item.tokens <= without_pinned
            ):
                reason = PinnedOverride(displaced_by)
            else:
                reason = BudgetExceeded(item.tokens, available)
            trace.on_excluded(PipelineStage.SLICE, ExcludedItem(item, entry.score, reason))

    @staticmethod
    def _truncate(
        merged: list[ScoredItem],
        target: int,
        pinned: list[ContextItem],
        trace: TraceCollector | None,
    ) -> list[ScoredItem]:
        kept: list[ScoredItem] = []
        dropped: list[tuple[ScoredItem, bool]] = []
        current = 0
        pinned_total = 0
        for entry in merged:
            tokens = entry.item.tokens
            if entry.item.pinned:
                kept.append(entry)
                current += tokens
                pinned_total += tokens
            elif current + tokens <= target:
                kept.append(entry)
                current += tokens
            else:
                # Would it have fitted without the pinned items' tokens?
                dropped.append((entry, bool(pinned) and current - pinned_total + tokens <= target))
        if trace is not None and dropped:
            available = target - current
            for entry, forced_by_pinned in dropped:
                reason: ExclusionReason = (
                    PinnedOverride(pinned[0].content)
                    if forced_by_pinned
                    else BudgetExceeded(entry.item.tokens, available)
                )
                trace.on_excluded(
                    PipelineStage.PLACE, ExcludedItem(entry.item, entry.score, reason)
                )
        return kept


def _no_clock() -> float:
    return 0.0


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _reassociate(
    ranked: list[ScoredItem], selected: Sequence[ContextItem], slicer: object
) -> list[ScoredItem]:
    """Pair the slicer's items with their scores by identity, checking it returned a subset."""
    scores = {id(entry.item): entry.score for entry in ranked}
    out: list[ScoredItem] = []
    for item in selected:
        score = scores.get(id(item))
        if score is None:
            raise CupelError(
                f"slicer {slicer!r} returned an item that was not among its candidates: "
                f"{item.content[:60]!r}"
            )
        out.append(ScoredItem(item, score))
    if len({id(item) for item in selected}) != len(selected):
        available = Counter(id(entry.item) for entry in ranked)
        for key, count in Counter(id(item) for item in selected).items():
            if count > available[key]:
                raise CupelError(f"slicer {slicer!r} returned the same item more than once")
    return out


def _check_placement(merged: list[ScoredItem], placed: list[ContextItem], placer: object) -> None:
    if len(placed) != len(merged) or Counter(map(id, placed)) != Counter(
        id(entry.item) for entry in merged
    ):
        raise CupelError(
            f"placer {placer!r} must return exactly the items it was given "
            f"(got {len(placed)} for {len(merged)})"
        )
