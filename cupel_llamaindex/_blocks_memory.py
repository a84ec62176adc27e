"""CupelMemory: LlamaIndex's current memory API (``llama_index.core.memory.Memory``) with
cupel choosing what ``get()`` returns — the chat history window and the memory blocks —
under one budget, with a report."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import math
import threading
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from cupel import (
    ChronologicalPlacer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    GreedySlice,
    Pipeline,
    PriorityScorer,
    SelectionReport,
)
from cupel.conversation import (
    DEFAULT_MAX_CONVERSATIONS,
    USER,
    HistoryWindow,
    PinnedOptions,
    StableWindow,
    cache_stable_pipeline,
    check_cache_stable,
)
from cupel.counting import MESSAGE_TOKENS, ImageTokens
from cupel.policy import Policy
from cupel_llamaindex._common import (
    MAX_TOKEN_LIMIT,
    WindowFields,
    built_report,
    check_fraction,
    check_int,
    dispatcher,
    emit_selection,
    raise_configuration_error,
    request_reserve,
    resolve_pipeline,
    stable_fields,
)
from cupel_llamaindex._content import read_blocks
from cupel_llamaindex._mapping import MessageMapping, map_read
from cupel_llamaindex._memory_selection import fitted_mapping
from cupel_llamaindex._reading import (
    Counting,
    TokenCache,
    counting_for,
    read_counts,
    read_messages,
)

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
    ``insert_method``. ``put()`` flushes to the memory blocks only the messages before
    the window ``get()`` would select once the history passes what ``get()`` may send
    (with blocks: its ``chat_history_token_ratio``) — never a system message (flushed
    ones are read back, pinned), the current turn or half a tool call. ``cache_stable``
    keeps the window append-only between cuts (per ``session_id``; :attr:`last_stable`).

    **Counting**, as ``CupelChatMemory`` (as providers bill a request): a message costs 3
    tokens, its text parts by ``tokenizer_fn`` (text, each tool call's name, JSON
    arguments and id, a tool result's call id) and its images, audio, video and
    documents by ``image_tokens`` and :func:`~cupel.counting.media_pricer`'s rules
    (``Memory``'s flat ``*_token_size_estimate`` fields are not used); a memory block
    costs its rendering in ``memory_blocks_template`` plus 3 for the message it may
    create. The window and the blocks fit ``token_limit`` less the reply's 3 tokens,
    ``headroom`` (a share of ``token_limit``) and ``agent_reserve`` (tokens kept free for
    a workflow agent's system prompt and current tool rounds, which it sends besides the
    memory: see ``CupelChatMemory``). The selection, under that one budget:

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

    tokenizer_fn: Any = Field(
        default_factory=get_tokenizer,
        exclude=True,
        description=(
            "The text counter: LlamaIndex's text -> tokens convention, a text -> int "
            "callable, a tiktoken Encoding or a HuggingFace tokenizer."
        ),
    )

    _counting: Counting | None = PrivateAttr(default=None)
    _token_cache: TokenCache = PrivateAttr(default_factory=TokenCache)
    _last_report: SelectionReport | None = PrivateAttr(default=None)
    _last_window: HistoryWindow | None = PrivateAttr(default=None)
    _sessions: dict[str, _Session] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise_configuration_error(exc, _OWNER, type(self).model_fields)
        self._history_pipeline()  # a bad policy fails here, not at the first get()

    def __setattr__(self, name: str, value: Any) -> None:
        """Fields are validated at assignment; a bad value leaves the field unchanged."""
        previous = self.__dict__.get(name)
        try:
            super().__setattr__(name, value)
            if name in ("policy", "pipeline", "cache_stable"):
                self._history_pipeline()
        except (ValidationError, ConfigurationError) as exc:
            if name in type(self).model_fields:
                self.__dict__[name] = previous
            if isinstance(exc, ValidationError):
                raise_configuration_error(exc, _OWNER, type(self).model_fields)
            raise

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
        )

    def _history_pipeline(self, *, stable: bool = True) -> Pipeline:
        pipeline = resolve_pipeline(_OWNER, self.policy, self.pipeline)
        if not stable:
            return pipeline
        low_water = check_cache_stable(self.cache_stable, f"{_OWNER}.cache_stable")
        return cache_stable_pipeline(pipeline, low_water)

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest ``get()``: the history window and the memory blocks."""
        return self._last_report

    @property
    def last_stable(self) -> dict[str, Any] | None:
        """With ``cache_stable`` on, the latest ``get()``'s ``stable_prefix`` (how many
        leading history messages equal the previous window's), ``cut_moved`` (this call
        moved the cut) and ``cut`` (where the window's stretch of the history starts);
        ``None`` otherwise or before the first ``get()``."""
        return stable_fields(self._last_window)

    def forget(self) -> None:
        """Drop what this memory remembers of its sessions' previous windows (and of
        their flushed system messages, read back from the store at the next ``get()``)."""
        with self._lock:
            self._sessions.clear()

    # -- the history: counted, flushed and read back the cupel way -----------------------
    def _count(self) -> Counting:
        """The counting of the current ``tokenizer_fn`` and ``image_tokens``."""
        counting = counting_for(self._counting, self.tokenizer_fn, self.image_tokens, None)
        self._counting = counting
        return counting

    def _message_tokens(self, message: ChatMessage) -> int:
        """What a message costs (:class:`~cupel_llamaindex._reading.Counting`): 3 + its
        text parts (text, tool calls' names, arguments and ids, a result's call id) by
        ``tokenizer_fn`` + its images and other media by ``image_tokens``."""
        return self._count().message(message)

    def _estimate_token_count(self, message_or_blocks: Any) -> int:
        """``Memory``'s estimate, the cupel way: a text by ``tokenizer_fn``; a message or
        a list of messages as :meth:`_message_tokens`; content blocks by their text and
        media (``Memory``'s flat image, audio, video and document sizes are not used)."""
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
            cache=self._token_cache,
        )

    def _block_tokens(self, name: str, content: Any, counting: Counting) -> int:
        """What a memory block adds to the request: messages (a block returning chat
        messages) as messages; other content as its rendering alone in
        ``memory_blocks_template`` (its text, the template's tags, its media by rule)
        plus 3 for the message it may create — never less than its share of the
        rendering of several blocks together."""
        if isinstance(content, list) and content and isinstance(content[0], ChatMessage):
            return sum(map(counting.message, content))
        blocks = [TextBlock(text=content)] if isinstance(content, str) else list(content)
        rendered = self.memory_blocks_template.format_messages(memory_blocks=[(name, blocks)])
        return sum(map(counting.message, rendered)) if rendered else MESSAGE_TOKENS

    def _reserve(self) -> int:
        """What ``token_limit`` keeps free besides the memory: the reply, ``headroom``
        and ``agent_reserve``."""
        return request_reserve(self.token_limit, self.headroom, self.agent_reserve)

    def _session(self) -> _Session:
        with self._lock:
            session = self._sessions.get(self.session_id)
            if session is None:
                while len(self._sessions) >= DEFAULT_MAX_CONVERSATIONS:
                    self._sessions.pop(next(iter(self._sessions)))
                session = self._sessions[self.session_id] = _Session()
            return session

    async def _flushed_system(self, session: _Session) -> list[ChatMessage]:
        """The system messages flushed from this session (kept in the window: they are
        pinned), read from the store's archive once, then kept up to date by the flush."""
        if session.flushed_system is None:
            archived = await self.sql_store.get_messages(
                self.session_id, status=MessageStatus.ARCHIVED
            )
            session.flushed_system = [m for m in archived if m.role.value in _SYSTEM_ROLES]
        return session.flushed_system

    def _flush_budget(self) -> int:
        """What the history may hold before ``put()`` flushes: ``token_limit`` less the
        reserves without memory blocks, else its ``chat_history_token_ratio`` less the
        reserves (the blocks' share is theirs)."""
        limit = self.token_limit
        if self.memory_blocks:
            limit = math.ceil(limit * self.chat_history_token_ratio)
        return max(0, limit - self._reserve())

    async def _manage_queue(self) -> None:
        """The flush, by cupel's window: once the stored history passes the flush budget,
        the messages before the window ``get()`` would select within that budget — which
        no later window can hold again — are archived and handed to the memory blocks (as
        ``Memory`` does with its oldest messages). The window's own messages, system
        messages (pinned: read back from the archive) and the current turn are never
        flushed; units are never split."""
        active = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        if not active:
            return
        limit = self._flush_budget()
        counting = self._count()
        if sum(read_counts(read_messages(active), counting, self._token_cache)) <= limit:
            return
        session = self._session()
        system = await self._flushed_system(session) if self.pin_system else []
        history = [*system, *active]
        mapping = self._mapping(history, counting)
        if sum(mapping.history.pinned_tokens.values()) > limit:
            return  # the pinned messages alone overflow: get() says so, nothing is flushed
        # The window get() would select within the flush budget (cache-stable: after the
        # previous window, refilled to the low-water mark on overflow).
        stable = self.cache_stable is not False
        window = mapping.history.select(
            self._history_pipeline(stable=stable),
            ContextBudget(max_tokens=limit, target_tokens=limit),
            with_report=False,
            start_on=frozenset({USER}) if self.start_on_user else frozenset(),
            options=_OPTIONS,
            previous=session.previous_for(history) if stable else None,
        )
        first = next(
            (
                i
                for i in window.messages
                if i >= len(system) and history[i].role.value not in _SYSTEM_ROLES
            ),
            None,
        )
        count = 0 if first is None else first - len(system)
        if count <= 0:
            return
        flushed = await self.sql_store.archive_oldest_messages(self.session_id, n=count)
        with self._lock:
            if self.pin_system and session.flushed_system is not None:
                session.flushed_system.extend(m for m in flushed if m.role.value in _SYSTEM_ROLES)
            session.flushed.extend(flushed)
        others = [m for m in flushed if m.role.value not in _SYSTEM_ROLES or not self.pin_system]
        if others and self.memory_blocks:
            await asyncio.gather(
                *[
                    block.aput(others, from_short_term_memory=True, session_id=self.session_id)
                    for block in self.memory_blocks
                ]
            )

    @dispatcher.span
    async def aget(
        self, input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> list[ChatMessage]:
        """The history window and the chosen memory blocks, within ``token_limit`` less
        the reply's 3 tokens, ``headroom`` and ``agent_reserve``."""
        session = self._session()
        active = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        system = await self._flushed_system(session) if self.pin_system else []
        history = [*system, *active]
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
        if self.truncate_oversized:
            config = (counting, self.pin_system, self.pin_last_user)
            mapping = fitted_mapping(mapping, budget, config, self._token_cache)
        stable = self.cache_stable is not False
        previous = session.previous_for(history) if stable else None
        window = mapping.history.select(
            self._history_pipeline(),
            budget,
            with_report=True,
            start_on=frozenset({USER}) if self.start_on_user else frozenset(),
            options=_OPTIONS,
            previous=previous,
        )
        with self._lock:
            session.remember(history, window, len(system))
        self._last_window = window if stable else None
        used = window.tokens
        left = limit - used
        chosen = _BLOCKS.dry_run(items, ContextBudget(max_tokens=left, target_tokens=left))
        report = _combined(built_report(_OWNER, window.report), built_report(_OWNER, chosen.report))
        self._last_report = report
        names = {item.metadata[MEMORY_BLOCK_KEY] for item in chosen.items}
        messages = [mapping.messages[i] for i in window.messages]
        emit_selection(
            _OWNER,
            report,
            max_tokens=limit,
            target_tokens=limit,
            candidates=len(history) + len(items),
            selected=len(messages) + len(names),
            selected_tokens=used + chosen.total_tokens,
            query=input if isinstance(input, str) else None,
            stable=stable_fields(self._last_window),
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


class _Session:
    """What a :class:`CupelMemory` remembers of one session between calls: the system
    messages flushed to the archive (``None``: not read yet), the messages its flush
    archived since the last ``get()``, and the previous window (over the history as
    ``get()`` built it: flushed system messages first, then the stored ones)."""

    __slots__ = ("flushed", "flushed_system", "state", "system_count")

    def __init__(self) -> None:
        self.flushed_system: list[ChatMessage] | None = None
        self.flushed: list[ChatMessage] = []
        self.state: StableWindow | None = None
        self.system_count = 0

    def remember(self, history: list[ChatMessage], window: HistoryWindow, system: int) -> None:
        self.state = StableWindow(tuple(history), tuple(window.messages), window.cut)
        self.system_count = system
        self.flushed = []

    def previous_for(self, history: list[ChatMessage]) -> list[int] | None:
        """The previous window in ``history``, through what the flush moved since: the
        flushed messages left the front of the stored history (its system messages now
        lead, read back from the archive)."""
        state = self.state
        if state is None:
            return None
        flushed = self.flushed
        if not flushed:
            return state.previous_for(history)
        old = state.history
        before = self.system_count  # flushed system messages leading the old history
        count = len(flushed)
        if old[before : before + count] != tuple(flushed):
            return None  # another flush than ours: start fresh
        moved = [
            i
            for i in range(before, before + count)
            if flushed[i - before].role.value in _SYSTEM_ROLES
        ]
        lead = before + len(moved)
        where: dict[int, int] = {i: i for i in range(before)}
        where.update({i: before + rank for rank, i in enumerate(moved)})
        where.update({i: lead + i - before - count for i in range(before + count, len(old))})
        # A flush that reached into the previous window moved its cut: the rest of the
        # window (from its first message still stored) is where the stretch starts.
        translated = [*old[:before], *(old[i] for i in moved), *old[before + count :]]
        cut = lead + state.cut - before - count if state.cut >= before + count else lead
        window = tuple(where[i] for i in state.window if i in where)
        return StableWindow(tuple(translated), window, cut).previous_for(history)


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
