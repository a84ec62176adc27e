"""Fixtures for the slicer tests: terse item and budget builders, and a recording slicer."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel.slicers import Slicer

Row = tuple[str, int, float] | tuple[str, int, float, str]
"""(content, tokens, score) or (content, tokens, score, kind); kind defaults to Message."""


def _scored(*rows: Row) -> list[ScoredItem]:
    out = []
    for row in rows:
        content, tokens, score = row[0], row[1], row[2]
        kind = row[3] if len(row) == 4 else "Message"
        out.append(ScoredItem(ContextItem(content=content, tokens=tokens, kind=kind), score))
    return out


def _budget(target: int, max_tokens: int | None = None) -> ContextBudget:
    return ContextBudget(
        max_tokens=target if max_tokens is None else max_tokens, target_tokens=target
    )


class RecordingSlicer:
    """Delegates to ``inner`` (or selects everything) and records every call it gets."""

    def __init__(self, inner: Slicer | None = None) -> None:
        self.inner = inner
        self.calls: list[tuple[list[str], ContextBudget]] = []

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        self.calls.append(([s.item.content for s in scored], budget))
        if self.inner is None:
            return [s.item for s in scored]
        return self.inner.slice(scored, budget)

    def budgets_by_first_item(self) -> dict[str, tuple[int, int]]:
        """First content of each call -> (max_tokens, target_tokens) it was given."""
        return {
            contents[0]: (budget.max_tokens, budget.target_tokens)
            for contents, budget in self.calls
        }


@pytest.fixture
def scored() -> Callable[..., list[ScoredItem]]:
    """``scored(("a", 10, 0.9), ("t", 5, 0.5, "ToolOutput"))`` -> list of ScoredItem."""
    return _scored


@pytest.fixture
def budget() -> Callable[..., ContextBudget]:
    """``budget(target)`` or ``budget(target, max_tokens)``."""
    return _budget


@pytest.fixture
def recorder() -> Callable[..., RecordingSlicer]:
    """``recorder()`` selects everything it is given; ``recorder(inner)`` delegates."""
    return RecordingSlicer


@pytest.fixture
def names() -> Callable[[Sequence[ContextItem]], list[str]]:
    """``names(items)`` -> the items' contents, in order."""
    return _names


def _names(items: Sequence[ContextItem]) -> list[str]:
    return [i.content for i in items]
