"""CupelMemory: LlamaIndex's current memory API (``llama_index.core.memory.Memory``) with
cupel choosing what ``get()`` returns — the chat history window and the memory blocks —
under one budget, with a report."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math
import warnings
from typing import Any, cast

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, PrivateAttr, model_validator

from cupel import (
    ChronologicalPlacer,
    ContextBudget,
    ContextItem,
    GreedySlice,
    Pipeline,
    PriorityScorer,
    RecencyWindowSlice,
    SelectionReport,
)
from cupel.conversation import USER, HistoryWindow, PinnedOptions, stable_cut
from cupel.counting import MESSAGE_TOKENS, ImageTokens
from cupel.policy import Policy
from cupel_llamaindex._common import (
    MAX_TOKEN_LIMIT,
    CupelSelectionEvent,
    WindowFields,
    built_report,
    check_fraction,
    check_int,
    dispatcher,
    request_reserve,
    stable_fields,
    tokenizer_field,
)
from cupel_llamaindex._content import read_blocks
from cupel_llamaindex._mapping import MessageMapping, map_read
from cupel_llamaindex._memory_selection import fitted_mapping, pipeline_of
from cupel_llamaindex._reading import Counting, counting_for, read_messages

__all__ = ["MEMORY_BLOCK_KEY", "CupelMemory"]

_OWNER = "CupelMemory"
MEMORY_BLOCK_KEY = "llamaindex_memory_block"
"""Item metadata key naming the memory block an item stands for."""

_SYSTEM_ROLES = frozenset({"system", "developer"})
_OPTIONS = PinnedOptions(
    system="pin_system=False",
    latest_user="pin_last_user=False",
    last=None,
    budget="token_limit less the memory blocks, the reply's 3 tokens, headroom and agent_reserve",
)
# Memory blocks compete by priority (LlamaIndex's rule: higher first); priority 0 is pinned.
_BLOCKS = Pipeline(PriorityScorer(), GreedySlice(), ChronologicalPlacer())


class CupelMemory(WindowFields, Memory):
    """``llama_index.core.memory.Memory`` whose ``get()`` / ``aget()`` is chosen by cupel.

    Storage is ``Memory``'s own: the SQL chat store (``SQLAlchemyChatStore``, in-memory
    SQLite by default), ``session_id``, ``memory_blocks`` and their template and
    ``insert_method``. Once the history passes what ``get()`` may send (with blocks: its
    ``chat_history_token_ratio``), ``put()`` flushes to the memory blocks only the
    messages before the window ``get()`` would select — never a system message (read back,
    pinned), the current turn or half a tool call. Everything is worked out from the stored
    session on every call, so any number of objects over one session give the same
    windows. ``cache_stable`` keeps the window append-only between cuts, the cut replayed
    from the stored history; the flush then archives only whole turns the replay no longer
    needs, so the windows are those of the whole conversation (:attr:`last_stable`).

    **Counting** as ``CupelChatMemory`` counts, as providers bill a request (``Memory``'s
    flat ``*_token_size_estimate`` fields are not used); a memory block costs its rendering
    in ``memory_blocks_template`` plus 3 for the message it may create. The window and the
    blocks fit ``token_limit`` less the reply's 3 tokens, ``headroom`` and ``agent_reserve``
    (see ``CupelChatMemory``). The selection, under that one budget:

    * the **history** window follows cupel's default window rule (``policy``, default
      ``"chat"``): system messages and the latest user message pinned, then whole units
      from the newest backwards — no holes, tool calls kept with their results, never a
      window of tool messages only; units providers would reject are left out;
    * the **memory blocks** are items of kind ``Memory`` (priority = the block's
      ``priority``; ``priority=0`` blocks are always kept, as ``Memory`` never truncates
      them). Blocks that need room get up to ``(1 - chat_history_token_ratio)`` of the
      budget before the history window is chosen, then whatever the window left; higher
      priorities first, a block whole or not at all (``Memory`` truncates instead).

    :attr:`last_report` is one :class:`~cupel.SelectionReport` for both (blocks carry
    ``metadata["llamaindex_memory_block"]``); a
    :class:`~cupel_llamaindex.CupelSelectionEvent` is dispatched on every ``get()``.

    >>> from llama_index.core.memory import StaticMemoryBlock
    >>> memory = CupelMemory.from_defaults(
    ...     token_limit=65, tokenizer_fn=str.split,
    ...     memory_blocks=[StaticMemoryBlock(name="profile", static_content="fact " * 15,
    ...                                      priority=0)])
    >>> memory.put_messages([
    ...     ChatMessage(role="user", content="a b c d e f g h"),
    ...     ChatMessage(role="assistant", content="i j k l m n o p"),
    ...     ChatMessage(role="user", content="q r s t u v w x"),
    ...     ChatMessage(role="assistant", content="y z"),
    ...     ChatMessage(role="user", content="next?")])
    >>> [(m.role.value, m.content[:8]) for m in memory.get()]  # turn 1 no longer fits
    [('system', '<memory>'), ('user', 'q r s t '), ('assistant', 'y z'), ('user', 'next?')]
    >>> [e.reason.name for e in memory.last_report.excluded]
    ['OutsideWindow', 'OutsideWindow']
    >>> memory.last_report.included[-1].item.tokens  # the block: 15 words, 4 tags, 3
    22
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    tokenizer_fn: Any = tokenizer_field()

    _counting: Counting | None = PrivateAttr(default=None)
    _last_report: SelectionReport | None = PrivateAttr(default=None)
    _last_window: HistoryWindow | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._history_pipeline()  # a bad policy fails here, not at the first get()

    def __setattr__(self, name: str, value: Any) -> None:
        """Fields are validated at assignment; a bad value leaves the field unchanged."""
        rebuilds = name in ("policy", "pipeline", "cache_stable", "embeddings")
        self._assign(name, value, self._history_pipeline if rebuilds else None)

    @classmethod
    def class_name(cls) -> str:
        """Serialization id."""
        return "CupelMemory"

    @model_validator(mode="before")
    @classmethod
    def _check_limits(cls, data: Any) -> Any:
        """``token_limit`` and ``chat_history_token_ratio``, before ``Memory``'s own
        check compares them (a TypeError, or a message holding every field)."""
        if isinstance(data, dict):
            cls._check_limit_values(data, required=True)
        return data

    @staticmethod
    def _check_limit_values(data: dict[str, Any], *, required: bool) -> None:
        if required or "token_limit" in data:
            limit = data.get("token_limit")
            check_int(_OWNER, "token_limit", limit, minimum=1, maximum=MAX_TOKEN_LIMIT)
        if "chat_history_token_ratio" in data:
            check_fraction(_OWNER, "chat_history_token_ratio", data["chat_history_token_ratio"])

    def __reduce__(self) -> tuple[Any, ...]:
        """``pickle`` and ``copy.deepcopy``: the configuration plus the chat store as
        ``SQLAlchemyChatStore.dump_store()`` gives it — the same database for a database
        URI, a copy of the rows for the in-memory default (``Memory`` itself cannot be
        deep-copied once its store is open, and pickling drops the store)."""
        fields = {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name not in ("sql_store", "tokenizer_fn")
        }
        tokenizer = None if self.tokenizer_fn is get_tokenizer() else self.tokenizer_fn
        store = self.sql_store
        if isinstance(store, SQLAlchemyChatStore):
            return (_restore, (type(self), fields, tokenizer, store.dump_store(), None))
        return (_restore, (type(self), fields, tokenizer, None, store))

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> CupelMemory:
        restore, args = self.__reduce__()
        return restore(*copy.deepcopy(args, memo))  # type: ignore[no-any-return]

    @classmethod
    def from_defaults(
        cls,
        *args: Any,
        policy: str | Policy = "chat",
        pipeline: Pipeline | None = None,
        pin_system: bool = True,
        pin_last_user: bool = True,
        start_on_user: bool = True,
        cache_stable: bool | float = False,
        image_tokens: ImageTokens = "max",
        headroom: float = 0.0,
        agent_reserve: int = 0,
        truncate_oversized: bool = False,
        embeddings: Any = None,
        **kwargs: Any,
    ) -> CupelMemory:
        """``Memory.from_defaults`` (session, chat store, blocks, limits) plus cupel's
        options."""
        tokenizer_fn = kwargs.pop("tokenizer_fn", None)
        cls._check_limit_values(kwargs, required=False)  # before Memory.from_defaults reads them
        memory = super().from_defaults(*args, **kwargs)
        fields = {name: getattr(memory, name) for name in Memory.model_fields}
        fields["tokenizer_fn"] = tokenizer_fn  # any counter form (Memory takes callables)
        return cls(
            **fields,
            policy=policy,
            pipeline=pipeline,
            pin_system=pin_system,
            pin_last_user=pin_last_user,
            start_on_user=start_on_user,
            cache_stable=cache_stable,
            image_tokens=image_tokens,
            headroom=headroom,
            agent_reserve=agent_reserve,
            truncate_oversized=truncate_oversized,
            embeddings=embeddings,
        )

    def _history_pipeline(self) -> Pipeline:
        return pipeline_of(
            self.policy, self.pipeline, self.cache_stable, self.embeddings, owner=_OWNER
        )

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest ``get()``: the history window and the memory blocks."""
        return self._last_report

    @property
    def last_stable(self) -> dict[str, Any] | None:
        """With ``cache_stable`` on, the latest ``get()``'s ``stable_prefix`` (how many
        leading history messages are those of the previous request's window: that of the
        history before its newest assistant message, replayed from the store),
        ``cut_moved`` (that window is no longer a prefix of this one) and ``cut`` (where
        the window's stretch starts) — the same on every object; ``None`` otherwise or
        before the first ``get()``."""
        return stable_fields(self._last_window)

    def forget(self) -> None:
        """Deprecated, does nothing: the memory keeps nothing per session (the windows,
        the flush and the archived system messages are read from the store on every
        call); removed in 1.0."""
        warnings.warn(
            f"{_OWNER}.forget() is deprecated and does nothing: nothing is kept per "
            "session, every call reads the store (it will be removed in 1.0)",
            DeprecationWarning,
            stacklevel=2,
        )

    # -- the history: counted, flushed and read back the cupel way -----------------------
    def _count(self) -> Counting:
        """The counting of the current ``tokenizer_fn`` and ``image_tokens``."""
        counting = counting_for(self._counting, self.tokenizer_fn, self.image_tokens, None)
        self._counting = counting
        return counting

    def _estimate_token_count(self, message_or_blocks: Any) -> int:
        """``Memory``'s estimate of a text, a message, messages or content blocks, the cupel
        way (:class:`~cupel_llamaindex._reading.Counting`; no flat media sizes)."""
        counting = self._count()
        if isinstance(message_or_blocks, str):
            return counting.text_tokens(message_or_blocks)
        if isinstance(message_or_blocks, ChatMessage):
            return counting.message(message_or_blocks)
        items = list(message_or_blocks)
        if all(isinstance(item, ChatMessage) for item in items):
            return sum(map(counting.message, items))
        texts, media = read_blocks(ChatMessage(role="user", blocks=items))
        return counting.text_tokens(tuple(texts)) + counting.media_tokens(media)

    def _mapping(self, history: list[ChatMessage], counting: Counting) -> MessageMapping:
        return map_read(
            read_messages(history),
            counting=counting,
            pin_system=self.pin_system,
            pin_last_user=self.pin_last_user,
        )

    def _block_tokens(self, name: str, content: Any, counting: Counting) -> int:
        """What a memory block adds to the request: chat messages as messages; other
        content as its rendering alone in ``memory_blocks_template`` plus 3 for the message
        it may create (never less than its share of several blocks rendered together)."""
        if isinstance(content, list) and content and isinstance(content[0], ChatMessage):
            return sum(map(counting.message, content))
        blocks = [TextBlock(text=content)] if isinstance(content, str) else list(content)
        rendered = self.memory_blocks_template.format_messages(memory_blocks=[(name, blocks)])
        return sum(map(counting.message, rendered)) if rendered else MESSAGE_TOKENS

    def _reserve(self) -> int:
        """What ``token_limit`` keeps free besides the memory: the reply, ``headroom``
        and ``agent_reserve``."""
        return request_reserve(self.token_limit, self.headroom, self.agent_reserve)

    async def _archived_system(self) -> list[ChatMessage]:
        """The system messages flushed from this session, read from the store on every call
        (another object may have flushed since): they lead the history, pinned (none
        without ``pin_system``: the flush then hands them to the memory blocks)."""
        if not self.pin_system:
            return []
        archived = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ARCHIVED)
        return [m for m in archived if m.role.value in _SYSTEM_ROLES]

    def _flush_budget(self) -> int:
        """What the history may hold before ``put()`` flushes: ``token_limit`` (with memory
        blocks, its ``chat_history_token_ratio``) less the reserves."""
        limit = self.token_limit
        if self.memory_blocks:
            limit = math.ceil(limit * self.chat_history_token_ratio)
        return max(0, limit - self._reserve())

    def _history_budget(self) -> ContextBudget:
        """The flush budget as a budget: what a cache-stable cut is replayed within, by
        the flush and by ``get()`` alike."""
        limit = self._flush_budget()
        return ContextBudget(max_tokens=limit, target_tokens=limit)

    def _fitted(
        self, mapping: MessageMapping, budget: ContextBudget, counting: Counting
    ) -> MessageMapping:
        """``mapping`` with cut copies of the messages too large for any window
        (``truncate_oversized``), else itself."""
        if not self.truncate_oversized:
            return mapping
        return fitted_mapping(mapping, budget, counting)

    async def _manage_queue(self) -> None:
        """The flush, recomputed from the store on every ``put()``: once the active history
        passes the flush budget, the messages before the window ``get()`` would select
        (which no later window can hold again) are archived and handed to the memory
        blocks. Never a system message, the current turn or half a tool call; cache-stable,
        only whole turns the replay no longer needs (:meth:`_stable_flush_end`)."""
        active = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        if not active:
            return
        limit = self._flush_budget()
        counting = self._count()
        if sum(counting.counts(read_messages(active))) <= limit:
            return
        system = await self._archived_system()
        history = [*system, *active]
        budget = self._history_budget()
        mapping = self._fitted(self._mapping(history, counting), budget, counting)
        if sum(mapping.history.pinned_tokens.values()) > limit:
            return  # the pinned messages alone overflow: get() says so, nothing is flushed
        pipeline = self._history_pipeline()
        if self.cache_stable is False:
            # before the window of the widest room get() can have (the blocks taking
            # nothing): a message any later window may show is never flushed
            widest = max(0, self.token_limit - self._reserve())
            room = ContextBudget(max_tokens=widest, target_tokens=widest)
            end = self._flush_end(history, len(system), mapping, pipeline, room)
        else:
            end = self._stable_flush_end(history, len(system), mapping, pipeline, counting)
        count = end - len(system)
        if count <= 0:
            return
        flushed = await self.sql_store.archive_oldest_messages(self.session_id, n=count)
        others = [m for m in flushed if m.role.value not in _SYSTEM_ROLES or not self.pin_system]
        if others and self.memory_blocks:
            await asyncio.gather(
                *[
                    block.aput(others, from_short_term_memory=True, session_id=self.session_id)
                    for block in self.memory_blocks
                ]
            )

    def _flush_end(
        self,
        history: list[ChatMessage],
        system: int,
        mapping: MessageMapping,
        pipeline: Pipeline,
        budget: ContextBudget,
    ) -> int:
        """Where the flush ends: the first non-system message of the window selected
        within ``budget`` (at the latest, the latest user message: never the current
        turn); ``system`` (nothing) for a window of system messages only."""
        window = mapping.history.select(
            pipeline,
            budget,
            with_report=False,
            start_on=frozenset({USER}) if self.start_on_user else frozenset(),
            options=_OPTIONS,
        )
        first = next(
            (
                i
                for i in window.messages
                if i >= system and history[i].role.value not in _SYSTEM_ROLES
            ),
            system,
        )
        latest_user = _latest_user(history, system, len(history) - 1)
        return first if latest_user is None else min(first, latest_user)

    def _stable_flush_end(
        self,
        history: list[ChatMessage],
        system: int,
        mapping: MessageMapping,
        pipeline: Pipeline,
        counting: Counting,
    ) -> int:
        """Where a cache-stable flush ends: at the start of the turn the replayed cut is
        in, or else of the turn the previous request's window starts in — the first after
        which the replay over the rest (flushed system messages in front, as :meth:`aget`
        reads them) finds the same cut and previous window, so every later window is the
        same. ``system`` (nothing) when neither does: a later ``put()`` tries again."""
        budget = self._history_budget()
        replay = _replayed(history, mapping, pipeline, budget, self.pin_system)
        cut, previous = replay
        ends = [_latest_user(history, system, min(cut, len(history) - 1))]
        first = next(
            (i for i in previous or () if history[i].role.value not in _SYSTEM_ROLES), None
        )
        if first is not None:
            ends.append(_latest_user(history, system, first))
        target = _messages(history, replay)
        for end in sorted({end for end in ends if end is not None and end > system}, reverse=True):
            kept = [
                *history[:system],
                *(
                    m
                    for m in history[system:end]
                    if self.pin_system and m.role.value in _SYSTEM_ROLES
                ),
                *history[end:],
            ]
            rest = self._fitted(self._mapping(kept, counting), budget, counting)
            if _messages(kept, _replayed(kept, rest, pipeline, budget, self.pin_system)) == target:
                return end
        return system

    @dispatcher.span
    async def aget(
        self, input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> list[ChatMessage]:
        """The history window and the chosen memory blocks, within ``token_limit`` less
        the reply's 3 tokens, ``headroom`` and ``agent_reserve``."""
        active = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        history = [*await self._archived_system(), *active]
        contents = await self._get_memory_blocks_content(active, input=input, **block_kwargs)
        blocks = [b for b in self.memory_blocks if b.name in contents]
        counting = self._count()
        items = [
            ContextItem(
                content=f"[memory block {block.name}] {_text(contents[block.name])}",
                tokens=self._block_tokens(block.name, contents[block.name], counting),
                kind="Memory",
                priority=block.priority,
                pinned=block.priority == 0,
                metadata={MEMORY_BLOCK_KEY: block.name},
            )
            for block in blocks
        ]
        limit = max(0, self.token_limit - self._reserve())
        always = sum(item.tokens for item in items if item.pinned)
        wanted = sum(item.tokens for item in items if not item.pinned)
        reserve = min(wanted, limit - math.ceil(limit * self.chat_history_token_ratio))
        mapping = self._mapping(history, counting)
        pinned_history = sum(mapping.history.pinned_tokens.values())
        room = max(limit - always - max(reserve, 0), min(pinned_history, limit - always))
        budget = ContextBudget(max_tokens=max(room, 0), target_tokens=max(room, 0))
        mapping = self._fitted(mapping, budget, counting)
        stable = self.cache_stable is not False
        window = mapping.history.select(
            self._history_pipeline(),
            budget,
            with_report=True,
            start_on=frozenset({USER}) if self.start_on_user else frozenset(),
            options=_OPTIONS,
            # the cut is replayed within the flush budget (as the flush replays it), the
            # window then selected within what the memory blocks leave
            earlier=((len(history), self._history_budget()),) if stable else (),
        )
        self._last_window = window if stable else None
        used = window.tokens
        left = limit - used
        chosen = _BLOCKS.dry_run(items, ContextBudget(max_tokens=left, target_tokens=left))
        report = _combined(built_report(_OWNER, window.report), built_report(_OWNER, chosen.report))
        self._last_report = report
        names = {item.metadata[MEMORY_BLOCK_KEY] for item in chosen.items}
        messages = [mapping.messages[i] for i in window.messages]
        dispatcher.event(
            CupelSelectionEvent(
                component=_OWNER,
                report=report,
                max_tokens=limit,
                target_tokens=limit,
                candidates=len(history) + len(items),
                selected=len(messages) + len(names),
                selected_tokens=used + chosen.total_tokens,
                query=input if isinstance(input, str) else None,
                **(stable_fields(self._last_window) or {}),
            )
        )
        kept = {name: content for name, content in contents.items() if name in names}
        data, block_messages = await self._format_memory_blocks(kept)
        memory_content = []
        if data:
            formatted = self.memory_blocks_template.format_messages(memory_blocks=data)
            memory_content = formatted[0].blocks if formatted else []
        # The memory goes into a copy of the system (or latest user) message: the history's
        # own message objects are never modified.
        targets = [m.model_copy() if m.role in ("system", "user") else m for m in messages]
        return self._insert_memory_content(targets, memory_content, block_messages)


def _latest_user(history: list[ChatMessage], start: int, end: int) -> int | None:
    """The index of the latest user message from ``start`` to ``end`` (inclusive)."""
    return next((i for i in range(end, start - 1, -1) if history[i].role.value == USER), None)


def _replayed(
    history: list[ChatMessage],
    mapping: MessageMapping,
    pipeline: Pipeline,
    budget: ContextBudget,
    pin_system: bool,
) -> tuple[int, tuple[int, ...] | None]:
    """The replayed cut of ``history`` (mapped as ``mapping``) within ``budget``
    (:func:`~cupel.conversation.stable_cut`): the index of the first message of the
    window's stretch that is not a pinned system message (``len(history)``: none), and
    the previous request's window (message indices; ``None``: no assistant message)."""
    columns = mapping.history
    slicer = cast(RecencyWindowSlice, pipeline.slicer)  # cache_stable_pipeline's window
    blocks = columns.block_key is not None and slicer.block_key == columns.block_key
    replay = stable_cut(
        columns,
        budget,
        cast(float, slicer.low_water),
        blocks=blocks,
        partial=slicer.partial_blocks,
    )
    cut = len(history)
    for position in range(replay.cut, len(columns.units)):
        index = columns.messages_at([position])[0]
        if not (pin_system and history[index].role.value in _SYSTEM_ROLES):
            cut = index
            break
    previous = None if replay.previous is None else tuple(columns.messages_at(replay.previous))
    return cut, previous


def _messages(
    history: list[ChatMessage], replay: tuple[int, tuple[int, ...] | None]
) -> tuple[int | None, tuple[int, ...] | None]:
    """A replay's cut and previous window as the identities of their messages (to compare
    two replays over different lists of the same message objects)."""
    cut, previous = replay
    return (
        id(history[cut]) if cut < len(history) else None,
        None if previous is None else tuple(id(history[i]) for i in previous),
    )


def _restore(
    cls: type[CupelMemory],
    fields: dict[str, Any],
    tokenizer: Any,
    store_dump: dict[str, Any] | None,
    store: Any,
) -> CupelMemory:
    """Rebuild a :class:`CupelMemory` from :meth:`CupelMemory.__reduce__`'s parts."""
    sql_store = SQLAlchemyChatStore(**store_dump) if store_dump is not None else store
    return cls(**fields, tokenizer_fn=tokenizer, sql_store=sql_store)


def _text(content: Any) -> str:
    """A memory block's content as text (a string, content blocks or chat messages)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, ChatMessage):
            parts.append(f"{part.role}: {part.content or ''}")
        elif isinstance(part, TextBlock):
            parts.append(part.text)
        else:
            parts.append(f"[{type(part).__name__}]")
    return "\n".join(parts)


def _combined(history: SelectionReport, blocks: SelectionReport) -> SelectionReport:
    """One report for the two selections: history first, then the blocks."""
    excluded = sorted([*history.excluded, *blocks.excluded], key=lambda e: -e.score)
    return dataclasses.replace(
        history,
        events=(*history.events, *blocks.events),
        included=(*history.included, *blocks.included),
        excluded=tuple(excluded),
        total_candidates=history.total_candidates + blocks.total_candidates,
        total_tokens_considered=history.total_tokens_considered + blocks.total_tokens_considered,
    )
