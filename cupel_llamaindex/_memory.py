"""CupelChatMemory: a chat-store backed memory whose ``get()`` selects with cupel."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Sequence, Sized
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseChatStoreMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore
from llama_index.core.utils import get_tokenizer
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from cupel import ConfigurationError, ContextBudget, ContextItem, Pipeline, SelectionReport
from cupel.policy import Policy
from cupel_llamaindex._common import (
    check_callable,
    check_int,
    dispatcher,
    emit_selection,
    raise_configuration_error,
    resolve_pipeline,
    state_without_caches,
    with_filtered,
)
from cupel_llamaindex._mapping import MessageMapping, messages_to_items

__all__ = ["DEFAULT_TOKEN_LIMIT", "DEFAULT_TOKEN_LIMIT_RATIO", "CupelChatMemory"]

_OWNER = "CupelChatMemory"
DEFAULT_TOKEN_LIMIT = 3000
"""``token_limit`` when neither it nor an LLM is given (as ``ChatMemoryBuffer``)."""
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
"""Share of the LLM's context window used when only ``llm`` is given (as ``ChatMemoryBuffer``)."""

ORPHAN_FILTER = "orphan_tool_result"
START_ON_USER_FILTER = "start_on_user"


class CupelChatMemory(BaseChatStoreMemory):
    """A chat memory that stores every message and selects a valid window on ``get()``.

    Storage is the chat store (``SimpleChatStore`` by default), exactly as for
    ``ChatMemoryBuffer``; ``get()`` never modifies it. Selection maps the history to
    cupel items (see :func:`~cupel_llamaindex.messages_to_items`), runs the ``policy``
    (default: the ``chat`` preset — recency-led, chronological) or an explicit
    ``pipeline`` within ``token_limit - initial_token_count``, and returns the very same
    ``ChatMessage`` objects in conversation order. Guarantees:

    * an assistant message with tool calls and its tool results are kept or dropped
      together, and the window never starts with a tool message;
    * system/developer messages are kept (``pin_system``) and so is the latest user
      message (``pin_last_user``); if these alone exceed the budget,
      :class:`~cupel.PinnedBudgetError` is raised rather than sending an over-long prompt;
    * with ``start_on_user`` (default), the first non-system message is a user message:
      selected units before it are dropped (reported as ``Filtered("start_on_user")``);
    * every message is counted once per ``get()`` (``ChatMemoryBuffer`` re-counts the
      whole window for every message it drops), tool calls included.

    :attr:`last_report` holds the last :class:`~cupel.SelectionReport`, also dispatched
    as a :class:`~cupel_llamaindex.CupelSelectionEvent` through LlamaIndex instrumentation.
    ``input`` is accepted for interface compatibility and ignored.

    >>> memory = CupelChatMemory.from_defaults(token_limit=12, tokenizer_fn=str.split)
    >>> memory.put_messages([
    ...     ChatMessage(role="system", content="Answer briefly."),
    ...     ChatMessage(role="user", content="one two three four"),
    ...     ChatMessage(role="assistant", content="five six seven"),
    ...     ChatMessage(role="user", content="eight nine"),
    ...     ChatMessage(role="assistant", content="ten"),
    ...     ChatMessage(role="user", content="eleven twelve thirteen")])
    >>> [m.content for m in memory.get()]
    ['Answer briefly.', 'eight nine', 'ten', 'eleven twelve thirteen']
    >>> len(memory.get_all())
    6
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    token_limit: int = Field(description="Token budget of the returned history (> 0).")
    tokenizer_fn: Callable[[str], Sized] = Field(
        default_factory=get_tokenizer,
        exclude=True,
        description="Text -> tokens (a sized sequence), LlamaIndex's convention.",
    )
    message_token_counter: Callable[[ChatMessage], int] | None = Field(
        default=None,
        exclude=True,
        description="Optional ChatMessage -> token count (overrides tokenizer_fn per message).",
    )
    policy: str | Policy = Field(
        default="chat", description="A cupel preset name or Policy (ignored with pipeline)."
    )
    pipeline: Pipeline | None = Field(
        default=None, exclude=True, description="An explicit cupel Pipeline (overrides policy)."
    )
    pin_system: bool = Field(default=True, description="Always keep system messages.")
    pin_last_user: bool = Field(default=True, description="Always keep the latest user message.")
    start_on_user: bool = Field(
        default=True, description="The first non-system message returned is a user message."
    )

    _pipeline: Pipeline = PrivateAttr()
    _built_from: tuple[object, object] = PrivateAttr()
    _last_report: SelectionReport | None = PrivateAttr(default=None)
    _previous: tuple[tuple[object, ...], MessageMapping] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise_configuration_error(exc, _OWNER)

    def __getstate__(self) -> dict[str, Any]:
        return state_without_caches(
            self, super().__getstate__, ("_pipeline", "_built_from", "_previous")
        )

    @classmethod
    def class_name(cls) -> str:
        """Serialization id."""
        return "CupelChatMemory"

    @field_validator("token_limit", mode="before")
    @classmethod
    def _check_limit(cls, value: Any) -> int:
        return check_int(_OWNER, "token_limit", value, minimum=1)

    @field_validator("tokenizer_fn", mode="before")
    @classmethod
    def _check_tokenizer(cls, value: Any) -> Any:
        if value is None:
            return get_tokenizer()
        return check_callable(_OWNER, "tokenizer_fn", value, optional=False)

    @field_validator("message_token_counter", mode="before")
    @classmethod
    def _check_counter(cls, value: Any) -> Any:
        return check_callable(_OWNER, "message_token_counter", value, optional=True)

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

    @model_validator(mode="after")
    def _build(self) -> CupelChatMemory:
        self._current_pipeline()
        return self

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], Sized] | None = None,
        *,
        policy: str | Policy | None = None,
        pipeline: Pipeline | None = None,
        message_token_counter: Callable[[ChatMessage], int] | None = None,
        pin_system: bool = True,
        pin_last_user: bool = True,
        start_on_user: bool = True,
        **kwargs: Any,
    ) -> CupelChatMemory:
        """Build a memory the way ``ChatMemoryBuffer.from_defaults`` does: ``token_limit``
        defaults to 75% of ``llm``'s context window, else 3000; ``chat_history`` is
        written to the store under ``chat_store_key``. Unknown keyword arguments raise."""
        if kwargs:
            raise ConfigurationError(
                f"{_OWNER}.from_defaults: unexpected keyword arguments {sorted(kwargs)}",
                field=next(iter(sorted(kwargs))),
                value=kwargs,
            )
        if token_limit is None:
            if llm is not None:
                token_limit = int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO)
            else:
                token_limit = DEFAULT_TOKEN_LIMIT
        store = chat_store if chat_store is not None else SimpleChatStore()
        if chat_history is not None:
            # A copy: later put() calls must not append to the caller's list.
            store.set_messages(chat_store_key, list(chat_history))
        data: dict[str, Any] = {
            "token_limit": token_limit,
            "tokenizer_fn": tokenizer_fn,
            "message_token_counter": message_token_counter,
            "chat_store": store,
            "chat_store_key": chat_store_key,
            "pipeline": pipeline,
            "pin_system": pin_system,
            "pin_last_user": pin_last_user,
            "start_on_user": start_on_user,
        }
        if policy is not None:
            data["policy"] = policy
        return cls(**data)

    # -- serialization (as ChatMemoryBuffer) ------------------------------------------
    @field_serializer("chat_store")
    def serialize_courses_in_order(self, chat_store: BaseChatStore) -> dict[str, Any]:
        """The chat store's dict form plus its ``class_name`` (as the base class does).

        A plain ``SimpleChatStore`` is dumped message by message: its own serializer
        fails under pydantic >= 2.12 (``'index_key' is expected to be an integer``), which
        breaks ``ChatMemoryBuffer.to_dict()`` too.
        """
        data: dict[str, Any]
        if type(chat_store) is SimpleChatStore:
            data = {
                "store": {
                    key: [message.model_dump(mode="json") for message in messages]
                    for key, messages in chat_store.store.items()
                }
            }
        else:
            data = chat_store.model_dump()
        data["class_name"] = chat_store.class_name()
        return data

    def to_string(self) -> str:
        """The memory (configuration and chat store) as JSON."""
        return self.to_json()

    @classmethod
    def from_string(cls, json_str: str) -> CupelChatMemory:
        """Rebuild a memory from :meth:`to_string` output."""
        return cls.from_dict(json.loads(json_str))

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> CupelChatMemory:
        """Rebuild a memory from :meth:`to_dict` output (``kwargs`` override fields, e.g.
        ``tokenizer_fn`` or ``pipeline``, which are not serialized)."""
        from llama_index.core.storage.chat_store.loading import load_chat_store

        data = dict(data)
        data.update(kwargs)
        data.pop("class_name", None)
        store = data.get("chat_store")
        if isinstance(store, dict):
            data["chat_store"] = load_chat_store(store)
        return cls(**data)

    # -- selection ---------------------------------------------------------------------
    @property
    def last_report(self) -> SelectionReport | None:
        """The :class:`~cupel.SelectionReport` of the most recent ``get()`` (``None`` before)."""
        return self._last_report

    def _current_pipeline(self) -> Pipeline:
        key = (self.policy, self.pipeline)
        built = getattr(self, "_built_from", None)
        if built is None or built[0] is not key[0] or built[1] is not key[1]:
            self._pipeline = resolve_pipeline(_OWNER, self.policy, self.pipeline)
            self._built_from = key
        return self._pipeline

    def get(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """The selected history: a valid, in-order window within
        ``token_limit - initial_token_count`` (the chat store is not modified)."""
        return self._select(self.get_all(), input, initial_token_count)

    async def aget(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async :meth:`get` (the store is read asynchronously; selection is CPU-bound)."""
        return self._select(await self.aget_all(), input, initial_token_count)

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the stored history (with a copy of ``messages``: the list passed in is
        never appended to by later ``put`` calls)."""
        self._previous = None
        super().set(list(messages))

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the stored history (async; a copy of ``messages``, as :meth:`set`)."""
        self._previous = None
        await super().aset(list(messages))

    def reset(self) -> None:
        """Delete the stored history."""
        self._previous = None
        super().reset()

    async def areset(self) -> None:
        """Delete the stored history (async)."""
        self._previous = None
        await super().areset()

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Put several messages (async, through the store's async API)."""
        for message in messages:
            await self.aput(message)

    @dispatcher.span  # a LlamaIndex span around every selection (sync and async)
    def _select(
        self, history: Sequence[ChatMessage], input: str | None, initial_token_count: int
    ) -> list[ChatMessage]:
        # Selection allocates one item (and report entry) per unit but creates no
        # reference cycles; with a long history held in memory, a full cyclic collection
        # triggered by those allocations costs more than the selection itself. Pause the
        # collector for the call (refcounting still frees everything) unless the caller
        # already disabled it.
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            return self._select_now(history, input, initial_token_count)
        finally:
            if paused:
                gc.enable()

    def _select_now(
        self, history: Sequence[ChatMessage], input: str | None, initial_token_count: int
    ) -> list[ChatMessage]:
        if (
            isinstance(initial_token_count, bool)
            or not isinstance(initial_token_count, int)
            or not 0 <= initial_token_count <= self.token_limit
        ):
            raise ConfigurationError(
                f"{_OWNER}.get: initial_token_count must be an int between 0 and "
                f"token_limit ({self.token_limit}), got {initial_token_count!r}",
                field="initial_token_count",
                value=initial_token_count,
            )
        limit = self.token_limit - initial_token_count
        budget = ContextBudget(max_tokens=limit, target_tokens=limit)
        # Reuse counts and items of the previous call's mapping (same counter and pins):
        # a growing conversation is counted once per message, not once per call.
        config = (
            self.tokenizer_fn,
            self.message_token_counter,
            self.pin_system,
            self.pin_last_user,
        )
        cached = self._previous
        previous = (
            cached[1]
            if cached is not None and all(a is b for a, b in zip(cached[0], config, strict=True))
            else None
        )
        mapping = messages_to_items(
            history,
            tokenizer_fn=self.tokenizer_fn,
            message_token_counter=self.message_token_counter,
            pin_system=self.pin_system,
            pin_last_user=self.pin_last_user,
            previous=previous,
        )
        self._previous = (config, mapping)
        result = self._current_pipeline().dry_run(mapping.items, budget)
        assert result.report is not None  # dry_run always builds one
        order, dropped = self._conversation_order(mapping, result.items)
        report = with_filtered(
            result.report,
            [mapping.items[k] for k in dropped],
            START_ON_USER_FILTER,
            mapping.orphan_items,
            ORPHAN_FILTER,
        )
        messages = mapping.messages_at(order)
        self._last_report = report
        emit_selection(
            _OWNER,
            report,
            max_tokens=limit,
            target_tokens=limit,
            candidates=len(history),
            selected=len(messages),
            selected_tokens=sum(mapping.items[k].tokens for k in order),
            query=input,
        )
        return messages

    def _conversation_order(
        self, mapping: MessageMapping, selected: Sequence[ContextItem]
    ) -> tuple[list[int], list[int]]:
        """Unit positions of the selection in history order, and those dropped because
        they precede the first user message (``start_on_user``, when a selected user
        message exists to start on)."""
        order = mapping.positions(selected)
        if not self.start_on_user:
            return order, []
        members = mapping.members
        messages = mapping.messages
        leading: list[int] = []
        for k in order:
            role = messages[members[k][0]].role
            if role == "system" or role == "developer":
                continue
            if role == "user":
                break
            leading.append(k)
        else:
            return order, []  # no user message to start on: keep the selection as it is
        if not leading:
            return order, []
        gone = set(leading)
        return [k for k in order if k not in gone], leading
