"""CupelMemory: LlamaIndex's current memory API (``llama_index.core.memory.Memory``) with
cupel choosing what ``get()`` returns — the chat history window and the memory blocks —
under one budget, with a report."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.utils import get_tokenizer
from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator

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
from cupel.conversation import USER, PinnedOptions
from cupel.policy import Policy
from cupel_llamaindex._common import (
    check_policy,
    dispatcher,
    emit_selection,
    raise_configuration_error,
    resolve_pipeline,
)
from cupel_llamaindex._mapping import messages_to_items

__all__ = ["MEMORY_BLOCK_KEY", "CupelMemory"]

_OWNER = "CupelMemory"
MEMORY_BLOCK_KEY = "llamaindex_memory_block"
"""Item metadata key naming the memory block an item stands for."""

_OPTIONS = PinnedOptions(system="pin_system=False", latest_user="pin_last_user=False", last=None)
# Memory blocks compete by priority (LlamaIndex's rule: higher first); priority 0 is pinned.
_BLOCKS = Pipeline(PriorityScorer(), GreedySlice(), ChronologicalPlacer())


class CupelMemory(Memory):
    """``llama_index.core.memory.Memory`` whose ``get()`` / ``aget()`` is chosen by cupel.

    Storage is ``Memory``'s own: the SQL chat store (``SQLAlchemyChatStore``, in-memory
    SQLite by default), ``session_id``, ``put()`` flushing the oldest messages to the
    memory blocks once the history passes ``token_limit * chat_history_token_ratio``
    tokens, ``memory_blocks`` and their template and ``insert_method``. What changes is
    the selection, under one budget of ``token_limit`` tokens:

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
    ...     token_limit=40, tokenizer_fn=str.split,
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
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    policy: str | Policy = Field(
        default="chat", description="A cupel preset name or Policy for the history window."
    )
    pipeline: Pipeline | None = Field(
        default=None, exclude=True, description="An explicit cupel Pipeline (overrides policy)."
    )
    pin_system: bool = Field(default=True, description="Always keep system messages.")
    pin_last_user: bool = Field(default=True, description="Always keep the latest user message.")
    start_on_user: bool = Field(
        default=True, description="The first non-system message returned is a user message."
    )

    _last_report: SelectionReport | None = PrivateAttr(default=None)

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
            if name in ("policy", "pipeline"):
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

    @field_validator("policy", mode="before")
    @classmethod
    def _check_policy(cls, value: Any) -> Any:
        return check_policy(_OWNER, value)

    @field_validator("pin_system", "pin_last_user", "start_on_user", mode="before")
    @classmethod
    def _check_flag(cls, value: Any, info: Any) -> bool:
        if not isinstance(value, bool):
            raise ConfigurationError(
                f"{_OWNER}.{info.field_name}: must be a bool, got {value!r}",
                field=info.field_name,
                value=value,
            )
        return value

    @classmethod
    def from_defaults(
        cls,
        *args: Any,
        policy: str | Policy = "chat",
        pipeline: Pipeline | None = None,
        pin_system: bool = True,
        pin_last_user: bool = True,
        start_on_user: bool = True,
        **kwargs: Any,
    ) -> CupelMemory:
        """``Memory.from_defaults`` (session, chat store, blocks, limits) plus cupel's
        options."""
        memory = super().from_defaults(*args, **kwargs)
        return cls(
            **{name: getattr(memory, name) for name in Memory.model_fields},
            policy=policy,
            pipeline=pipeline,
            pin_system=pin_system,
            pin_last_user=pin_last_user,
            start_on_user=start_on_user,
        )

    def _history_pipeline(self) -> Pipeline:
        return resolve_pipeline(_OWNER, self.policy, self.pipeline)

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of the latest ``get()``: the history window and the memory blocks."""
        return self._last_report

    @dispatcher.span
    async def aget(
        self, input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> list[ChatMessage]:
        """The history window and the chosen memory blocks, within ``token_limit``."""
        history = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        contents = await self._get_memory_blocks_content(history, input=input, **block_kwargs)
        blocks = [b for b in self.memory_blocks if b.name in contents]
        items = [
            ContextItem(
                content=f"[memory block {block.name}] {_text(contents[block.name])}",
                tokens=self._estimate_token_count(contents[block.name]),
                kind="Memory",
                priority=block.priority,
                pinned=block.priority == 0,
                metadata={MEMORY_BLOCK_KEY: block.name},
            )
            for block in blocks
        ]
        limit = self.token_limit
        always = sum(item.tokens for item in items if item.pinned)
        wanted = sum(item.tokens for item in items if not item.pinned)
        reserve = min(wanted, limit - math.ceil(limit * self.chat_history_token_ratio))
        mapping = messages_to_items(
            history,
            message_token_counter=self._estimate_token_count,
            pin_system=self.pin_system,
            pin_last_user=self.pin_last_user,
        )
        pinned_history = sum(mapping.history.pinned_tokens.values())
        room = max(limit - always - max(reserve, 0), min(pinned_history, limit - always))
        budget = ContextBudget(max_tokens=max(room, 0), target_tokens=max(room, 0))
        window = mapping.history.select(
            self._history_pipeline(),
            budget,
            with_report=True,
            start_on=frozenset({USER}) if self.start_on_user else frozenset(),
            options=_OPTIONS,
        )
        used = sum(item.tokens for item in window.items)
        left = limit - used
        chosen = _BLOCKS.dry_run(items, ContextBudget(max_tokens=left, target_tokens=left))
        assert window.report is not None and chosen.report is not None
        report = _combined(window.report, chosen.report)
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
