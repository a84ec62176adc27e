"""CupelChatMemory's selection (:func:`choose`): every call reads and counts the history
in one pass (:meth:`~cupel_llamaindex._reading.Counting.counts`) and selects its window."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from llama_index.core.base.llms.types import ChatMessage

from cupel import ConfigurationError, ContextBudget, CupelError, Pipeline, SelectionReport
from cupel.conversation import (
    USER,
    HistoryWindow,
    PinnedOptions,
    cache_stable_pipeline,
    check_cache_stable,
    tool_free_window,
)
from cupel.counting import estimate_tokens
from cupel.policy import Policy, resolve_pipeline
from cupel_llamaindex._common import CupelSelectionEvent, dispatcher, request_reserve, stable_fields
from cupel_llamaindex._embeddings import embedder_of
from cupel_llamaindex._mapping import MessageMapping, map_read
from cupel_llamaindex._oversized import PARTS
from cupel_llamaindex._reading import Counting, counting_for, read_messages, read_roles

if TYPE_CHECKING:
    from cupel_llamaindex._memory import CupelChatMemory

__all__ = ["OWNER", "PINNED_OPTIONS", "Chosen", "choose", "pipeline_of"]

OWNER = "CupelChatMemory"
_START_ON_USER = frozenset({USER})
_START_ON_NONE: frozenset[str] = frozenset()
PINNED_OPTIONS = PinnedOptions(
    system="pin_system=False",
    latest_user="pin_last_user=False",
    last=None,
    budget="token_limit less initial_token_count, the reply's 3 tokens, headroom and agent_reserve",
)
"""The memory's pinning options, named in the error raised when pinned messages alone
exceed the budget."""


class _Deferred:
    """A window selected from roles and counts alone (:func:`~cupel.conversation.tool_free_window`):
    its report is that of ``select`` on the history's mapping, made when first asked for and
    checked to pick the very same messages (else :class:`~cupel.CupelError`)."""

    __slots__ = ("_select", "_window", "messages")

    def __init__(self, messages: list[int], select: Callable[[], HistoryWindow]) -> None:
        self.messages = messages
        self._select = select
        self._window: HistoryWindow | None = None

    def explain(self) -> SelectionReport:
        """The selection's report (see :meth:`HistoryWindow.explain`)."""
        window = self._window
        if window is None:
            window = self._select()
            if window.messages != self.messages:
                raise CupelError(
                    f"{OWNER}: the window selected from the history's mapping differs from "
                    "the one get() returned"
                )
            self._window = window
        return window.explain()


_SETTINGS = operator.attrgetter(
    *("policy", "pipeline", "cache_stable", "embeddings"),  # the pipeline's
    *("tokenizer_fn", "image_tokens", "message_token_counter"),  # the counting's
)


@dataclass(slots=True, eq=False)
class Built:
    """What a memory's settings build: the ``pipeline`` (of ``policy``, ``pipeline``,
    ``cache_stable`` and ``embeddings``) and the ``counting`` (of ``tokenizer_fn``,
    ``image_tokens`` and ``message_token_counter``), with the settings they were built of
    (held, compared by identity: :meth:`of` builds again what a replaced setting changes)."""

    settings: tuple[object, ...]
    pipeline: Pipeline
    counting: Counting

    @staticmethod
    def of(previous: Built | None, memory: CupelChatMemory) -> Built:
        """``previous`` if ``memory``'s settings are those it was built of, else what they
        build (the pipeline or the counting of ``previous`` kept if its settings are)."""
        settings = _SETTINGS(memory)
        if previous is not None and all(map(operator.is_, settings, previous.settings)):
            return previous
        return Built(
            settings,
            previous.pipeline
            if previous is not None and all(map(operator.is_, settings[:4], previous.settings))
            else pipeline_of(*settings[:4]),
            counting_for(None if previous is None else previous.counting, *settings[4:]),
        )


def pipeline_of(
    policy: str | Policy,
    pipeline: Pipeline | None,
    cache_stable: bool | float,
    embeddings: object = None,
    owner: str = OWNER,
) -> Pipeline:
    """The pipeline a memory selects with: ``pipeline`` or ``policy``'s, cache-stable
    under ``cache_stable``, its relevance scored by meaning too with ``embeddings`` (a
    LlamaIndex ``BaseEmbedding``; a policy without relevance raises
    :class:`~cupel.ConfigurationError`)."""
    low_water = check_cache_stable(cache_stable, f"{owner}.cache_stable")
    built = cache_stable_pipeline(
        resolve_pipeline(policy, owner=owner, pipelines=False, pipeline=pipeline), low_water
    )
    if embeddings is None:
        return built
    try:
        return built.with_embedder(embedder_of(embeddings, owner))
    except ConfigurationError as exc:
        raise ConfigurationError(f"{owner}: {exc}", field="embeddings", value=embeddings) from None


@lru_cache(maxsize=64)
def _budget(limit: int, reserve: int) -> ContextBudget:
    """The budget of ``limit`` tokens (max and target) less ``reserve`` (its
    ``output_reserve``, at most ``limit``), cached: it costs more than a small selection."""
    return ContextBudget(max_tokens=limit, target_tokens=limit, output_reserve=min(limit, reserve))


class Chosen(NamedTuple):
    """What :func:`choose` selected: the ``messages``, the ``selection`` whose
    ``explain()`` gives the report (built with it, or when first asked for) and the
    cache-stable ``window`` (else ``None``)."""

    messages: list[ChatMessage]
    selection: HistoryWindow | _Deferred
    window: HistoryWindow | None


def fitted_mapping(
    mapping: MessageMapping, budget: ContextBudget, counting: Counting
) -> MessageMapping:
    """``mapping``, or the mapping of its messages with cut copies of the units too large
    for any window (``truncate_oversized``: :mod:`cupel_llamaindex._oversized`)."""
    pin_system, pin_last_user, _ = mapping.history.keeps
    fitted = mapping.history.fitted(
        mapping.messages,
        budget,
        lambda unit: sum(map(counting.message, unit)),
        counting.count_text or estimate_tokens,
        PARTS,
    )
    if fitted is None:
        return mapping
    listed, cuts = fitted
    return map_read(
        read_messages(listed),
        counting=counting,
        pin_system=pin_system,
        pin_last_user=pin_last_user,
        cuts=cuts,
    )


def choose(
    memory: CupelChatMemory,
    history: Sequence[ChatMessage],
    input: str | None,
    initial_token_count: int,
    listening: bool,
    built: Built,
) -> Chosen:
    """``memory``'s selection from ``history`` with what its settings ``built``
    (``CupelChatMemory.get``): a history without tool calls under a plain recency-window
    pipeline, without a report, from its roles and counts
    (:func:`~cupel.conversation.tool_free_window`; mapped for the report when first read);
    any other mapped and selected (:meth:`~cupel.conversation.HistoryItems.select`)."""
    token_limit = memory.token_limit
    if (
        isinstance(initial_token_count, bool)
        or not isinstance(initial_token_count, int)
        or not 0 <= initial_token_count <= token_limit
    ):
        raise ConfigurationError(
            f"{OWNER}.get: initial_token_count must be an int between 0 and "
            f"token_limit ({token_limit}), got {initial_token_count!r}",
            field="initial_token_count",
            value=initial_token_count,
        )
    limit = token_limit - initial_token_count
    budget = _budget(limit, request_reserve(token_limit, memory.headroom, memory.agent_reserve))
    pipeline = built.pipeline
    counting = built.counting
    read = read_messages(history)
    counts = counting.counts(read)
    pin_system, pin_last_user = memory.pin_system, memory.pin_last_user
    start_on = _START_ON_USER if memory.start_on_user else _START_ON_NONE
    stable = memory.cache_stable is not False

    def select(mapping: MessageMapping, with_report: bool) -> HistoryWindow:
        return mapping.history.select(
            pipeline, budget, with_report=with_report, start_on=start_on, options=PINNED_OPTIONS
        )

    def mapped() -> MessageMapping:
        return map_read(
            read,
            counting=counting,
            pin_system=pin_system,
            pin_last_user=pin_last_user,
            counts=counts,
        )

    if not (stable or listening or memory.truncate_oversized or read.calls):
        indices = tool_free_window(
            read_roles(read),
            counts,
            pipeline,
            budget,
            keep_system=pin_system,
            keep_latest_user=pin_last_user,
            start_on=start_on,
        )
        if indices is not None:
            messages = read.messages
            deferred = _Deferred(indices, lambda: select(mapped(), False))
            return Chosen([messages[i] for i in indices], deferred, None)
    mapping = mapped()
    if memory.truncate_oversized:
        mapping = fitted_mapping(mapping, budget, counting)
    # A report costs about as much as the selection itself: build it now only for an
    # instrumentation handler; otherwise on the first read of last_report.
    window = select(mapping, listening)
    messages = mapping.messages
    chosen = [messages[i] for i in window.messages]
    kept = window if stable else None
    if window.report is not None:
        available = max(0, limit - budget.output_reserve)
        dispatcher.event(
            CupelSelectionEvent(
                component=OWNER,
                report=window.report,
                max_tokens=available,
                target_tokens=available,
                candidates=len(history),
                selected=len(chosen),
                selected_tokens=window.tokens,
                query=input,
                **(stable_fields(kept) or {}),
            )
        )
    return Chosen(chosen, window, kept)
