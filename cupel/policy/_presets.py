"""The eight presets (private; public as :mod:`cupel.presets`, which documents them)."""

from __future__ import annotations

from collections.abc import Callable

from cupel._errors import PolicyError
from cupel.policy._base import normalize_name
from cupel.policy._policy import Policy
from cupel.policy._specs import (
    CompositeEntrySpec,
    CompositeSpec,
    FrequencySpec,
    GreedySpec,
    KindSpec,
    KnapsackSpec,
    PrioritySpec,
    RecencySpec,
    RecencyWindowSpec,
    ReflexiveSpec,
    RelevanceSpec,
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
    "recall",
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
        deduplication=not isinstance(slicer, RecencyWindowSpec),
        overflow_strategy="throw",
    )


def chat() -> Policy:
    """Conversations: the newest turns that fit, whole and without holes (a recency window;
    the oldest kept turn may keep only its question and newest messages; the scores —
    Recency 3 + Kind 1 — only explain the report), in chronological order.

    Use it for chat assistants whose history outgrows the window. The chat adapters pin
    the system prompt and the latest user message on top of it.
    """
    return _policy(
        "chat",
        "The newest whole turns that fit, without holes.",
        [(RecencySpec(), 3.0), (KindSpec(), 1.0)],
        slicer=RecencyWindowSpec(partial_blocks=True),
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
    tie-breaker; the knapsack packs large documents tightly, and the U-shaped placer puts
    the best at the edges. Kind 2 + Reflexive 2 + Priority 1.

    Use it when a few large documents compete for a tight budget. The knapsack's buckets
    scale with the budget (``bucket_size="auto"``: the target in at most 1,000 buckets,
    exact up to 1,000 tokens), so small budgets fill as well as large ones.
    """
    return _policy(
        "document_qa",
        "Kind and relevance, packed by knapsack; best documents at the edges.",
        [(KindSpec(), 2.0), (ReflexiveSpec(), 2.0), (PrioritySpec(), 1.0)],
        slicer=KnapsackSpec(bucket_size="auto"),
        placer="u_shaped",
    )


def tool_use() -> Policy:
    """Agents calling tools: the newest tool rounds that fit, each call with its results,
    without holes (a recency window; Kind 2 + Recency 2 + Priority 1 explain the report).

    Use it for agent loops where recent tool results drive the next step; the adapters
    keep the task (the latest user message) on top of it.
    """
    return _policy(
        "tool_use",
        "The newest tool rounds that fit, without holes.",
        [(KindSpec(), 2.0), (RecencySpec(), 2.0), (PrioritySpec(), 1.0)],
        slicer=RecencyWindowSpec(partial_blocks=True),
    )


def long_running() -> Policy:
    """Long sessions: a recency window over at least three quarters of the budget, and up
    to a quarter for the best *older* items — recurring topics (shared tags), memories and
    high-priority items (Frequency 2 + Kind 1 + Priority 1, by score per token). Those
    older items are the window's only holes, by choice.

    Use it for long-lived assistants whose history spans many topics.
    """
    return _policy(
        "long_running",
        "A recency window plus up to 25% for recurring topics, memories and priorities.",
        [(FrequencySpec(), 2.0), (KindSpec(), 1.0), (PrioritySpec(), 1.0)],
        slicer=RecencyWindowSpec(scored_share=0.25, partial_blocks=True),
    )


RECALL_SHARE = 0.5
"""The ``recall`` preset's share of the budget for recalled turns (``python -m
benchmarks.recall``: a quarter misses evidence at 2,000 tokens, three quarters gain one
evidence turn in 120 at 4,000 for half the recent window)."""


def recall() -> Policy:
    """Long conversations with questions about what was said long ago: the chat default's
    recency window over half the budget, and up to half for the *older* turns most
    relevant to the latest user message (Relevance: BM25 against it, by relevance per
    token; each turn whole — a question with its answer — and a turn that shares no word
    with it never comes back). The latest user message is the query: the history
    components bind it (:meth:`~cupel.Pipeline.with_query`); elsewhere bind it yourself.
    Recalled turns are the window's only holes, by choice; the report lists them with
    their relevance and the words they matched (:attr:`~cupel.SelectionReport.recalled`).

    Use it for assistants asked about facts stated many turns ago.
    """
    return _policy(
        "recall",
        "A recency window plus up to half the budget for the older turns most relevant "
        "to the latest user message.",
        [(RelevanceSpec(), 1.0)],
        slicer=RecencyWindowSpec(scored_share=RECALL_SHARE, partial_blocks=True),
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
    factory.__name__: factory
    for factory in (chat, code_review, rag, document_qa, tool_use, long_running, recall, debugging)
}

PRESET_NAMES: tuple[str, ...] = tuple(_PRESETS)
"""The preset names, in documentation order."""


def preset(name: str) -> Policy:
    """The preset policy called ``name`` (ASCII case-insensitive; ``-`` or a space may
    stand for ``_``). Unknown names raise :class:`~cupel.PolicyError` listing the
    eight presets.

    >>> preset("RAG").placer
    'u_shaped'
    >>> preset("summary")
    Traceback (most recent call last):
    ...
    cupel.PolicyError: unknown preset 'summary'; presets: chat, code_review, rag, \
document_qa, tool_use, long_running, recall, debugging
    """
    key = normalize_name(name) if isinstance(name, str) else ""
    factory = _PRESETS.get(key)
    if factory is None:
        raise PolicyError(
            f"unknown preset {name!r}; presets: {', '.join(PRESET_NAMES)}",
            field="preset",
            value=name,
        )
    return factory()
