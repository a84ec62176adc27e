"""CupelChatMemory's selection (:func:`choose`) and what a memory keeps between calls
(:class:`Caches`): the pipeline, budgets, token counts, the last read and its mapping, and
the last plain window (recalled while the history reads the same)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from llama_index.core.base.llms.types import ChatMessage

from cupel import ConfigurationError, ContextBudget, CupelError, Pipeline, SelectionReport
from cupel.conversation import (
    USER,
    HistoryWindow,
    PinnedOptions,
    cache_stable_pipeline,
    check_cache_stable,
    plain_key,
    tool_free_window,
)
from cupel.counting import estimate_tokens
from cupel.policy import Policy, resolve_pipeline
from cupel_llamaindex._common import (
    emit_selection,
    request_reserve,
    stable_fields,
)
from cupel_llamaindex._mapping import MessageMapping, map_read
from cupel_llamaindex._oversized import PARTS
from cupel_llamaindex._reading import (
    Counting,
    MessageCounter,
    MessageRead,
    RoleCounts,
    TokenCache,
    counting_for,
    read_messages,
)

__all__ = ["OWNER", "PINNED_OPTIONS", "Caches", "Explains", "MemorySettings", "choose"]

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


class Explains(Protocol):
    """A selected window whose report is built when first asked for."""

    def explain(self) -> SelectionReport: ...


_Config = tuple[Counting, bool, bool]
"""What a mapping depends on besides the messages: the counting (``tokenizer_fn``,
``image_tokens``, ``message_token_counter``), ``pin_system`` and ``pin_last_user``."""


class _Recall:
    """A memory's last read under ``config`` and its mapping (made when first needed: a
    tool-free history under a plain pipeline is selected without one). The last plain
    window chosen from it is :attr:`Caches.last` (not here: a deferred window refers to
    its recall, and a cycle would leave every chat turn's objects to the garbage
    collector)."""

    __slots__ = ("config", "mapping", "read")

    def __init__(self, read: MessageRead, config: _Config) -> None:
        self.read = read
        self.config = config
        self.mapping: MessageMapping | None = None

    def mapping_for(self, cache: TokenCache) -> MessageMapping:
        """The mapping of the read (made once)."""
        mapping = self.mapping
        if mapping is None:
            config = self.config
            mapping = self.mapping = map_read(
                self.read,
                counting=config[0],
                pin_system=config[1],
                pin_last_user=config[2],
                cache=cache,
            )
        return mapping


class _Deferred:
    """A window selected from the messages' roles and counts alone
    (:func:`~cupel.conversation.tool_free_window`): its report is that of the same
    selection made on the history's mapping, made when first asked for — and checked to
    pick the very same messages (else :class:`~cupel.CupelError`)."""

    __slots__ = ("_args", "_window", "messages")

    def __init__(
        self,
        messages: list[int],
        recall: _Recall,
        cache: TokenCache,
        pipeline: Pipeline,
        budget: ContextBudget,
        start_on: frozenset[str],
    ) -> None:
        self.messages = messages
        self._args = (recall, cache, pipeline, budget, start_on)
        self._window: HistoryWindow | None = None

    def explain(self) -> SelectionReport:
        """The selection's report (see :meth:`HistoryWindow.explain`)."""
        window = self._window
        if window is None:
            recall, cache, pipeline, budget, start_on = self._args
            window = recall.mapping_for(cache).history.select(
                pipeline,
                budget,
                with_report=False,
                start_on=start_on,
                options=PINNED_OPTIONS,
            )
            if window.messages != self.messages:
                raise CupelError(
                    f"{OWNER}: the window selected from the history's mapping differs from "
                    "the one get() returned"
                )
            self._window = window
        return window.explain()


class Caches:
    """What a memory keeps between calls (one private attribute, read once per call: a
    pydantic private attribute costs a Python-level ``__getattr__`` per read): the
    pipeline built from ``policy`` / ``pipeline`` / ``cache_stable``, the counting built
    from ``tokenizer_fn`` / ``image_tokens`` / ``message_token_counter``, budgets by
    limit and reserve, token counts, the last read's roles and counts
    (:class:`RoleCounts`), the last read and mapping (:class:`_Recall`) and, in
    ``last``, the last plain window chosen from it: ``(recall, key, window, its
    messages)`` (one tuple, replaced whole, so that a concurrent call never pairs one
    call's key with another's window). Every entry is keyed by what it depends on, so a
    copy of the memory sharing it stays correct."""

    __slots__ = (
        "_budgets",
        "_built_from",
        "_counting",
        "_pipeline",
        "columns",
        "last",
        "recall",
        "token_cache",
    )

    def __init__(self) -> None:
        self._built_from: tuple[object, object, object] | None = None
        self._pipeline: Pipeline | None = None
        self._budgets: dict[tuple[int, int], ContextBudget] = {}
        self._counting: Counting | None = None
        self.token_cache = TokenCache()
        self.columns = RoleCounts()
        self.recall: _Recall | None = None
        self.last: tuple[_Recall, tuple[object, ...], Explains, tuple[ChatMessage, ...]] | None = (
            None
        )

    def pipeline_for(
        self, policy: str | Policy, pipeline: Pipeline | None, cache_stable: bool | float
    ) -> Pipeline:
        """The pipeline of these settings (built again when one of them changed)."""
        built = self._built_from
        current = self._pipeline
        if (
            current is None
            or built is None
            or built[0] is not policy
            or built[1] is not pipeline
            or built[2] != cache_stable
        ):
            low_water = check_cache_stable(cache_stable, f"{OWNER}.cache_stable")
            resolved = resolve_pipeline(policy, owner=OWNER, pipelines=False, pipeline=pipeline)
            current = cache_stable_pipeline(resolved, low_water)
            self._pipeline = current
            self._built_from = (policy, pipeline, cache_stable)
        return current

    def counting_for(
        self,
        tokenizer_fn: object,
        image_tokens: object,
        message_token_counter: MessageCounter | None,
    ) -> Counting:
        """The counting of these settings (built again when one of them changed)."""
        counting = counting_for(self._counting, tokenizer_fn, image_tokens, message_token_counter)
        self._counting = counting
        return counting

    def budget(self, limit: int, reserve: int) -> ContextBudget:
        """The budget of ``limit`` tokens (max and target) less ``reserve`` (its
        ``output_reserve``, at most ``limit``)."""
        key = (limit, reserve)
        budget = self._budgets.get(key)
        if budget is None:
            budget = ContextBudget(
                max_tokens=limit, target_tokens=limit, output_reserve=min(limit, reserve)
            )
            if len(self._budgets) > 64:
                self._budgets.clear()
            self._budgets[key] = budget
        return budget


class MemorySettings(Protocol):
    """What :func:`choose` reads of a ``CupelChatMemory``."""

    token_limit: int
    tokenizer_fn: Any
    message_token_counter: MessageCounter | None
    image_tokens: Any
    headroom: float
    agent_reserve: int
    truncate_oversized: bool
    pin_system: bool
    pin_last_user: bool
    start_on_user: bool
    cache_stable: bool | float
    policy: str | Policy
    pipeline: Pipeline | None
    __pydantic_private__: dict[str, Any] | None


def fitted_mapping(
    mapping: MessageMapping, budget: ContextBudget, config: _Config, cache: TokenCache
) -> MessageMapping:
    """``mapping``, or the mapping of its messages with cut copies of the units too large
    for any window (``truncate_oversized``: :mod:`cupel_llamaindex._oversized`)."""
    counting = config[0]
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
        pin_system=config[1],
        pin_last_user=config[2],
        cache=cache,
        cuts=cuts,
    )


def choose(
    memory: MemorySettings,
    history: Sequence[ChatMessage],
    input: str | None,
    initial_token_count: int,
    listening: bool,
) -> list[ChatMessage]:
    """``memory``'s selection from ``history`` (``CupelChatMemory.get``).

    The memory remembers its last mapping and, for a plain recency window chosen
    without a report, its last window: a call that reads the very same message
    objects with the same roles, texts and tool-call links (so a message edited in
    place or an appended one is seen), under the same settings, budget and pipeline
    (:func:`~cupel.conversation.plain_key`), returns that window again. Otherwise a
    history without tool calls or results under a plain pipeline is selected from its
    roles and counts (:func:`~cupel.conversation.tool_free_window`; those of the messages
    shared with the last read are reused, :class:`~cupel_llamaindex._reading.RoleCounts`),
    without a mapping; the report is then made from the mapping when first read.
    """
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
    reserve = request_reserve(token_limit, memory.headroom, memory.agent_reserve)
    private: dict[str, Any] = memory.__pydantic_private__  # type: ignore[assignment]
    caches: Caches = private["_caches"]
    read = read_messages(history)
    config: _Config = (
        caches.counting_for(memory.tokenizer_fn, memory.image_tokens, memory.message_token_counter),
        memory.pin_system,
        memory.pin_last_user,
    )
    recall = caches.recall
    if recall is None or recall.config != config or not recall.read.same(read):
        recall = caches.recall = _Recall(read, config)
    pipeline = caches.pipeline_for(memory.policy, memory.pipeline, memory.cache_stable)
    start_on_user = memory.start_on_user
    start_on = _START_ON_USER if start_on_user else _START_ON_NONE
    stable = memory.cache_stable is not False
    key: tuple[object, ...] | None = None
    if not stable and not listening and not memory.truncate_oversized:
        key = (limit, reserve, start_on_user, *plain_key(pipeline))
        last = caches.last
        if last is not None and last[0] is recall and last[1] == key:  # the last call's
            private["_last_window"] = None
            private["_last_report"] = None
            private["_pending_report"] = last[2]
            return list(last[3])
        if not read.calls:  # no tool calls: maybe a plain window of roles and counts
            budget = caches.budget(limit, reserve)
            roles, counts = caches.columns.of(read, config[0], caches.token_cache)
            indices = tool_free_window(
                roles,
                counts,
                pipeline,
                budget,
                keep_system=config[1],
                keep_latest_user=config[2],
                start_on=start_on,
            )
            if indices is not None:
                messages = read.messages
                chosen = [messages[i] for i in indices]
                deferred = _Deferred(
                    indices, recall, caches.token_cache, pipeline, budget, start_on
                )
                caches.last = (recall, key, deferred, tuple(chosen))
                private["_last_window"] = None
                private["_last_report"] = None
                private["_pending_report"] = deferred
                return chosen
    mapping = recall.mapping_for(caches.token_cache)
    budget = caches.budget(limit, reserve)
    if memory.truncate_oversized:
        mapping = fitted_mapping(mapping, budget, config, caches.token_cache)
    # A report costs about as much as the selection itself: build it now only for an
    # instrumentation handler; otherwise on the first read of last_report.
    window = mapping.history.select(
        pipeline,
        budget,
        with_report=listening,
        start_on=start_on,
        options=PINNED_OPTIONS,
    )
    messages = mapping.messages
    chosen = [messages[i] for i in window.messages]
    caches.last = (recall, key, window, tuple(chosen)) if key is not None and window.plain else None
    private["_last_window"] = window if stable else None
    if window.report is None:
        private["_last_report"] = None
        private["_pending_report"] = window
        return chosen
    private["_last_report"] = window.report
    private["_pending_report"] = None
    available = max(0, limit - budget.output_reserve)
    emit_selection(
        OWNER,
        window.report,
        max_tokens=available,
        target_tokens=available,
        candidates=len(history),
        selected=len(chosen),
        selected_tokens=window.tokens,
        query=input,
        stable=stable_fields(window if stable else None),
    )
    return chosen
