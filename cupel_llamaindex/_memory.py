"""CupelChatMemory: a chat-store backed memory whose ``get()`` selects with cupel."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
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
    field_serializer,
    field_validator,
    model_validator,
)

from cupel import ConfigurationError, Pipeline, SelectionReport
from cupel.counting import ImageTokens
from cupel.policy import Policy
from cupel_llamaindex._common import (
    MAX_TOKEN_LIMIT,
    WindowFields,
    check_int,
    checked_message,
    checked_messages,
    context_window,
    dispatcher,
    handlers_reached,
    stable_fields,
    state_without_caches,
    tokenizer_field,
)
from cupel_llamaindex._memory_selection import OWNER as _OWNER
from cupel_llamaindex._memory_selection import Built, Chosen, choose, pipeline_of

__all__ = ["DEFAULT_TOKEN_LIMIT", "DEFAULT_TOKEN_LIMIT_RATIO", "CupelChatMemory"]

DEFAULT_TOKEN_LIMIT = 3000
"""``token_limit`` when neither it nor an LLM is given (as ``ChatMemoryBuffer``)."""
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
"""Share of the LLM's context window used when only ``llm`` is given (as ``ChatMemoryBuffer``)."""


class CupelChatMemory(WindowFields, BaseChatStoreMemory):
    """A chat memory that stores every message and selects a valid window on ``get()``.

    Storage is the chat store (``SimpleChatStore`` by default), exactly as for
    ``ChatMemoryBuffer``; ``get()`` never modifies it. Selection maps the history to
    cupel items (see :func:`~cupel_llamaindex.messages_to_items`), runs the ``policy``
    (default: the ``chat`` preset — a recency window, chronological) or an explicit
    ``pipeline``, and returns the very same ``ChatMessage`` objects in conversation order.

    **Counting, as providers bill a request.** The window plus the reply's 3 tokens
    (:data:`~cupel.counting.REPLY_TOKENS`) fit ``token_limit`` less
    ``initial_token_count``, ``headroom`` (a share of ``token_limit`` kept free for a
    provider whose tokenizer counts more than yours) and ``agent_reserve`` (below). A
    message costs 3 tokens, its text parts by ``tokenizer_fn`` (text blocks, each tool
    call's name, JSON arguments and id, a tool result's call id) and its images and other
    media by ``image_tokens`` (:data:`~cupel.counting.ImageTokens`: by pixel size; 1,600
    when unknown). ``tokenizer_fn``: LlamaIndex's cl100k tokenizer unless given, or any
    form :func:`~cupel.counting.text_counter` accepts. A ``message_token_counter`` counts
    whole messages instead (nothing is added; the reply is still reserved).

    **Agents.** A workflow ``FunctionAgent`` sends its system prompt and the current run's
    tool rounds besides the window (the memory sees them only when the run ends):
    ``agent_reserve`` keeps that many tokens free for them — the system prompt + 3, plus
    the longest run's tool rounds (3 + names, arguments and ids per call message; 3 + text
    and call id per result), plus the tool definitions if your provider bills them. A
    request exceeds ``token_limit`` by at most what they exceed ``agent_reserve``.

    The default window reads like a conversation: system/developer messages
    (``pin_system``), the latest user message (``pin_last_user``: the question, or an
    agent's task), then whole units from the newest backwards until the next one does not
    fit — earlier turns whole, the latest turn's tool rounds newest first. Guarantees:

    * no holes: the only gap is between the kept latest user message and the recent tool
      rounds kept after it; a complete exchange is never traded for a lone question;
    * tool calls are valid for the provider: an assistant message with tool calls and its
      tool results are kept or dropped together, and units providers would reject
      (unanswered or partly answered calls; late, duplicate or unknown results) are left
      out and reported as :class:`~cupel.InvalidToolCall`;
    * if the pinned messages alone exceed the budget, :class:`~cupel.PinnedBudgetError`
      says what they need and names ``pin_system`` / ``pin_last_user``;
    * with ``start_on_user`` (default), the first non-system message is a user message
      (units dropped for it are reported as ``Filtered("start_on")``);
    * every ``get()`` counts each message once (``ChatMemoryBuffer`` re-counts the window
      for every message it drops); a result never depends on what the memory saw before.

    **Cache-stable windows** (``cache_stable=True`` or a low-water mark): the window only
    grows by the new messages until it would overflow, then is cut back to the mark; the
    cut is replayed from the stored history itself
    (:func:`~cupel.conversation.stable_cut`), so several memories on one chat store, a
    memory built per request or a restarted process give the very same windows, and
    :attr:`last_stable` describes what the previous request actually sent.

    :attr:`last_report` holds the last :class:`~cupel.SelectionReport` (built on first
    read); when an instrumentation event handler is listening, every ``get()`` builds it
    and dispatches it as a :class:`~cupel_llamaindex.CupelSelectionEvent`.
    ``input`` is accepted for interface compatibility and ignored.

    >>> memory = CupelChatMemory.from_defaults(token_limit=30, tokenizer_fn=str.split)
    >>> memory.put_messages([
    ...     ChatMessage(role="system", content="Answer briefly."),
    ...     ChatMessage(role="user", content="one two three four"),
    ...     ChatMessage(role="assistant", content="five six seven"),
    ...     ChatMessage(role="user", content="eight nine"),
    ...     ChatMessage(role="assistant", content="ten"),
    ...     ChatMessage(role="user", content="eleven twelve thirteen")])
    >>> [m.content for m in memory.get()]  # 5 + 5 + 4 + 6 (words + 3 each) + 3 <= 30
    ['Answer briefly.', 'eight nine', 'ten', 'eleven twelve thirteen']
    >>> memory.last_report.excluded[0].reason.name
    'OutsideWindow'
    >>> len(memory.get_all())
    6
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    token_limit: int = Field(
        description="Token budget of the request the history is sent in (> 0)."
    )
    tokenizer_fn: Any = tokenizer_field()
    message_token_counter: Callable[[ChatMessage], int] | None = Field(
        default=None,
        exclude=True,
        description="Optional ChatMessage -> token count (overrides tokenizer_fn per message).",
    )

    __slots__ = ("_built",)
    """What the settings build (:class:`Built`): a plain slot (copies start without it)."""

    _last: Chosen | None = PrivateAttr(default=None)
    """The latest ``get()``'s selection."""

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._built: Built | None = None

    def __getstate__(self) -> dict[str, Any]:
        return state_without_caches(self, CupelChatMemory, ("_last",))

    @classmethod
    def class_name(cls) -> str:
        """Serialization id."""
        return "CupelChatMemory"

    @field_validator("token_limit", mode="before")
    @classmethod
    def _check_limit(cls, value: Any) -> int:
        return check_int(_OWNER, "token_limit", value, minimum=1, maximum=MAX_TOKEN_LIMIT)

    @model_validator(mode="after")
    def _build(self) -> CupelChatMemory:
        # a bad policy (or embeddings= without relevance) fails here
        pipeline_of(self.policy, self.pipeline, self.cache_stable, self.embeddings)
        return self

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Any = None,
        *,
        policy: str | Policy | None = None,
        pipeline: Pipeline | None = None,
        message_token_counter: Callable[[ChatMessage], int] | None = None,
        image_tokens: ImageTokens = "max",
        headroom: float = 0.0,
        agent_reserve: int = 0,
        truncate_oversized: bool = False,
        pin_system: bool = True,
        pin_last_user: bool = True,
        start_on_user: bool = True,
        cache_stable: bool | float = False,
        embeddings: Any = None,
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
                token_limit = int(context_window(_OWNER, llm) * DEFAULT_TOKEN_LIMIT_RATIO)
            else:
                token_limit = DEFAULT_TOKEN_LIMIT
        if chat_store is not None and not isinstance(chat_store, BaseChatStore):
            raise ConfigurationError(
                f"{_OWNER}.from_defaults: chat_store must be a LlamaIndex BaseChatStore, "
                f"got {type(chat_store).__name__} {chat_store!r}",
                field="chat_store",
                value=chat_store,
            )
        history = (
            None if chat_history is None else checked_messages(_OWNER, "chat_history", chat_history)
        )
        store = chat_store if chat_store is not None else SimpleChatStore()
        data: dict[str, Any] = {
            "token_limit": token_limit,
            "tokenizer_fn": tokenizer_fn,
            "message_token_counter": message_token_counter,
            "image_tokens": image_tokens,
            "headroom": headroom,
            "agent_reserve": agent_reserve,
            "truncate_oversized": truncate_oversized,
            "chat_store": store,
            "chat_store_key": chat_store_key,
            "pipeline": pipeline,
            "pin_system": pin_system,
            "pin_last_user": pin_last_user,
            "start_on_user": start_on_user,
            "cache_stable": cache_stable,
            "embeddings": embeddings,
        }
        if policy is not None:
            data["policy"] = policy
        memory = cls(**data)  # validates everything before the store is written
        if history is not None:
            # A copy: later put() calls must not append to the caller's list.
            store.set_messages(chat_store_key, history)
        return memory

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

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Refused: a memory is a live object (its chat store, counters and pipeline).

        Refusing makes a workflow ``Context`` keep the memory passed to each run, as for
        LlamaIndex's own memories, rather than work on a copy the caller no longer sees
        (with its counters and pipeline reset). Persist a memory with :meth:`to_string` /
        :meth:`from_string`.
        """
        raise ConfigurationError(
            f"{_OWNER} is not serializable with to_dict()/to_json(): it is a live memory "
            "(chat store, counters, pipeline) that a workflow Context must keep rather than "
            "copy; pass it to each run (agent.run(..., memory=memory)) and persist it with "
            "to_string() / from_string()",
            field="memory",
            value=type(self).__name__,
        )

    def to_string(self) -> str:
        """The memory (configuration and chat store) as JSON. A custom ``tokenizer_fn``,
        ``message_token_counter``, ``pipeline`` or callable ``image_tokens`` is not
        serialized: the text names them and :meth:`from_string` requires them again."""
        data = super().to_dict()
        data["not_serialized"] = [
            name
            for name, custom in (
                ("tokenizer_fn", self.tokenizer_fn is not get_tokenizer()),
                ("message_token_counter", self.message_token_counter is not None),
                ("pipeline", self.pipeline is not None),
                ("embeddings", self.embeddings is not None),
                ("image_tokens", not isinstance(self.image_tokens, (str, int))),
            )
            if custom
        ]
        return json.dumps(data)

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> CupelChatMemory:
        """Rebuild a memory from :meth:`to_string` output; ``kwargs`` set fields that are
        not serialized (a memory saved with a custom one refuses to load without it)."""
        data = json.loads(json_str)
        missing = [name for name in data.pop("not_serialized", []) if name not in kwargs]
        if missing:
            raise ConfigurationError(
                f"{_OWNER}.from_string: the memory was saved with a custom "
                f"{', '.join(missing)}, which is not serialized; pass it again, e.g. "
                f"from_string(text, {missing[0]}=...)",
                field=missing[0],
                value=None,
            )
        return cls.from_dict(data, **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> CupelChatMemory:
        """Rebuild a memory from the data of :meth:`to_string` (``kwargs`` override
        fields, e.g. ``tokenizer_fn`` or ``pipeline``, which are not serialized)."""
        from llama_index.core.storage.chat_store.loading import load_chat_store

        data = {**data, **kwargs}
        data.pop("class_name", None)
        data.pop("not_serialized", None)
        store = data.get("chat_store")
        if isinstance(store, dict):
            data["chat_store"] = load_chat_store(store)
        return cls(**data)

    # -- selection ---------------------------------------------------------------------
    @property
    def last_report(self) -> SelectionReport | None:
        """The :class:`~cupel.SelectionReport` of the most recent ``get()`` (``None`` before).

        Built on first read (by every ``get()`` while an instrumentation event handler
        listens) by selecting again with a trace; a pipeline that then selects a different
        window raises :class:`~cupel.CupelError` rather than report what did not happen.
        """
        last = self._last
        return None if last is None else last.selection.explain()

    @property
    def last_stable(self) -> dict[str, Any] | None:
        """With ``cache_stable`` on, the latest ``get()``'s ``stable_prefix`` (how many
        leading messages are those of the previous request's window: that of the history
        before its newest assistant message, replayed), ``cut_moved`` (that window is no
        longer a prefix of this one) and ``cut`` (where the window's stretch starts) — the
        same on every object and process; ``None`` otherwise or before the first ``get()``."""
        last = self._last
        return stable_fields(None if last is None else last.window)

    def forget(self) -> None:
        """Deprecated, does nothing: a cache-stable window is replayed from the history
        itself, so the memory keeps nothing per chat store key to forget (removed in
        1.0)."""
        warnings.warn(
            f"{_OWNER}.forget() is deprecated and does nothing: cache-stable windows are "
            "replayed from the history, nothing is kept per chat store key (it will be "
            "removed in 1.0)",
            DeprecationWarning,
            stacklevel=2,
        )

    def get(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """The selected history: a valid, in-order window within ``token_limit`` less
        ``initial_token_count`` and the reserves (the reply's 3 tokens, ``headroom``,
        ``agent_reserve``); the chat store is not modified."""
        return self._chosen(self.get_all(), input, initial_token_count)

    async def aget(
        self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Async :meth:`get` (the store is read asynchronously; selection is CPU-bound)."""
        return self._chosen(await self.aget_all(), input, initial_token_count)

    def put(self, message: ChatMessage) -> None:
        """Append one message to the stored history (as ``BaseChatStoreMemory.put``)."""
        if not isinstance(message, ChatMessage):
            checked_message(_OWNER, "put", message)  # raises
        self.chat_store.add_message(self.chat_store_key, message)

    async def aput(self, message: ChatMessage) -> None:
        """Append one message to the stored history (async)."""
        await super().aput(checked_message(_OWNER, "aput", message))

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the stored history (with a copy of ``messages``: the list passed in is
        never appended to by later ``put`` calls)."""
        super().set(checked_messages(_OWNER, "set", messages))

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the stored history (async; a copy of ``messages``, as :meth:`set`)."""
        await super().aset(checked_messages(_OWNER, "aset", messages))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages (all checked before any is stored)."""
        for message in checked_messages(_OWNER, "put_messages", messages):
            super().put(message)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages (async, through the store's async API; all checked
        before any is stored)."""
        for message in checked_messages(_OWNER, "aput_messages", messages):
            await super().aput(message)

    def _chosen(
        self, history: Sequence[ChatMessage], input: str | None, initial_token_count: int
    ) -> list[ChatMessage]:
        """The selection (:func:`~cupel_llamaindex._memory_selection.choose`), inside a
        LlamaIndex span only when a span or event handler listens."""
        listening, spans = handlers_reached()
        if listening or spans:
            return self._select(history, input, initial_token_count, listening)
        return self._choose(history, input, initial_token_count, listening)

    @dispatcher.span
    def _select(self, *arguments: Any) -> list[ChatMessage]:
        """The selection in a LlamaIndex span (the span's id names ``_select``)."""
        return self._choose(*arguments)

    def _choose(
        self,
        history: Sequence[ChatMessage],
        input: str | None,
        initial_token_count: int,
        listening: bool,
    ) -> list[ChatMessage]:
        """The selection with what the settings build (:class:`Built`: made again when one
        was replaced), kept as the last one (window, report or report to build)."""
        built = getattr(self, "_built", None)  # a copy starts without one
        current = Built.of(built, self)
        if current is not built:
            self._built = current
        chosen = self._last = choose(self, history, input, initial_token_count, listening, current)
        return chosen.messages
