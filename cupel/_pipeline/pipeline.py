"""The Pipeline: a configuration (scorer, slicer, placer, deduplication, overflow) and its run."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cupel._errors import ConfigurationError, InvalidOperationError, refusal
from cupel._model import ContextBudget, ContextItem, OverflowStrategy
from cupel._pipeline.deduplicate import CONTENT_FIELD
from cupel._pipeline.place import OverflowCallback
from cupel._pipeline.report import UNTRACED, Stages, Traced
from cupel.diagnostics._collectors import NULL_COLLECTOR, DiagnosticTraceCollector, TraceCollector
from cupel.diagnostics._events import OverflowEvent, TraceDetailLevel
from cupel.diagnostics._report import SelectionReport
from cupel.placers import ChronologicalPlacer
from cupel.placers._base import Placer
from cupel.scorers._base import Scorer, fields_read
from cupel.scorers.embedding import Embedder, EmbedTexts
from cupel.scorers.relevance import UNBOUND_FIX, bind_query, needs_query, with_embedder
from cupel.slicers import GreedySlice
from cupel.slicers._base import Slicer

__all__ = ["ContextResult", "Pipeline", "PipelineRecipe", "set_policy_resolver"]


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The outcome of a run: the window in placed order, its token total, the report
    (when a diagnostic collector was used, always for ``dry_run``) and the overflow
    record (``OverflowStrategy.PROCEED`` over target only)."""

    items: list[ContextItem]
    total_tokens: int
    report: SelectionReport | None = None
    overflow: OverflowEvent | None = None


class PipelineRecipe(Protocol):
    """What :meth:`Pipeline.from_policy` builds: an object whose ``build()`` makes a
    pipeline, i.e. a :class:`~cupel.policy.Policy` (named by its shape: ``cupel.policy``
    builds on this module, never the reverse)."""

    def build(self) -> Pipeline: ...


PolicyResolver = Callable[[Any], "Pipeline"]
_POLICY_RESOLVER: list[PolicyResolver] = []


def set_policy_resolver(resolver: PolicyResolver) -> None:
    """Install what :meth:`Pipeline.from_policy` calls (``cupel.policy`` does, when it is
    imported: the policy layer builds on the pipeline, so the pipeline cannot import it)."""
    _POLICY_RESOLVER[:] = [resolver]


def _require(obj: object, method: str, param: str, kind: str) -> None:
    if obj is None or not callable(getattr(obj, method, None)):
        rule = f"must be a {kind} (an object with a callable '{method}' method)"
        raise refusal("Pipeline", param, rule, obj)


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
            slicer = GreedySlice()
        if placer is None:
            placer = ChronologicalPlacer()
        _require(scorer, "score", "scorer", "scorer")
        _require(slicer, "slice", "slicer", "slicer")
        _require(placer, "place", "placer", "placer")
        if not isinstance(deduplication, bool):
            raise refusal("Pipeline", "deduplication", "must be a bool", deduplication)
        if on_overflow is not None and not callable(on_overflow):
            raise refusal("Pipeline", "on_overflow", "must be callable", on_overflow)
        self.scorer = scorer
        self.slicer = slicer
        self.placer = placer
        self.deduplication = deduplication
        self.overflow_strategy = OverflowStrategy.parse(overflow_strategy)
        self.on_overflow = on_overflow

    @classmethod
    def from_policy(cls, policy: PipelineRecipe | str) -> Pipeline:
        """A pipeline built from a :class:`~cupel.policy.Policy` or a preset name
        (``"chat"``, ``"rag"``, ... see :mod:`cupel.presets`).

        >>> Pipeline.from_policy("rag").placer
        UShapedPlacer()
        """
        if not _POLICY_RESOLVER:  # pragma: no cover - cupel/__init__ imports cupel.policy
            raise InvalidOperationError("Pipeline.from_policy needs cupel.policy imported")
        return _POLICY_RESOLVER[0](policy)

    @property
    def needs_query(self) -> bool:
        """Whether the scorer tree holds an unbound :class:`~cupel.RelevanceScorer` (the
        pipeline runs only once :meth:`with_query` has bound it).

        >>> from cupel import RelevanceScorer
        >>> Pipeline(RelevanceScorer()).needs_query, Pipeline(RelevanceScorer("x")).needs_query
        (True, False)
        """
        return needs_query(self.scorer)

    def with_query(self, query: str) -> Pipeline:
        """A copy whose unbound :class:`~cupel.RelevanceScorer`\\ s, anywhere in the scorer
        tree, are bound to ``query``; bound ones are kept. A pipeline that needs no query
        is returned as is.

        >>> from cupel import CompositeScorer, ContextBudget, ContextItem, RelevanceScorer
        >>> from cupel import RecencyScorer
        >>> recall = Pipeline(CompositeScorer([(RecencyScorer(), 1), (RelevanceScorer(), 2)]))
        >>> items = [ContextItem(content=c, tokens=10) for c in ("the cat sat", "dogs bark")]
        >>> budget = ContextBudget(max_tokens=10, target_tokens=10)
        >>> [i.content for i in recall.with_query("cats?").run(items, budget).items]
        ['the cat sat']
        """
        scorer = bind_query(self.scorer, query)
        if scorer is self.scorer:
            return self
        copied = copy.copy(self)
        copied.scorer = scorer
        return copied

    def with_embedder(self, embed: Embedder | EmbedTexts) -> Pipeline:
        """A copy whose :class:`~cupel.RelevanceScorer`\\ s, anywhere in the scorer tree,
        also score by meaning with ``embed`` (an
        :class:`~cupel.scorers.embedding.Embedder` or a texts-to-vectors function; see
        :mod:`cupel.scorers.relevance` for the rule). A pipeline without one raises
        :class:`~cupel.ConfigurationError`.
        """
        copied = copy.copy(self)
        copied.scorer = with_embedder(self.scorer, embed)
        return copied

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
        never modified; the window holds the very same item objects. A pipeline whose
        scorer tree holds an unbound :class:`~cupel.RelevanceScorer` raises
        :class:`~cupel.ConfigurationError` before any stage (see :meth:`with_query`).
        """
        if needs_query(self.scorer):
            raise ConfigurationError(
                f"Pipeline.run: the scorer holds a RelevanceScorer without a query; {UNBOUND_FIX}",
                field="scorer",
                value=self.scorer,
            )
        items = _checked_input(items, budget)
        trace = collector if collector is not None else NULL_COLLECTOR
        if not trace.is_enabled:
            return self._run(items, budget, UNTRACED, on_overflow)
        trace.on_run_start(len(items), budget)
        try:
            return self._run(items, budget, Traced(trace), on_overflow)
        except Exception as exc:
            trace.on_run_error(exc)
            raise

    def _run(
        self,
        items: Sequence[ContextItem],
        budget: ContextBudget,
        stages: Stages,
        on_overflow: OverflowCallback | None,
    ) -> ContextResult:
        """The six stages (see :mod:`cupel._pipeline`); ``stages`` reports them or not."""
        classified = stages.classify(items, budget, self._fields_read())
        scores = stages.score(self.scorer, classified)
        survivors = stages.deduplicate(classified, scores, self.deduplication)
        ranking = stages.sort(classified, scores, survivors)
        sliced = stages.slice(self.slicer, classified, ranking, budget)
        placed = stages.place(
            self.placer,
            classified,
            sliced,
            budget,
            self.overflow_strategy,
            on_overflow if on_overflow is not None else self.on_overflow,
        )
        report = stages.report(self.slicer, classified, self.scorer)
        return ContextResult(placed.items, placed.tokens, report, placed.overflow)

    def _fields_read(self) -> tuple[str, ...]:
        """The item fields the later stages read (the scorer's, the contents for
        deduplication), read once by the Classify stage and handed to them."""
        names = fields_read(self.scorer)
        return (*names, CONTENT_FIELD) if self.deduplication else names


def _checked_input(items: Sequence[ContextItem], budget: ContextBudget) -> Sequence[ContextItem]:
    """``items`` as a sequence the stages may read more than once; a clear error for a
    budget that is not a ContextBudget or items that are not a sequence of items."""
    if not isinstance(budget, ContextBudget):
        raise ConfigurationError(
            f"Pipeline.run: budget must be a ContextBudget, got {type(budget).__name__}",
            field="budget",
            value=budget,
        )
    if isinstance(items, (list, tuple)):
        return items
    if isinstance(items, (str, bytes, Mapping, ContextItem)) or not isinstance(items, Iterable):
        raise ConfigurationError(
            f"Pipeline.run: items must be a sequence (or iterable) of ContextItem, "
            f"got {type(items).__name__}",
            field="items",
            value=items,
        )
    return list(items)
