"""The selectors the prompt-cache benchmark replays sessions through: each incumbent and each
cupel component, with and without ``cache_stable``, as a call on the history so far."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SELECTORS", "Call", "Selector", "select_messages_call"]

# -- selectors -------------------------------------------------------------------------------------
Call = Callable[[list[Any], list[Any]], Sequence[Any]]
"""One call of a selector: ``(history so far, messages new since the last call)`` →
the window sent to the model."""


@dataclass(frozen=True)
class Selector:
    """A selector replayed over a session: ``start(budget)`` gives a fresh per-session
    :data:`Call` (state lives in its closure or in the component it builds)."""

    name: str
    framework: str
    cupel: bool
    stable: bool
    start: Callable[[int], Call]
    setup: str


def _trim(budget: int) -> Call:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        return trim_messages(
            history,
            max_tokens=budget,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
            start_on="human",
        )

    return call


def select_messages_call(low_water: bool | float) -> Callable[[int], Call]:
    def start(budget: int) -> Call:
        from cupel_langchain import select_messages

        previous: list[Any] | None = None

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            nonlocal previous
            if low_water is False:
                return select_messages(history, max_tokens=budget)
            window = select_messages(
                history, max_tokens=budget, cache_stable=low_water, previous=previous
            )
            previous = window
            return window

        return call

    return start


def _selector(budget: int) -> Call:
    from cupel_langchain import CupelMessageSelector

    selector = CupelMessageSelector(max_tokens=budget, cache_stable=True)
    config = {"configurable": {"thread_id": "session"}}
    return lambda history, new: selector.invoke(history, config=config)  # type: ignore[arg-type]


def _middleware(budget: int) -> Call:
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from cupel_langchain import CupelContextMiddleware

    middleware = CupelContextMiddleware(max_tokens=budget, cache_stable=True)
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        request = ModelRequest(model=model, messages=history[1:], system_message=history[0])
        seen: list[ModelRequest[Any]] = []

        def handler(selected: ModelRequest[Any]) -> ModelResponse[Any]:
            seen.append(selected)
            return ModelResponse(result=[AIMessage("ok")])

        middleware.wrap_model_call(request, handler)
        (sent,) = seen
        head = [sent.system_message] if sent.system_message is not None else []
        return [*head, *sent.messages]

    return call


def _memory(make: Callable[[int], Any]) -> Callable[[int], Call]:
    def start(budget: int) -> Call:
        memory = make(budget)

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            for message in new:  # as a chat engine or an agent stores them
                memory.put(message)
            return memory.get()  # type: ignore[no-any-return]

        return call

    return start


def _buffer(budget: int) -> Any:
    from llama_index.core.memory import ChatMemoryBuffer

    return ChatMemoryBuffer.from_defaults(token_limit=budget)


def _li_memory(budget: int) -> Any:
    from llama_index.core.memory import Memory

    return Memory.from_defaults(token_limit=budget)


def _chat_memory(cache_stable: bool) -> Callable[[int], Any]:
    def make(budget: int) -> Any:
        from cupel_llamaindex import CupelChatMemory

        return CupelChatMemory.from_defaults(token_limit=budget, cache_stable=cache_stable)

    return make


def _cupel_memory(cache_stable: bool) -> Callable[[int], Any]:
    def make(budget: int) -> Any:
        from cupel_llamaindex import CupelMemory

        return CupelMemory.from_defaults(token_limit=budget, cache_stable=cache_stable)

    return make


SELECTORS: tuple[Selector, ...] = (
    Selector(
        "trim_messages",
        "langchain",
        False,
        False,
        _trim,
        'trim_messages(history, max_tokens=B, strategy="last", '
        'token_counter=count_tokens_approximately, include_system=True, start_on="human")',
    ),
    Selector(
        "select_messages",
        "langchain",
        True,
        False,
        select_messages_call(False),
        "select_messages(history, max_tokens=B)  (cupel's default)",
    ),
    Selector(
        "select_messages cache_stable",
        "langchain",
        True,
        True,
        select_messages_call(True),
        "select_messages(history, max_tokens=B, cache_stable=True, previous=window)",
    ),
    Selector(
        "CupelMessageSelector cache_stable",
        "langchain",
        True,
        True,
        _selector,
        "CupelMessageSelector(max_tokens=B, cache_stable=True), config thread_id",
    ),
    Selector(
        "CupelContextMiddleware cache_stable",
        "langchain",
        True,
        True,
        _middleware,
        "CupelContextMiddleware(max_tokens=B, cache_stable=True).wrap_model_call(...)",
    ),
    Selector(
        "ChatMemoryBuffer",
        "llamaindex",
        False,
        False,
        _memory(_buffer),
        "ChatMemoryBuffer.from_defaults(token_limit=B); put new messages; get()",
    ),
    Selector(
        "Memory",
        "llamaindex",
        False,
        False,
        _memory(_li_memory),
        "Memory.from_defaults(token_limit=B) (token_flush_size flushes in chunks); put; get()",
    ),
    Selector(
        "CupelChatMemory",
        "llamaindex",
        True,
        False,
        _memory(_chat_memory(False)),
        "CupelChatMemory.from_defaults(token_limit=B)  (cupel's default)",
    ),
    Selector(
        "CupelChatMemory cache_stable",
        "llamaindex",
        True,
        True,
        _memory(_chat_memory(True)),
        "CupelChatMemory.from_defaults(token_limit=B, cache_stable=True)",
    ),
    Selector(
        "CupelMemory",
        "llamaindex",
        True,
        False,
        _memory(_cupel_memory(False)),
        "CupelMemory.from_defaults(token_limit=B)  (cupel's default)",
    ),
    Selector(
        "CupelMemory cache_stable",
        "llamaindex",
        True,
        True,
        _memory(_cupel_memory(True)),
        "CupelMemory.from_defaults(token_limit=B, cache_stable=True)",
    ),
)
"""Every selector: LangChain first, incumbents and cupel's defaults before the
cache-stable variants."""
