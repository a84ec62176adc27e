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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import attrgetter, itemgetter, not_
from time import perf_counter
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from cupel._errors import (
    ConfigurationError,
    CupelError,
    ItemError,
    OverflowBudgetError,
    PinnedBudgetError,
    ScoreError,
)
from cupel._fastpath import MAX_EXACT_TOKENS, FloatArray, IntArray, float_column
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem
from cupel.diagnostics._collectors import NULL_COLLECTOR, DiagnosticTraceCollector, TraceCollector
from cupel.diagnostics._entries import ExcludedItem, IncludedItem
from cupel.diagnostics._events import OverflowEvent, PipelineStage, TraceDetailLevel, TraceEvent
from cupel.diagnostics._outcomes import SliceOutcome
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
from cupel.placers._base import Placer, fast_orderer
from cupel.scorers._base import Scorer, batch_scores
from cupel.slicers._base import (
    Candidates,
    Slicer,
    fast_selector,
    floor_times,
    slice_detailed,
)

if TYPE_CHECKING:
    from cupel.policy import Policy

__all__ = ["ContextResult", "Pipeline", "effective_budget"]

OverflowCallback = Callable[[OverflowEvent], Any]

_ITEM = itemgetter(0)
_SCORE = itemgetter(1)
_TOKENS = attrgetter("tokens")
_PINNED = attrgetter("pinned")
_CONTENT = attrgetter("content")


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
        eff_max = floor_times(eff_max, multiplier)
        eff_target = min(floor_times(eff_target, multiplier), eff_max)
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
        if not isinstance(items, (list, tuple)):
            if isinstance(items, (str, bytes, Mapping, ContextItem)) or not isinstance(
                items, Iterable
            ):
                raise ConfigurationError(
                    f"Pipeline.run: items must be a sequence (or iterable) of ContextItem, "
                    f"got {type(items).__name__}",
                    field="items",
                    value=items,
                )
            items = list(items)  # the stages below read the input more than once
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
        """The six stages.

        From Score to Place the candidates travel as positions into ``scoreable`` and,
        when every score is a NaN-free float (all built-in scorers), as float64/int64
        arrays that the built-in slicers and placers read directly (their
        ``_select_positions`` / ``_order`` fast paths). Otherwise, or for custom
        components, the stages exchange the spec's lists of :class:`ScoredItem`. Both
        routes give identical results (tests/core/perf/test_perf_pipeline.py).
        """
        clock = perf_counter if on else _no_clock

        # 1. Classify ------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.CLASSIFY)
        start = clock()
        pinned, scoreable, tokens, negative, total_tokens_considered = _classify(items)
        pinned_tokens = sum(map(_TOKENS, pinned))
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
        scores: FloatArray = batch_scores(self.scorer, scoreable) if scoreable else np.zeros(0)
        if len(scores) != len(scoreable):
            raise ScoreError(
                f"scorer {self.scorer!r} returned {len(scores)} scores for {len(scoreable)} items",
                scorer=self.scorer,
            )
        if on:
            trace.record_stage_event(
                TraceEvent(PipelineStage.SCORE, _ms(clock() - start), len(scoreable))
            )

        # 3. Deduplicate -------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.DEDUPLICATE)
        start = clock()
        survivors = self._deduplicate(scoreable, scores, trace if on else None)
        if on:
            trace.record_stage_event(
                TraceEvent(PipelineStage.DEDUPLICATE, _ms(clock() - start), len(scoreable))
            )

        # 4. Sort (stable: equal scores keep their order) -----------------------------------
        columns = _columns(scores, tokens)
        order: IntArray | list[int]
        if columns is not None:
            order = _rank_order(columns.scores, survivors)
        else:
            values = _as_list(scores)
            order = list(range(len(scoreable))) if survivors is None else survivors
            order.sort(key=lambda i: -values[i])

        # 5. Slice -----------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.SLICE)
        start = clock()
        sliced_budget = effective_budget(budget, pinned_tokens)
        chosen = self._fast_slice(scoreable, order, columns, sliced_budget)
        sliced_scores: FloatArray | list[Any]
        if chosen is not None and columns is not None:
            ranks = cast(IntArray, order)
            # Ruling 13: the selection enters the merge in the Sort stage's order.
            selected = np.zeros(len(scoreable), dtype=np.bool_)
            selected[chosen] = True
            chosen = ranks[selected[ranks]]
            sliced_items = list(map(scoreable.__getitem__, chosen.tolist()))
            sliced_scores = columns.scores[chosen]
            sliced_tokens = int(columns.tokens[chosen].sum())
            if on:
                ranked_items = list(map(scoreable.__getitem__, ranks.tolist()))
                ranked_scores = columns.scores[ranks].tolist()
                outcome = SliceOutcome(sliced_items)
        else:
            ranked = _ranked(scoreable, order, scores)
            outcome = slice_detailed(self.slicer, ranked, sliced_budget)
            sliced = _reassociate(ranked, outcome.selected, self.slicer)
            sliced_items = list(map(_ITEM, sliced))
            sliced_scores = list(map(_SCORE, sliced))
            sliced_tokens = sum(map(_TOKENS, sliced_items))
            if on:
                ranked_items = list(map(_ITEM, ranked))
                ranked_scores = list(map(_SCORE, ranked))
        if on:
            self._report_slice(
                trace,
                ranked_items,
                ranked_scores,
                outcome,
                sliced_items,
                pinned,
                budget,
                sliced_budget,
                _slicer_reasons(
                    self.slicer, ranked_items, ranked_scores, sliced_items, sliced_budget
                ),
            )
            trace.record_stage_event(
                TraceEvent(PipelineStage.SLICE, _ms(clock() - start), len(order))
            )

        # 6. Place -----------------------------------------------------------------------
        if on:
            trace.on_stage_start(PipelineStage.PLACE)
        start = clock()
        merged_items = [*pinned, *sliced_items]
        merged_scores: FloatArray | list[Any]
        if isinstance(sliced_scores, np.ndarray):
            merged_scores = np.concatenate((np.ones(len(pinned)), sliced_scores))
        else:
            merged_scores = [1.0] * len(pinned) + sliced_scores
        merged_tokens = pinned_tokens + sliced_tokens
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
                kept = self._truncate(
                    _scored(merged_items, _as_list(merged_scores)),
                    target,
                    pinned,
                    trace if on else None,
                )
                merged_items = list(map(_ITEM, kept))
                merged_scores = list(map(_SCORE, kept))
                merged_tokens = sum(map(_TOKENS, merged_items))
            else:
                overflow = OverflowEvent(merged_tokens - target, tuple(merged_items), budget)
                callback = on_overflow if on_overflow is not None else self.on_overflow
                if callback is not None:
                    callback(overflow)
                if on:
                    trace.on_overflow(overflow)
        origin = None
        if chosen is not None and len(merged_items) == len(pinned) + len(chosen):
            # where each merged item came from: pinned items first, then input positions
            origin = np.concatenate((np.arange(-len(pinned), 0), chosen))
        placed = self._place(merged_items, merged_scores, origin)
        report: SelectionReport | None = None
        if on:
            scores_by_id = dict(zip(map(id, merged_items), _as_list(merged_scores), strict=True))
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
            rounding = getattr(self.slicer, "bucket_rounding", None)
            if rounding is not None and report is not None:
                cost = rounding(_scored(ranked_items, ranked_scores), sliced_items, sliced_budget)
                if cost is not None:
                    report = replace(report, bucket_rounding=cost)
        return ContextResult(placed, merged_tokens, report, overflow)

    def _deduplicate(
        self,
        scoreable: list[ContextItem],
        scores: FloatArray | list[Any],
        trace: TraceCollector | None,
    ) -> list[int] | None:
        """Positions of the items that survive deduplication, in input order, or ``None``
        when all do (deduplication off, or all contents distinct, found with one set).
        Of equal contents the first best-scored copy survives."""
        if not self.deduplication or not scoreable:
            return None
        contents = list(map(_CONTENT, scoreable))
        if len(set(contents)) == len(contents):
            return None
        values = _as_list(scores)
        best: dict[str, int] = {}
        for i, content in enumerate(contents):
            kept = best.get(content)
            if kept is None or values[i] > values[kept]:
                best[content] = i
        survivors = [i for i, content in enumerate(contents) if best[content] == i]
        if trace is not None:
            for i, content in enumerate(contents):
                kept = best[content]
                if kept != i:
                    trace.on_excluded(
                        PipelineStage.DEDUPLICATE,
                        ExcludedItem(
                            scoreable[i], values[i], Deduplicated(scoreable[kept].content)
                        ),
                    )
        return survivors

    def _fast_slice(
        self,
        scoreable: list[ContextItem],
        order: IntArray | list[int],
        columns: _Columns | None,
        budget: ContextBudget,
    ) -> IntArray | None:
        """The built-in slicer's array fast path: the selected positions into
        ``scoreable`` (in the slicer's output order), or ``None`` (no array path)."""
        select = fast_selector(self.slicer)
        if select is None or columns is None or not isinstance(order, np.ndarray):
            return None
        candidates = Candidates(scoreable, order, columns.tokens[order], columns.scores[order])
        positions = select(candidates, budget)
        return None if positions is None else order[positions]

    def _place(
        self,
        merged_items: list[ContextItem],
        merged_scores: FloatArray | list[Any],
        origin: IntArray | None,
    ) -> list[ContextItem]:
        """The placer's order: the built-in placer's array fast path when the scores are
        NaN-free floats (``origin``: each merged item's input position, if known), else
        ``placer.place`` checked to return exactly its input."""
        order = fast_orderer(self.placer)
        if order is not None:
            scores = float_column(merged_scores)
            if scores is not None:
                return list(map(merged_items.__getitem__, order(merged_items, scores, origin)))
        placed = list(self.placer.place(_scored(merged_items, _as_list(merged_scores))))
        _check_placement(merged_items, placed, self.placer)
        return placed

    # ------------------------------------------------------------------------------
    @staticmethod
    def _report_slice(
        trace: TraceCollector,
        ranked_items: list[ContextItem],
        ranked_scores: list[Any],
        outcome: SliceOutcome,
        sliced_items: list[ContextItem],
        pinned: list[ContextItem],
        budget: ContextBudget,
        sliced_budget: ContextBudget,
        explained: Mapping[int, ExclusionReason],
    ) -> None:
        """One exclusion per candidate the slicer did not select, in ranked order. An
        object listed more than once (deduplication off) is counted per occurrence: the
        first ones in ranked order are the selected ones. Equal reasons (immutable values)
        are built once and shared. ``explained``: reasons the slicer gave itself
        (``exclusion_reasons``), keyed by ``id(item)``."""
        if outcome.shortfalls:
            trace.on_shortfalls(outcome.shortfalls)
        selected_ids = Counter(map(id, sliced_items))
        capped = {id(c.item): c for c in outcome.cap_exclusions}
        target = sliced_budget.target_tokens
        available = target - sum(map(_TOKENS, sliced_items))
        without_pinned = budget.target_tokens - budget.output_reserve
        displaced = PinnedOverride(pinned[0].content) if pinned else None
        budget_exceeded: dict[int, BudgetExceeded] = {}
        stage = PipelineStage.SLICE
        for item, score in zip(ranked_items, ranked_scores, strict=True):
            key = id(item)
            if selected_ids[key] > 0:
                selected_ids[key] -= 1
                continue
            tokens = item.tokens
            cap = capped.get(key) if capped else None
            reason: ExclusionReason
            if cap is not None:
                reason = CountCapExceeded(cap.kind, cap.cap, cap.count)
            elif key in explained:
                reason = explained[key]
            elif displaced is not None and target < tokens <= without_pinned:
                reason = displaced
            else:
                shared = budget_exceeded.get(tokens)
                if shared is None:
                    shared = budget_exceeded[tokens] = BudgetExceeded(tokens, available)
                reason = shared
            trace.on_excluded(stage, ExcludedItem(item, score, reason))

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


def _slicer_reasons(
    slicer: object,
    ranked_items: list[ContextItem],
    ranked_scores: list[Any],
    sliced_items: list[ContextItem],
    budget: ContextBudget,
) -> Mapping[int, ExclusionReason]:
    """The exclusion reasons a slicer gives itself (an optional ``exclusion_reasons``
    method, e.g. :class:`~cupel.RecencyWindowSlice`'s ``OutsideWindow``), by ``id(item)``."""
    explain = getattr(slicer, "exclusion_reasons", None)
    if explain is None:
        return {}
    reasons: Mapping[int, ExclusionReason] = explain(
        _scored(ranked_items, ranked_scores), sliced_items, budget
    )
    return reasons


def _no_clock() -> float:
    return 0.0


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _classify(
    items: Sequence[ContextItem],
) -> tuple[list[ContextItem], list[ContextItem], list[int], list[ContextItem], int]:
    """Split the input: (pinned, scoreable, scoreable tokens, negative-token, total tokens).

    When every element is a ContextItem and no token count is negative, this is a few
    C-level passes (``map``/``compress``); otherwise the per-item loop, which also names
    the first element that is not a ContextItem.
    """
    if all(issubclass(kind, ContextItem) for kind in set(map(type, items))):
        tokens = list(map(_TOKENS, items))
        if not tokens or min(tokens) >= 0:
            flags = list(map(_PINNED, items))
            if not any(flags):
                return [], list(items), tokens, [], sum(tokens)
            unpinned = list(map(not_, flags))
            return (
                list(compress(items, flags)),
                list(compress(items, unpinned)),
                list(compress(tokens, unpinned)),
                [],
                sum(tokens),
            )
    pinned: list[ContextItem] = []
    scoreable: list[ContextItem] = []
    scoreable_tokens: list[int] = []
    negative: list[ContextItem] = []
    total = 0
    for index, item in enumerate(items):
        if not isinstance(item, ContextItem):
            raise ItemError(
                f"Pipeline.run: items[{index}] must be a ContextItem, got {type(item).__name__}",
                field=f"items[{index}]",
                value=item,
            )
        tokens_of_item = item.tokens
        total += tokens_of_item
        if tokens_of_item < 0:
            negative.append(item)
        elif item.pinned:
            pinned.append(item)
        else:
            scoreable.append(item)
            scoreable_tokens.append(tokens_of_item)
    return pinned, scoreable, scoreable_tokens, negative, total


class _Columns(NamedTuple):
    scores: FloatArray
    tokens: npt.NDArray[np.int64]


def _columns(scores: FloatArray, tokens: list[int]) -> _Columns | None:
    """The scores and tokens as arrays, when the array route applies (the rules of
    :mod:`cupel._fastpath`): no NaN score and a token total below
    :data:`~cupel._fastpath.MAX_EXACT_TOKENS`."""
    array = float_column(scores)
    if array is None or sum(tokens) >= MAX_EXACT_TOKENS:
        return None
    return _Columns(array, np.array(tokens, dtype=np.int64))


def _rank_order(scores: FloatArray, survivors: list[int] | None) -> IntArray:
    """The survivors' positions by descending score, ties in position order: a stable
    argsort, which on NaN-free floats orders exactly as ``list.sort(key=-score)``."""
    if survivors is None:
        return np.argsort(-scores, kind="stable")
    kept = np.array(survivors, dtype=np.intp)
    return kept[np.argsort(-scores[kept], kind="stable")]


def _as_list(scores: FloatArray | list[Any]) -> list[Any]:
    """Scores as a list of Python values (floats, never NumPy scalars, in reports)."""
    return scores.tolist() if isinstance(scores, np.ndarray) else scores


def _scored(items: list[ContextItem], scores: list[Any]) -> list[ScoredItem]:
    """``ScoredItem(item, score)`` pairs, built without a Python-level call per pair."""
    return list(map(tuple.__new__, repeat(ScoredItem), zip(items, scores, strict=True)))


def _ranked(
    scoreable: list[ContextItem], order: IntArray | list[int], scores: FloatArray | list[Any]
) -> list[ScoredItem]:
    """The sorted candidates as the spec's score-descending ScoredItem list."""
    if isinstance(order, np.ndarray) and isinstance(scores, np.ndarray):
        return _scored(list(map(scoreable.__getitem__, order.tolist())), scores[order].tolist())
    values = _as_list(scores)
    return _scored([scoreable[i] for i in order], [values[i] for i in order])


def _reassociate(
    ranked: list[ScoredItem], selected: Sequence[ContextItem], slicer: object
) -> list[ScoredItem]:
    """The slicer's selection with its scores, in ranked order (ruling 13: the selection
    enters the merge in the Sort stage's order, whatever order the slicer returned it
    in). Items are matched by identity; the slicer must return a subset of its candidates
    (an object listed n times may be selected at most n times, its first occurrences in
    ranked order being the selected ones)."""
    ids = list(map(id, map(_ITEM, ranked)))
    present = dict.fromkeys(ids)
    wanted = list(map(id, selected))
    if not all(map(present.__contains__, wanted)):
        stranger = next(item for item in selected if id(item) not in present)
        raise CupelError(
            f"slicer {slicer!r} returned an item that was not among its candidates: "
            f"{stranger.content[:60]!r}"
        )
    remaining = Counter(wanted)
    if len(remaining) != len(wanted):
        available = Counter(ids)
        if any(count > available[key] for key, count in remaining.items()):
            raise CupelError(f"slicer {slicer!r} returned the same item more than once")
    kept: list[ScoredItem] = []
    for key, entry in zip(ids, ranked, strict=True):
        if remaining[key] > 0:
            remaining[key] -= 1
            kept.append(entry)
    return kept


def _check_placement(merged: list[ContextItem], placed: list[ContextItem], placer: object) -> None:
    """The placer must return exactly the items it was given (as a multiset of objects)."""
    if len(placed) == len(merged):
        merged_ids = set(map(id, merged))
        if len(merged_ids) == len(merged) and merged_ids == set(map(id, placed)):
            return
        if Counter(map(id, placed)) == Counter(map(id, merged)):
            return
    raise CupelError(
        f"placer {placer!r} must return exactly the items it was given "
        f"(got {len(placed)} for {len(merged)})"
    )
