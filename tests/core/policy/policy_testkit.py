"""Shared items and helpers for the policy, preset, analytics and budget simulation tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from cupel import ContextBudget, ContextItem, Pipeline

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)


def workload() -> list[ContextItem]:
    """A mixed conversation: system prompt, messages, tool outputs, documents, memories,
    with timestamps, priorities, tags, hints and metadata, and one duplicate content."""
    items = [
        ContextItem(content="You are a careful assistant.", tokens=12, kind="SystemPrompt"),
        ContextItem(
            content="User prefers UTC timestamps.",
            tokens=9,
            kind="Memory",
            tags=("prefs",),
            metadata={"cupel:trust": "0.9"},
            timestamp=T0 - timedelta(days=3),
        ),
    ]
    for i in range(10):
        items.append(
            ContextItem(
                content=f"message {i}: " + "word " * (5 + 3 * i),
                tokens=10 + 4 * i,
                kind="Message",
                priority=i % 4,
                tags=("chat", "billing") if i % 3 == 0 else ("chat",),
                timestamp=T0 - timedelta(minutes=90 - 9 * i),
            )
        )
    for i in range(4):
        items.append(
            ContextItem(
                content=f"tool result {i}",
                tokens=25 + 10 * i,
                kind="ToolOutput",
                priority=5 - i,
                tags=("tool", "billing") if i % 2 else ("tool",),
                timestamp=T0 - timedelta(minutes=40 - 10 * i),
                metadata={"cupel:priority": "high"} if i == 2 else {},
            )
        )
    for i in range(5):
        items.append(
            ContextItem(
                content=f"document {i}",
                tokens=60 + 15 * i,
                kind="Document",
                future_relevance_hint=(0.2 + 0.15 * i) % 1.0,
                priority=i,
                metadata={"cupel:trust": f"{0.5 + 0.1 * i:.1f}"},
            )
        )
    items.append(ContextItem(content="message 3: " + "word " * 14, tokens=22, kind="Message"))
    return items


BUDGET = ContextBudget(max_tokens=400, target_tokens=300)


QUERY = "which timestamps does the user prefer?"
"""The query bound to a pipeline that needs one (the ``recall`` preset)."""


def selection(pipeline: Pipeline, items: Sequence[ContextItem], budget: ContextBudget) -> list:
    """What a run decided: placed contents with scores, and excluded contents with
    reasons."""
    if pipeline.needs_query:  # the recall preset: bind a query as a caller would
        pipeline = pipeline.with_query(QUERY)
    report = pipeline.dry_run(items, budget).report
    assert report is not None
    return [
        [(e.item.content, e.score, e.reason) for e in report.included],
        sorted((e.item.content, e.reason.name) for e in report.excluded),
    ]
