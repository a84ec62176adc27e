"""The history components the window-quality benchmark compares: cupel's (select_messages,
the selector, the agent middleware, CupelChatMemory, CupelMemory) and the incumbents'
(trim_messages, ChatMemoryBuffer, Memory), each as a call on a history and a budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["COMPONENTS", "Component", "fill_memory", "middleware_window"]


# -- components --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Component:
    """A selector under its defaults: ``select(history, budget)`` returns the window."""

    name: str
    framework: str
    cupel: bool
    select: Callable[[list[Any], int], Sequence[Any]]
    setup: str


def _lc_select_messages(history: list[Any], budget: int) -> Sequence[Any]:
    from cupel_langchain import select_messages

    return select_messages(history, max_tokens=budget)


def _lc_selector(history: list[Any], budget: int) -> Sequence[Any]:
    from cupel_langchain import CupelMessageSelector

    return CupelMessageSelector(max_tokens=budget).invoke(history)


def _lc_middleware(history: list[Any], budget: int) -> Sequence[Any]:
    from cupel_langchain import CupelContextMiddleware

    return middleware_window(CupelContextMiddleware(max_tokens=budget), history)


def middleware_window(middleware: Any, history: list[Any]) -> list[Any]:
    """The agent's model call as ``create_agent`` makes it, through ``middleware``'s
    ``wrap_model_call`` hook: the system prompt as ``request.system_message``, the state's
    messages as ``request.messages``; the window is what the handler (the model)
    receives."""
    from langchain_core.messages import SystemMessage

    system = history[0] if history and isinstance(history[0], SystemMessage) else None
    return model_call(middleware, system, history[1:] if system is not None else list(history))


def model_call(middleware: Any, system: Any, messages: list[Any], model: Any = None) -> list[Any]:
    """What ``middleware.wrap_model_call`` sends ``model`` (a fake chat model unless given)
    for a request of ``messages`` after the ``system`` prompt: the system message first,
    then the messages."""
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    if model is None:
        model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    request = ModelRequest(model=model, messages=messages, system_message=system)
    seen: list[ModelRequest[Any]] = []

    def handler(selected: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.append(selected)
        return ModelResponse(result=[AIMessage("ok")])

    middleware.wrap_model_call(request, handler)
    (sent,) = seen
    head = [sent.system_message] if sent.system_message is not None else []
    return [*head, *sent.messages]


def _lc_trim(history: list[Any], budget: int) -> Sequence[Any]:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    return trim_messages(
        history,
        max_tokens=budget,
        strategy="last",
        token_counter=count_tokens_approximately,
        include_system=True,
        start_on="human",
    )


def _li_cupel(history: list[Any], budget: int) -> Sequence[Any]:
    from cupel_llamaindex import CupelChatMemory

    return CupelChatMemory.from_defaults(chat_history=history, token_limit=budget).get()


def _li_cupel_memory(history: list[Any], budget: int) -> Sequence[Any]:
    from cupel_llamaindex import CupelMemory

    return fill_memory(CupelMemory.from_defaults(token_limit=budget), history)


def _li_buffer(history: list[Any], budget: int) -> Sequence[Any]:
    from llama_index.core.memory import ChatMemoryBuffer

    return ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=budget).get()


def _li_memory(history: list[Any], budget: int) -> Sequence[Any]:
    from llama_index.core.memory import Memory

    return fill_memory(Memory.from_defaults(token_limit=budget), history)


def fill_memory(memory: Any, history: list[Any]) -> list[Any]:
    """Put the messages into a ``Memory`` API memory one by one, as a chat engine stores
    them as they come (each put may flush the oldest turns), then ``get()`` the window."""
    for message in history:
        memory.put(message)
    return list(memory.get())


COMPONENTS: tuple[Component, ...] = (
    Component(
        "select_messages",
        "langchain",
        True,
        _lc_select_messages,
        "select_messages(history, max_tokens=B)",
    ),
    Component(
        "CupelMessageSelector",
        "langchain",
        True,
        _lc_selector,
        "CupelMessageSelector(max_tokens=B).invoke(history)",
    ),
    Component(
        "CupelContextMiddleware",
        "langchain",
        True,
        _lc_middleware,
        "CupelContextMiddleware(max_tokens=B).wrap_model_call(ModelRequest(...), handler)",
    ),
    Component(
        "trim_messages",
        "langchain",
        False,
        _lc_trim,
        'trim_messages(history, max_tokens=B, strategy="last", '
        'token_counter=count_tokens_approximately, include_system=True, start_on="human")',
    ),
    Component(
        "CupelChatMemory",
        "llamaindex",
        True,
        _li_cupel,
        "CupelChatMemory.from_defaults(chat_history=history, token_limit=B).get()",
    ),
    Component(
        "CupelMemory",
        "llamaindex",
        True,
        _li_cupel_memory,
        "CupelMemory.from_defaults(token_limit=B); put(m) for each message; get()",
    ),
    Component(
        "ChatMemoryBuffer",
        "llamaindex",
        False,
        _li_buffer,
        "ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=B).get()",
    ),
    Component(
        "Memory",
        "llamaindex",
        False,
        _li_memory,
        "Memory.from_defaults(token_limit=B); put(m) for each message; get()",
    ),
)
"""Every component, LangChain first, cupel's before the incumbents."""
