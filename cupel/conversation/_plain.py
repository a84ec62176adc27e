"""The plain recency window: which pipelines select one from a history's columns alone
(:func:`plain_pipeline`, :func:`plain_key`, :func:`reads_unit_metadata`), and the window
of a tool-free history from its roles and counts (:func:`tool_free_window`)."""

from __future__ import annotations

from bisect import insort
from collections.abc import Collection, Sequence
from functools import cache

from cupel._model import ContextBudget
from cupel._pipeline import Pipeline
from cupel._pipeline.slice import effective_limits
from cupel.conversation._structure import ASSISTANT, SYSTEM, USER
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY, RecencyWindowSlice

__all__ = ["plain_key", "plain_pipeline", "reads_unit_metadata", "split_start", "tool_free_window"]


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
    selects, from the roles and tokens alone: for a history of ``system``, ``user`` and
    ``assistant`` messages only and a :func:`plain_pipeline` without a ``low_water`` mark
    whose pinned messages fit the budget's target. ``None`` otherwise: then select.

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
    latest_user = len(roles) - 1
    while latest_user >= 0 and roles[latest_user] != USER:
        latest_user -= 1
    pinned = (  # the system messages (keep_system) and the latest user's, ascending
        [i for i, role in enumerate(roles) if role == SYSTEM]
        if keep_system and SYSTEM in roles
        else []
    )
    if keep_latest_user and latest_user >= 0:
        insort(pinned, latest_user)
    pinned_tokens = sum([tokens[i] for i in pinned])
    if pinned_tokens > min(budget.target_tokens, budget.max_tokens - budget.output_reserve):
        return None  # select raises, or runs the pipeline
    target = effective_limits(budget, pinned_tokens)[1]
    chosen: list[int] = []
    if len(pinned) < len(roles) and target > 0:  # as plain_window: nothing to walk, or no room
        by_turn = slicer.block_key is not None and latest_user >= 0
        chosen = _recent(
            roles,
            tokens,
            target,
            latest_user,
            by_turn,
            keep_system,
            keep_latest_user,
            slicer.partial_blocks,
        )
    chosen.extend(pinned)
    chosen.sort()
    if start_on:
        for index in chosen:  # as split_start: no change when the first one starts it
            role = roles[index]
            if role != SYSTEM:
                if role not in start_on:
                    chosen = split_start(chosen, roles, range(len(roles)), start_on)[0]
                break
    return chosen


_TOOL_FREE = frozenset({SYSTEM, USER, ASSISTANT})


def _recent(
    roles: Sequence[str],
    tokens: Sequence[int],
    target: int,
    latest_user: int,
    by_turn: bool,
    keep_system: bool,
    keep_latest_user: bool,
    partial: bool = False,
) -> list[int]:
    """The recency window's walk (``plain_window``'s rule) over the unpinned messages of
    a tool-free history, newest first: the latest turn's messages one by one, then (with
    ``by_turn``: turns kept whole) each earlier turn whole — its unpinned messages from
    its user message on; messages before the first user message are turn 0 — taking each
    while it fits ``target`` and stopping at the first that does not (with ``partial``, a
    turn that does not fit whole keeps its first message and its newest messages that
    fit, as ``plain_window`` does). Returns the messages taken, newest first."""
    taken: list[int] = []
    remaining = target
    index = len(roles) - 1
    own_from = latest_user if by_turn else 0
    while index >= own_from:  # one message at a time
        if (keep_system and roles[index] == SYSTEM) or (keep_latest_user and index == latest_user):
            index -= 1
            continue
        need = tokens[index]
        if need > remaining:
            return taken
        taken.append(index)
        remaining -= need
        index -= 1
    while index >= 0:  # a whole earlier turn at a time
        turn: list[int] = []
        need = 0
        while index >= 0:
            role = roles[index]
            if not (keep_system and role == SYSTEM):
                turn.append(index)
                need += tokens[index]
            index -= 1
            if role == USER:
                break
        if need > remaining:
            if partial and len(turn) > 1:  # its first message and its newest that fit
                room = remaining - tokens[turn[-1]]
                tail: list[int] = []
                for message in turn[:-1]:
                    if tokens[message] > room:
                        break
                    tail.append(message)
                    room -= tokens[message]
                if tail:
                    taken.extend(tail)
                    taken.append(turn[-1])
            return taken
        taken.extend(turn)
        remaining -= need
    return taken


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
    (``HistoryWindow.plain``) is the window again for an equal key and the same columns,
    budget and ``start_on``; any change to the pipeline or its slicer changes the key."""
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
    if not leading:
        return positions, []
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
    block key: ``False`` only when its scorer tree, slicer and placer are all cupel's own
    components that read other fields (exact classes: a subclass could read anything) and
    no overflow callback receives the items. A history selection without a report can
    then leave the adapter's per-unit metadata out: its items never leave the selection.

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
