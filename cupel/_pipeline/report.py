"""Report building (private): the stages as a traced run sees them.

:data:`UNTRACED` runs the six stages and nothing else; :class:`Traced` runs the same
stage functions and tells the collector what each decided (its start, exclusions,
inclusions, timing), so a traced run selects exactly what an untraced one does. Each
stage's entries come from one builder (``_negative_entries``, ``_slice_entries``, ...)
that makes them in bulk; a collector that needs them one by one gets them as the stage
ends, any other (:func:`~cupel.diagnostics._collectors.deferring`) the builder itself,
which the report runs on its first read (tests/core/perf/test_perf_report.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import compress
from operator import not_
from time import perf_counter
from typing import Any, NamedTuple

from cupel._fastpath import FloatArray
from cupel._model import ContextBudget, ContextItem, OverflowStrategy
from cupel._pipeline.classify import Classified, classify
from cupel._pipeline.deduplicate import Survivors, deduplicate
from cupel._pipeline.place import Merged, OverflowCallback, arrange, merge
from cupel._pipeline.score import score
from cupel._pipeline.slice import Sliced, slice_items
from cupel._pipeline.sort import Ranking, ranked_lists, sort
from cupel._pipeline.values import ITEM, SCORE, TOKENS, as_list, first_occurrences, scored_pairs
from cupel.diagnostics._collectors import TraceCollector, deferring
from cupel.diagnostics._entries import ExcludedItem, IncludedItem, entries
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceEvent
from cupel.diagnostics._outcomes import Recalled, SliceOutcome
from cupel.diagnostics._reasons import (
    BudgetExceeded,
    CountCapExceeded,
    Deduplicated,
    ExclusionReason,
    InclusionReason,
    NegativeTokens,
    PinnedOverride,
)
from cupel.diagnostics._report import SelectionReport
from cupel.placers._base import Placer
from cupel.scorers._base import Scorer, walk
from cupel.slicers._base import Slicer

__all__ = ["UNTRACED", "Placed", "Stages", "Traced"]


class Placed(NamedTuple):
    """The window in placed order, its token total and the overflow event (if any)."""

    items: list[ContextItem]
    tokens: int
    overflow: OverflowEvent | None


class Stages:
    """The six stages, untraced."""

    classify = staticmethod(classify)
    score = staticmethod(score)
    deduplicate = staticmethod(deduplicate)
    sort = staticmethod(sort)
    slice = staticmethod(slice_items)

    def place(
        self,
        placer: Placer,
        classified: Classified,
        sliced: Sliced,
        budget: ContextBudget,
        strategy: OverflowStrategy,
        on_overflow: OverflowCallback | None,
    ) -> Placed:
        merged = merge(classified, sliced, budget, strategy, on_overflow)
        return Placed(arrange(placer, merged), merged.tokens, merged.overflow)

    def report(
        self, slicer: Slicer, classified: Classified, scorer: Scorer | None = None
    ) -> SelectionReport | None:
        """The run's report (an untraced run has none)."""
        return None


UNTRACED = Stages()


class Traced(Stages):
    """The six stages, each reported to ``trace`` as it runs (one per run: it keeps
    what the last stages' reports need)."""

    def __init__(self, trace: TraceCollector) -> None:
        self.trace = trace
        self.deferred = deferring(trace)
        self._sliced: Sliced | None = None
        self._ranking: Ranking | None = None
        self._ranked: tuple[list[ContextItem], list[Any]] | None = None

    def _start(self, stage: PipelineStage) -> float:
        self.trace.on_stage_start(stage)
        return perf_counter()

    def _done(self, stage: PipelineStage, start: float, count: int) -> None:
        self.trace.record_stage_event(TraceEvent(stage, (perf_counter() - start) * 1000.0, count))

    def _excluded(self, stage: PipelineStage, build: Callable[[], list[ExcludedItem]]) -> None:
        """The stage's exclusions: handed over unbuilt, or built and reported per item."""
        if self.deferred is not None:
            self.deferred.defer_excluded(build)
            return
        for entry in build():
            self.trace.on_excluded(stage, entry)

    def classify(
        self, items: Sequence[ContextItem], budget: ContextBudget, names: Sequence[str] = ()
    ) -> Classified:
        start = self._start(PipelineStage.CLASSIFY)
        classified = classify(items, budget, names)
        negative = classified.negative
        if negative:
            self._excluded(PipelineStage.CLASSIFY, lambda: _negative_entries(negative))
        self._done(PipelineStage.CLASSIFY, start, len(items))
        return classified

    def score(self, scorer: Scorer, classified: Classified) -> FloatArray:
        start = self._start(PipelineStage.SCORE)
        scores = score(scorer, classified)
        self._done(PipelineStage.SCORE, start, len(classified.scoreable))
        return scores

    def deduplicate(
        self, classified: Classified, scores: FloatArray | list[Any], enabled: bool
    ) -> Survivors:
        start = self._start(PipelineStage.DEDUPLICATE)
        scoreable = classified.scoreable
        survivors = deduplicate(classified, scores, enabled)
        if survivors.positions is not None:
            self._excluded(
                PipelineStage.DEDUPLICATE, lambda: _duplicate_entries(scoreable, survivors)
            )
        self._done(PipelineStage.DEDUPLICATE, start, len(scoreable))
        return survivors

    def _ranked_lists(self, classified: Classified) -> tuple[list[ContextItem], list[Any]]:
        """The slicer's candidates and scores, best first (built once, when needed)."""
        if self._ranked is None:
            sliced, ranking = self._sliced, self._ranking
            if sliced is not None and sliced.ranked is not None:
                self._ranked = list(map(ITEM, sliced.ranked)), list(map(SCORE, sliced.ranked))
            elif ranking is not None:
                self._ranked = ranked_lists(classified.scoreable, ranking)
            else:  # pragma: no cover - only read after the Slice stage
                self._ranked = [], []
        return self._ranked

    def slice(
        self, slicer: Slicer, classified: Classified, ranking: Ranking, budget: ContextBudget
    ) -> Sliced:
        start = self._start(PipelineStage.SLICE)
        sliced = slice_items(slicer, classified, ranking, budget)
        self._sliced, self._ranking = sliced, ranking
        outcome = sliced.outcome
        if outcome is not None and outcome.shortfalls:
            self.trace.on_shortfalls(outcome.shortfalls)
        # The reasons a slicer may give itself (e.g. RecencyWindowSlice's OutsideWindow).
        explain = getattr(slicer, "exclusion_reasons", None)

        def build() -> list[ExcludedItem]:
            ranked = self._ranked_lists(classified)
            explained: Mapping[int, ExclusionReason] = (
                {}
                if explain is None
                else explain(scored_pairs(*ranked), sliced.items, sliced.budget)
            )
            return _slice_entries(*ranked, sliced, classified, budget, explained)

        self._excluded(PipelineStage.SLICE, build)
        self._done(PipelineStage.SLICE, start, len(ranking.order))
        return sliced

    def place(
        self,
        placer: Placer,
        classified: Classified,
        sliced: Sliced,
        budget: ContextBudget,
        strategy: OverflowStrategy,
        on_overflow: OverflowCallback | None,
    ) -> Placed:
        start = self._start(PipelineStage.PLACE)
        merged = merge(classified, sliced, budget, strategy, on_overflow)
        if merged.dropped:
            pinned = classified.pinned
            self._excluded(PipelineStage.PLACE, lambda: _truncation_entries(merged, pinned))
        if merged.overflow is not None:
            self.trace.on_overflow(merged.overflow)
        placed = arrange(placer, merged)
        if self.deferred is not None:
            self.deferred.defer_included(lambda: _window_entries(placed, merged, classified))
        else:
            for entry in _window_entries(placed, merged, classified):
                self.trace.on_included(entry)
        self._done(PipelineStage.PLACE, start, len(placed))
        self.trace.on_run_end(len(classified.items), classified.total_tokens)
        return Placed(placed, merged.tokens, merged.overflow)

    def report(
        self, slicer: Slicer, classified: Classified, scorer: Scorer | None = None
    ) -> SelectionReport | None:
        report = self.trace.build_report()
        if report is None or self._sliced is None:
            return report
        rounding = getattr(slicer, "bucket_rounding", None)
        if rounding is not None:
            ranked = self._ranked_lists(classified)
            cost = rounding(scored_pairs(*ranked), self._sliced.items, self._sliced.budget)
            if cost is not None:
                report = replace(report, bucket_rounding=cost)
        recall = getattr(slicer, "recalled", None)
        if recall is not None:  # (RecencyWindowSlice: empty without a share)
            ranked = self._ranked_lists(classified)
            units = recall(scored_pairs(*ranked), self._sliced.budget)
            if units:
                report = replace(report, recalled=_recalled(units, scorer))
        return report


def _recalled(
    units: Sequence[tuple[list[ContextItem], float]], scorer: Scorer | None
) -> tuple[Recalled, ...]:
    """The report's :class:`~cupel.Recalled` units, each with the query terms its items
    hold (``matches`` of each bound :class:`~cupel.RelevanceScorer` of the tree) and the
    best of their ``similarity`` (``None`` without an embedding)."""
    matchers: list[Callable[[ContextItem], Sequence[str]]] = []
    similar: list[Callable[[Sequence[ContextItem]], float | None]] = []
    for node in () if scorer is None else walk(scorer):
        matches = getattr(node, "matches", None)
        if callable(matches) and getattr(node, "query", None) is not None:
            matchers.append(matches)
            similarity = getattr(node, "similarity", None)
            if callable(similarity):
                similar.append(similarity)
    out: list[Recalled] = []
    for items, score_ in units:
        terms: dict[str, None] = {}
        for matches in matchers:
            for item in reversed(items):  # oldest first: the question's terms first
                terms.update(dict.fromkeys(matches(item)))
        found = [s for s in (similarity(items) for similarity in similar) if s is not None]
        out.append(Recalled(tuple(items), float(score_), tuple(terms), max(found, default=None)))
    return tuple(out)


def _negative_entries(negative: list[ContextItem]) -> list[ExcludedItem]:
    """Classify: one exclusion per negative-token item, in input order."""
    reasons = [NegativeTokens(tokens) for tokens in map(TOKENS, negative)]
    return entries(ExcludedItem, negative, [0.0] * len(negative), reasons)


def _duplicate_entries(scoreable: list[ContextItem], survivors: Survivors) -> list[ExcludedItem]:
    """Deduplicate: one exclusion per removed copy, in input order (the copies of one
    surviving item share its reason)."""
    values = survivors.values
    kept_of = list(map(survivors.kept.__getitem__, survivors.contents))
    removed = [i for i, kept in enumerate(kept_of) if kept != i]
    against = {k: Deduplicated(scoreable[k].content) for k in {kept_of[i] for i in removed}}
    return entries(
        ExcludedItem,
        [scoreable[i] for i in removed],
        [values[i] for i in removed],
        [against[kept_of[i]] for i in removed],
    )


def _slice_entries(
    ranked_items: list[ContextItem],
    ranked_scores: list[Any],
    sliced: Sliced,
    classified: Classified,
    budget: ContextBudget,
    explained: Mapping[int, ExclusionReason],
) -> list[ExcludedItem]:
    """One exclusion per candidate the slicer did not select (by occurrence:
    :func:`first_occurrences`), in ranked order. The reason: a count cap's
    ``CountCapExceeded``, else the one the slicer gave (``explained``, by ``id(item)``),
    else the budget's (:class:`_BudgetReasons`)."""
    outcome = sliced.outcome if sliced.outcome is not None else SliceOutcome(sliced.items)
    pinned = classified.pinned
    target = sliced.budget.target_tokens
    displaced = PinnedOverride(pinned[0].content) if pinned else None
    by_budget = _BudgetReasons(
        target - sliced.tokens, target, budget.target_tokens - budget.output_reserve, displaced
    )
    given: dict[int, ExclusionReason] = {**explained}
    given.update(
        (id(c.item), CountCapExceeded(c.kind, c.cap, c.count)) for c in outcome.cap_exclusions
    )
    keys = list(map(id, ranked_items))
    left_out = list(map(not_, first_occurrences(keys, list(map(id, sliced.items)))))
    items = list(compress(ranked_items, left_out))
    fallback = map(by_budget.__getitem__, map(TOKENS, items))
    reasons = list(map(given.get, compress(keys, left_out), fallback))
    return entries(ExcludedItem, items, list(compress(ranked_scores, left_out)), reasons)


class _BudgetReasons(dict[int, ExclusionReason]):
    """The reason of an item the budget alone left out, by its token count (built once per
    count and shared): ``PinnedOverride`` when only the pinned items keep it from fitting
    (``target < tokens <= without_pinned``), else ``BudgetExceeded(tokens, available)``."""

    def __init__(
        self, available: int, target: int, without_pinned: int, displaced: PinnedOverride | None
    ) -> None:
        super().__init__()
        self.available = available
        self.target = target
        self.without_pinned = without_pinned
        self.displaced = displaced

    def __missing__(self, tokens: int) -> ExclusionReason:
        reason: ExclusionReason
        if self.displaced is not None and self.target < tokens <= self.without_pinned:
            reason = self.displaced
        else:
            reason = BudgetExceeded(tokens, self.available)
        self[tokens] = reason
        return reason


def _truncation_entries(merged: Merged, pinned: list[ContextItem]) -> list[ExcludedItem]:
    """The entries ``OverflowStrategy.TRUNCATE`` dropped: ``PinnedOverride`` when a pinned
    item forced them out, else ``BudgetExceeded`` against what the kept items left."""
    by_budget = _BudgetReasons(merged.target - merged.tokens, 0, 0, None)
    forced = PinnedOverride(pinned[0].content) if pinned else None
    dropped = [entry for entry, _ in merged.dropped]
    reasons = [
        forced if by_pinned and forced is not None else by_budget[entry.item.tokens]
        for entry, by_pinned in merged.dropped
    ]
    return entries(ExcludedItem, list(map(ITEM, dropped)), list(map(SCORE, dropped)), reasons)


def _window_entries(
    placed: list[ContextItem], merged: Merged, classified: Classified
) -> list[IncludedItem]:
    """One inclusion per placed item: pinned (score 1.0), zero-token or scored, told apart
    by identity (the input's pinned items, the Classify stage's zero counts)."""
    scores_by_id = dict(zip(map(id, merged.items), as_list(merged.scores), strict=True))
    ids = list(map(id, placed))
    scores = list(map(scores_by_id.__getitem__, ids))
    pinned = set(map(id, classified.pinned))
    free = set(map(id, compress(classified.scoreable, map(not_, classified.tokens))))
    reasons = [
        InclusionReason.PINNED
        if key in pinned
        else InclusionReason.ZERO_TOKEN
        if key in free
        else InclusionReason.SCORED
        for key in ids
    ]
    return entries(IncludedItem, placed, scores, reasons)
