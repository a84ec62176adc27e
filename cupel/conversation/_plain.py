"""The plain recency window: which pipelines select one from a history's columns alone
(:func:`plain_pipeline`, :func:`plain_key`, :func:`reads_unit_metadata`), and the window
of a tool-free history from its roles and counts (:func:`tool_free_window`)."""

from __future__ import annotations

from bisect import insort
from collections.abc import Collection, Sequence
from functools import cache
from itertools import accumulate

from cupel._model import ContextBudget
from cupel._pipeline import Pipeline
from cupel._pipeline.slice import effective_limits
from cupel.conversation._structure import ASSISTANT, SYSTEM, USER
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY, RecencyWindowSlice, plain_window

__all__ = [
    "plain_key",
    "plain_pipeline",
    "reads_unit_metadata",
    "recency_walk",
    "split_start",
    "tool_free_window",
]


def tool_free_window(
    roles: Sequence[str],
    tokens: Sequence[int],
    pipeline: Pipeline,
    budget: ContextBudget,
    *,
    keep_system: bool = True,
    keep_latest_user: bool = True,
    start_on: Collection[str] = (),
) -> list[int] | None:
    """The messages (ascending) of the window that
    ``HistoryItems.from_conversation(Conversation(roles), texts, tokens, keep_system=...,
    keep_latest_user=...).select(pipeline, budget, with_report=False, start_on=...)``
    selects, from the roles and tokens alone (no structure, items or window object): for
    a history of ``system``, ``user`` and ``assistant`` messages only (each message is
    its own unit) and a :func:`plain_pipeline` without a ``low_water`` mark whose pinned
    messages fit the budget's target. ``None`` otherwise (any other role; another pipeline,
    or a cache-stable one, whose window is replayed from the history; pinned messages over
    the target, when ``select`` raises or runs the pipeline): then select.

    >>> tool_free_window(["system", "user", "assistant", "user"], [3, 1, 2, 1],
    ...                  Pipeline.from_policy("chat"), ContextBudget(max_tokens=5, target_tokens=5))
    [0, 3]
    """
    slicer: RecencyWindowSlice = pipeline.slicer  # type: ignore[assignment]  # if plain
    if (
        not plain_pipeline(pipeline, DEFAULT_BLOCK_KEY)
        or slicer.low_water is not None
        or not _TOOL_FREE.issuperset(roles)
    ):
        return None  # cache-stable windows are replayed from the history: select them
    latest_user = next((i for i in range(len(roles) - 1, -1, -1) if roles[i] == USER), -1)
    pinned = (  # the system messages (keep_system) and the latest user's, ascending
        [i for i, role in enumerate(roles) if role == SYSTEM]
        if keep_system and SYSTEM in roles
        else []
    )
    if keep_latest_user and latest_user >= 0:
        insort(pinned, latest_user)
    # the columns HistoryItems holds for it: each message a unit, each turn before the
    # latest user message's a block
    turns = list(accumulate(1 if role == USER else 0 for role in roles))
    latest_turn = turns[latest_user] if latest_user >= 0 else 0
    blocks = [turn if turn < latest_turn else None for turn in turns]
    kept = set(pinned)
    walk = [i for i in range(len(roles) - 1, -1, -1) if i not in kept]
    pinned_tokens = sum([tokens[i] for i in pinned])
    chosen = recency_walk(slicer, walk, tokens, blocks, pinned, pinned_tokens, budget)
    if chosen is None:
        return None  # select raises, or runs the pipeline
    if start_on:
        chosen = split_start(chosen, roles, range(len(roles)), start_on)[0]
    return chosen


_TOOL_FREE = frozenset({SYSTEM, USER, ASSISTANT})


def recency_walk(
    slicer: RecencyWindowSlice,
    walk: Sequence[int],
    tokens: Sequence[int],
    blocks: Sequence[int | None],
    pinned: Sequence[int],
    pinned_tokens: int,
    budget: ContextBudget,
) -> list[int] | None:
    """The plain window, ascending: the ``pinned`` positions and those of ``walk`` (newest
    first; ``tokens`` and ``blocks`` by position) the recency window takes
    (:func:`~cupel.slicers.recency_window.plain_window`); ``None`` when the pinned
    positions' ``pinned_tokens`` exceed the budget's target or its room for input."""
    if pinned_tokens > min(budget.target_tokens, budget.max_tokens - budget.output_reserve):
        return None
    target = effective_limits(budget, pinned_tokens)[1]
    taken = plain_window(slicer, [tokens[p] for p in walk], [blocks[p] for p in walk], target)
    return sorted([*(walk[i] for i in taken), *pinned])


def plain_pipeline(pipeline: Pipeline, block_key: str | None = DEFAULT_BLOCK_KEY) -> bool:
    """Whether ``pipeline`` selects a plain recency window from columns whose blocks are
    under ``block_key``: a :class:`~cupel.RecencyWindowSlice` without ``scored_share``
    whose block key is ``block_key`` (or ``None``), no deduplication, cupel's own scorers
    and placer (exact classes). Everything it reads is in :func:`plain_key`.

    >>> plain_pipeline(Pipeline.from_policy("chat")), plain_pipeline(Pipeline.from_policy("rag"))
    (True, False)
    """
    slicer = pipeline.slicer
    return not (
        type(pipeline) is not Pipeline
        or type(slicer) is not RecencyWindowSlice
        or slicer.scored_share
        or pipeline.deduplication
        or (slicer.block_key is not None and slicer.block_key != block_key)
        or not _own_components(pipeline)
    )


def plain_key(pipeline: Pipeline) -> tuple[object, ...]:
    """Everything the plain-window path reads of ``pipeline`` (objects by identity, the
    slicer's settings by value): a window computed from the columns alone
    (``HistoryWindow.plain``) is the window again for an equal key, the same columns,
    budget, ``start_on`` and no ``previous`` window — whatever was replaced or changed
    on the pipeline or its slicer since, the key differs."""
    slicer = pipeline.slicer
    return (
        pipeline,
        type(pipeline),
        slicer,
        type(slicer),
        getattr(slicer, "block_key", None),
        getattr(slicer, "scored_share", None),
        getattr(slicer, "low_water", None),
        getattr(slicer, "partial_blocks", None),
        pipeline.deduplication,
        pipeline.scorer,
        pipeline.placer,
    )


def split_start(
    positions: list[int], roles: Sequence[str], units: Sequence[int], start_on: Collection[str]
) -> tuple[list[int], list[int]]:
    """``positions`` without the non-system units before the first of a ``start_on``
    role (``roles[units[p]]``), and those units; unchanged when none is of such a role."""
    leading: list[int] = []
    for position in positions:
        role = roles[units[position]]
        if role == SYSTEM:
            continue
        if role in start_on:
            break
        leading.append(position)
    else:
        return positions, []  # nothing to start on: the window stays as it is
    gone = set(leading)
    return [p for p in positions if p not in gone], leading


def _own_components(pipeline: Pipeline) -> bool:
    """Whether the pipeline's scorer tree and placer are cupel's own, exact classes
    that read no item metadata (a subclass could read anything)."""
    placers, blind = _blind_classes()
    if type(pipeline.placer) not in placers:
        return False
    pending: list[object] = [pipeline.scorer]
    while pending:
        scorer = pending.pop()
        if type(scorer) not in blind:
            return False
        pending.extend(scorer.children())  # type: ignore[attr-defined]
    return True


@cache
def _blind_classes() -> tuple[frozenset[type], frozenset[type]]:
    """cupel's placers, and its scorers that read no item metadata (imported on first
    use: the component packages import this layer's neighbours)."""
    from cupel import placers, scorers

    return (
        frozenset({placers.ChronologicalPlacer, placers.UShapedPlacer}),
        frozenset(
            {
                scorers.CompositeScorer,
                scorers.DecayScorer,
                scorers.FrequencyScorer,
                scorers.KindScorer,
                scorers.PriorityScorer,
                scorers.RecencyScorer,
                scorers.ReflexiveScorer,
                scorers.RelevanceScorer,
                scorers.ScaledScorer,
                scorers.TagScorer,
            }
        ),
    )


def reads_unit_metadata(pipeline: Pipeline) -> bool:
    """Whether running ``pipeline`` may read an item's metadata beyond the recency window's
    block key (which :class:`HistoryColumns` always sets): ``False`` only when its scorer
    tree, slicer and placer are all cupel's own components that look at other fields
    (exact classes: a subclass could read anything; the metadata scorers do read it) and
    no overflow callback receives the items. A history selection that builds no report
    can then leave the adapter's per-unit metadata out: its items never leave the
    selection.

    >>> from cupel import MetadataKeyScorer
    >>> reads_unit_metadata(Pipeline.from_policy("chat"))
    False
    >>> reads_unit_metadata(Pipeline(MetadataKeyScorer("role", "user", 2.0)))
    True
    """
    from cupel.slicers import GreedySlice, KnapsackSlice

    slicer = pipeline.slicer
    return (
        pipeline.on_overflow is not None
        or type(slicer) not in (GreedySlice, KnapsackSlice, RecencyWindowSlice)
        or (type(slicer) is RecencyWindowSlice and slicer.block_key != DEFAULT_BLOCK_KEY)
        or not _own_components(pipeline)
    )
