"""Shared runs for the diagnostics tests: item sets that make the real pipeline take every
kind of decision (imported by the test_diag_*/test_otel_* modules)."""

from __future__ import annotations

from collections.abc import Sequence

from cupel import (
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    Pipeline,
    ReflexiveScorer,
    ScoredItem,
)


def hinted(content: str, tokens: int, hint: float = 0.5, **kw: object) -> ContextItem:
    """An item whose ReflexiveScorer score is ``hint``."""
    return ContextItem(content=content, tokens=tokens, future_relevance_hint=hint, **kw)


def every_decision_items() -> list[ContextItem]:
    """One item per decision of Classify, Deduplicate, Slice and Place (see BUDGET)."""
    return [
        hinted("sys", 10, pinned=True, kind="SystemPrompt"),  # included: Pinned
        hinted("neg", -1, 0.99),  # Classify: NegativeTokens
        hinted("big", 55, 0.9, kind="Document"),  # Slice: PinnedOverride (fits 60, not 50)
        hinted("tool1", 10, 0.8, kind="ToolOutput"),  # included: Scored
        hinted("tool2", 10, 0.7, kind="ToolOutput"),  # Slice: CountCapExceeded (cap 1)
        hinted("dup", 5, 0.6),  # included: Scored
        hinted("dup", 5, 0.4),  # Deduplicate: Deduplicated
        hinted("note", 40, 0.5),  # Slice: BudgetExceeded
        hinted("zero", 0, 0.1),  # included: ZeroToken
    ]


BUDGET = ContextBudget(max_tokens=100, target_tokens=60)
"""With the 10 pinned tokens the slicer's effective target is 50."""


def every_decision_pipeline() -> Pipeline:
    return Pipeline(
        ReflexiveScorer(),
        CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", cap_count=1)]),
    )


class TakeAll(GreedySlice):
    """A custom slicer that ignores the budget, so the Place stage must truncate."""

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return [entry.item for entry in scored]


def truncating_pipeline() -> Pipeline:
    return Pipeline(ReflexiveScorer(), TakeAll(), overflow_strategy="truncate")


def truncation_items() -> list[ContextItem]:
    """Under target 50 with 30 pinned tokens: 'b' is dropped for the pinned item
    (PinnedOverride), 'c' because nothing is left (BudgetExceeded)."""
    return [
        hinted("pin", 30, pinned=True),
        hinted("a", 15, 0.9),
        hinted("b", 15, 0.8),
        hinted("c", 60, 0.7),
    ]


TRUNCATION_BUDGET = ContextBudget(max_tokens=100, target_tokens=50)
