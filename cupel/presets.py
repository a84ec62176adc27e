"""Seven ready-made policies for common workloads.

=============  =========================================  ===============  ==============
preset         scorer (composite weights)                 slicer           placer
=============  =========================================  ===============  ==============
chat           Recency 3, Kind 1                          Greedy           Chronological
code_review    Kind 2, Priority 2, Recency 1              Greedy           Chronological
rag            Reflexive 3, Kind 1                        Greedy           U-shaped
document_qa    Kind 2, Reflexive 2, Priority 1            Knapsack(100)    U-shaped
tool_use       Kind 2, Recency 2, Priority 1              Greedy           Chronological
long_running   Recency 3, Frequency 1, Kind 1             Greedy           Chronological
debugging      Priority 3, Kind 2, Recency 1              Greedy           Chronological
=============  =========================================  ===============  ==============

Every preset deduplicates, uses ``OverflowStrategy.THROW`` and the Kind scorer's default
weights. Each is a plain :class:`~cupel.policy.Policy`, so it can be saved, edited and
compared like any other (``preset("rag").replace(overflow_strategy="truncate")``).

>>> preset("Code-Review").build().scorer
CompositeScorer([(KindScorer({'SystemPrompt': 1.0, 'Memory': 0.8, 'ToolOutput': 0.6, \
'Document': 0.4, 'Message': 0.2}), 0.4), (PriorityScorer(), 0.4), (RecencyScorer(), 0.2)])
>>> PRESET_NAMES
('chat', 'code_review', 'rag', 'document_qa', 'tool_use', 'long_running', 'debugging')
"""

from __future__ import annotations

from collections.abc import Callable

from cupel._model import ascii_fold
from cupel.policy import (
    CompositeEntrySpec,
    CompositeSpec,
    FrequencySpec,
    GreedySpec,
    KindSpec,
    KnapsackSpec,
    Policy,
    PolicyError,
    PrioritySpec,
    RecencySpec,
    ReflexiveSpec,
    ScorerSpec,
    SlicerSpec,
)

__all__ = [
    "PRESET_NAMES",
    "chat",
    "code_review",
    "debugging",
    "document_qa",
    "long_running",
    "preset",
    "rag",
    "tool_use",
]


def _policy(
    name: str,
    description: str,
    weights: list[tuple[ScorerSpec, float]],
    *,
    slicer: SlicerSpec | None = None,
    placer: str = "chronological",
) -> Policy:
    return Policy(
        name=name,
        description=description,
        scorer=CompositeSpec(scorers=[CompositeEntrySpec(weight=w, scorer=s) for s, w in weights]),
        slicer=GreedySpec() if slicer is None else slicer,
        placer=placer,
        deduplication=True,
        overflow_strategy="throw",
    )


def chat() -> Policy:
    """Conversations: the latest turns matter most, the kind breaks ties (system prompt and
    memories over old messages). Recency 3 + Kind 1, greedy, chronological order.

    Use it for chat assistants whose history outgrows the window.
    """
    return _policy(
        "chat",
        "Recent conversation first; kind as a tie-breaker.",
        [(RecencySpec(), 3.0), (KindSpec(), 1.0)],
    )


def code_review() -> Policy:
    """Code review: what the item is (system prompt, memory, tool output, document) and
    how important the caller marked it, then freshness. Kind 2 + Priority 2 + Recency 1.

    Use it when diffs, files and review comments carry explicit priorities.
    """
    return _policy(
        "code_review",
        "Kind and caller priority first, then recency.",
        [(KindSpec(), 2.0), (PrioritySpec(), 2.0), (RecencySpec(), 1.0)],
    )


def rag() -> Policy:
    """Retrieval-augmented generation: the retriever's relevance (``future_relevance_hint``)
    dominates; the U-shaped placer puts the best passages at both edges of the window,
    where models attend most. Reflexive 3 + Kind 1, greedy.

    Use it when items come from a retriever with similarity scores mapped to hints.
    """
    return _policy(
        "rag",
        "Retriever relevance first; best passages at the window's edges.",
        [(ReflexiveSpec(), 3.0), (KindSpec(), 1.0)],
        placer="u_shaped",
    )


def document_qa() -> Policy:
    """Question answering over documents: kind and relevance equally, priority as a
    tie-breaker; the knapsack (bucket 100) packs large documents tightly, and the
    U-shaped placer puts the best at the edges. Kind 2 + Reflexive 2 + Priority 1.

    Use it when a few large documents compete for a tight budget. The knapsack counts in
    100-token buckets (an item's tokens rounded up, the target rounded down), so it suits
    budgets of thousands of tokens; with an effective target below 100 it selects nothing
    but pinned and zero-token items.
    """
    return _policy(
        "document_qa",
        "Kind and relevance, packed by knapsack; best documents at the edges.",
        [(KindSpec(), 2.0), (ReflexiveSpec(), 2.0), (PrioritySpec(), 1.0)],
        slicer=KnapsackSpec(bucket_size=100),
        placer="u_shaped",
    )


def tool_use() -> Policy:
    """Agents calling tools: tool outputs and fresh results first, priority for the rest.
    Kind 2 + Recency 2 + Priority 1.

    Use it for agent loops where recent tool results drive the next step.
    """
    return _policy(
        "tool_use",
        "Kind and recency (fresh tool results), then priority.",
        [(KindSpec(), 2.0), (RecencySpec(), 2.0), (PrioritySpec(), 1.0)],
    )


def long_running() -> Policy:
    """Long sessions: recency first, plus items whose tags recur across the session
    (recurring topics), then kind. Recency 3 + Frequency 1 + Kind 1.

    Use it for long-lived assistants whose history spans many topics.
    """
    return _policy(
        "long_running",
        "Recency, recurring topics (shared tags), then kind.",
        [(RecencySpec(), 3.0), (FrequencySpec(), 1.0), (KindSpec(), 1.0)],
    )


def debugging() -> Policy:
    """Debugging: what the caller marked important (errors, stack traces) comes first,
    then kind, then recency. Priority 3 + Kind 2 + Recency 1.

    Use it when logs and traces carry priorities and the newest line is not always the
    one that matters.
    """
    return _policy(
        "debugging",
        "Caller priority first (errors, traces), then kind, then recency.",
        [(PrioritySpec(), 3.0), (KindSpec(), 2.0), (RecencySpec(), 1.0)],
    )


_PRESETS: dict[str, Callable[[], Policy]] = {
    "chat": chat,
    "code_review": code_review,
    "rag": rag,
    "document_qa": document_qa,
    "tool_use": tool_use,
    "long_running": long_running,
    "debugging": debugging,
}

PRESET_NAMES: tuple[str, ...] = tuple(_PRESETS)
"""The preset names, in documentation order."""


def preset(name: str) -> Policy:
    """The preset policy called ``name`` (ASCII case-insensitive; ``-`` or a space may
    stand for ``_``). Unknown names raise :class:`~cupel.policy.PolicyError` listing the
    seven presets.

    >>> preset("RAG").placer
    'u_shaped'
    >>> preset("summary")
    Traceback (most recent call last):
    ...
    cupel.policy.PolicyError: unknown preset 'summary'; presets: chat, code_review, rag, \
document_qa, tool_use, long_running, debugging
    """
    key = (
        ascii_fold(name.strip()).replace("-", "_").replace(" ", "_")
        if isinstance(name, str)
        else ""
    )
    factory = _PRESETS.get(key)
    if factory is None:
        raise PolicyError(
            f"unknown preset {name!r}; presets: {', '.join(PRESET_NAMES)}",
            field="preset",
            value=name,
        )
    return factory()
