"""The selectors the prompt-cache benchmark replays sessions through: each incumbent and each
cupel component, with and without ``cache_stable``, as a call on the history so far; and
every cache-stable history component deployed as applications run it (:data:`DEPLOYMENTS`:
one process, round-robin workers, restarts, a component built per call)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.window_components import model_call

__all__ = [
    "COMPONENTS",
    "DEPLOYMENTS",
    "MODES",
    "RESTART_EVERY",
    "SELECTORS",
    "WORKERS",
    "Call",
    "Component",
    "Selector",
    "deployed",
    "select_messages_call",
]

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
    component: str = ""
    """The history component (:data:`COMPONENTS`) of a deployment-mode selector."""
    mode: str = ""
    """Its deployment mode (:data:`MODES`); empty for the plain selectors."""


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

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            if low_water is False:
                return select_messages(history, max_tokens=budget)
            return select_messages(history, max_tokens=budget, cache_stable=low_water)

        return call

    return start


def _selector(budget: int) -> Call:
    from cupel_langchain import CupelMessageSelector

    selector = CupelMessageSelector(max_tokens=budget, cache_stable=True)
    config = {"configurable": {"thread_id": "session"}}
    return lambda history, new: selector.invoke(history, config=config)  # type: ignore[arg-type]


def _middleware(budget: int) -> Call:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from cupel_langchain import CupelContextMiddleware

    middleware = CupelContextMiddleware(max_tokens=budget, cache_stable=True)
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))
    return lambda history, new: model_call(middleware, history[0], history[1:], model)


def _memory_call(memory: Any) -> Call:
    """A memory as a chat engine or an agent uses it: the new messages put, then get()."""

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        for message in new:
            memory.put(message)
        return memory.get()  # type: ignore[no-any-return]

    return call


def _memory(make: Callable[[int], Any]) -> Callable[[int], Call]:
    return lambda budget: _memory_call(make(budget))


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
        "select_messages(history, max_tokens=B, cache_stable=True)",
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


# -- deployment modes ------------------------------------------------------------------------------
WORKERS = 4
"""Round-robin workers: four component objects, call ``n`` handled by worker ``n % 4``."""
RESTART_EVERY = 20
"""The restart mode rebuilds the component every this many calls."""
MODES: tuple[str, ...] = ("one", "workers", "restart", "per-call")
"""How a deployment runs a component: one long-lived object; :data:`WORKERS` objects
dealt the calls round-robin; one object rebuilt every :data:`RESTART_EVERY` calls; a new
object for every call."""
MODE_LABELS = {
    "one": "one process",
    "workers": f"{WORKERS} round-robin workers",
    "restart": f"restart every {RESTART_EVERY} calls",
    "per-call": "built per call",
}


@dataclass(frozen=True)
class Component:
    """A history component with ``cache_stable`` on, as a deployment runs it:
    ``shared(budget)`` is what every process of a session reaches (a chat store, the agent
    state a checkpointer keeps; ``None``: the caller passes the whole history), and
    ``worker(budget, shared)`` builds one component object over it — what one process
    holds — as a :data:`Call`."""

    name: str
    framework: str
    shared: Callable[[int], Any]
    worker: Callable[[int, Any], Call]
    setup: str


def deployed(component: Component, mode: str) -> Callable[[int], Call]:
    """``component`` run in ``mode`` (:data:`MODES`), as a selector's ``start``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")

    def start(budget: int) -> Call:
        shared = component.shared(budget)
        if mode == "one":
            return component.worker(budget, shared)
        if mode == "per-call":
            return lambda history, new: component.worker(budget, shared)(history, new)
        calls = itertools.count()
        if mode == "workers":
            workers = [component.worker(budget, shared) for _ in range(WORKERS)]
            return lambda history, new: workers[next(calls) % WORKERS](history, new)
        current: list[Call] = []

        def restarted(history: list[Any], new: list[Any]) -> Sequence[Any]:
            if next(calls) % RESTART_EVERY == 0:
                current[:] = [component.worker(budget, shared)]
            return current[0](history, new)

        return restarted

    return start


def _nothing(budget: int) -> None:
    return None


def _select_messages_worker(budget: int, shared: None) -> Call:
    """A worker calling ``select_messages``: it knows nothing but the history."""
    from cupel_langchain import select_messages

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        return select_messages(history, max_tokens=budget, cache_stable=True)

    return call


def _selector_worker(budget: int, shared: None) -> Call:
    return _selector(budget)


class _AgentState:
    """The agent state a checkpointer keeps for a thread: the messages after the system
    prompt (``create_agent`` sends its ``system_prompt`` apart). Every worker reads it
    and writes it back."""

    def __init__(self) -> None:
        self.messages: list[Any] = []


def _agent_state(budget: int) -> _AgentState:
    return _AgentState()


def _middleware_worker(persistent: bool) -> Callable[[int, Any], Call]:
    def worker(budget: int, state: _AgentState | None) -> Call:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        from cupel_langchain import CupelContextMiddleware

        middleware = CupelContextMiddleware(
            max_tokens=budget, cache_stable=True, persistent=persistent
        )
        model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            system = history[0]
            if state is None:  # ephemeral: the state holds the whole history
                return model_call(middleware, system, history[1:], model)
            # the tool node and the caller append to the shared state, then the model
            # node's before_model rewrites it (the reducer: remove all, then the kept)
            state.messages.extend(m for m in new if m is not system)
            update = middleware.before_model({"messages": list(state.messages)}, None)  # type: ignore[arg-type]
            if update is not None:
                remove, *kept = update["messages"]
                if getattr(remove, "id", None) != REMOVE_ALL_MESSAGES:
                    raise AssertionError(f"unexpected state update {update!r:.200}")
                state.messages[:] = kept
            return model_call(middleware, system, list(state.messages), model)

        return call

    return worker


def _chat_store(budget: int) -> Any:
    from llama_index.core.storage.chat_store import SimpleChatStore

    return SimpleChatStore()


def _chat_memory_worker(budget: int, store: Any) -> Call:
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(
        token_limit=budget, cache_stable=True, chat_store=store, chat_store_key="session"
    )
    return _memory_call(memory)


def _database(budget: int) -> Any:
    """One database every ``CupelMemory`` of a session reaches, as processes reach one
    database server: an in-memory SQLite engine (``Memory``'s default URI; its
    ``StaticPool`` gives every store object the same database)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine("sqlite+aiosqlite:///:memory:")


def _cupel_memory_worker(budget: int, engine: Any) -> Call:
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    from cupel_llamaindex import CupelMemory

    store = SQLAlchemyChatStore(table_name="llama_index_memory", async_engine=engine)
    memory = CupelMemory.from_defaults(
        token_limit=budget, cache_stable=True, session_id="session", chat_store=store
    )
    return _memory_call(memory)


COMPONENTS: tuple[Component, ...] = (
    Component(
        "select_messages",
        "langchain",
        _nothing,
        _select_messages_worker,
        "select_messages(history, max_tokens=B, cache_stable=True)",
    ),
    Component(
        "CupelMessageSelector",
        "langchain",
        _nothing,
        _selector_worker,
        "CupelMessageSelector(max_tokens=B, cache_stable=True), config thread_id",
    ),
    Component(
        "CupelContextMiddleware",
        "langchain",
        _nothing,
        _middleware_worker(False),
        "CupelContextMiddleware(max_tokens=B, cache_stable=True).wrap_model_call(...) on the "
        "whole history",
    ),
    Component(
        "CupelContextMiddleware persistent",
        "langchain",
        _agent_state,
        _middleware_worker(True),
        "CupelContextMiddleware(max_tokens=B, cache_stable=True, persistent=True): "
        "before_model rewrites one shared agent state, then wrap_model_call",
    ),
    Component(
        "CupelChatMemory",
        "llamaindex",
        _chat_store,
        _chat_memory_worker,
        "CupelChatMemory.from_defaults(token_limit=B, cache_stable=True, chat_store=<one "
        'SimpleChatStore>, chat_store_key="session"); put new messages; get()',
    ),
    Component(
        "CupelMemory",
        "llamaindex",
        _database,
        _cupel_memory_worker,
        'CupelMemory.from_defaults(token_limit=B, cache_stable=True, session_id="session", '
        "chat_store=SQLAlchemyChatStore(<one database>)); put new messages; get()",
    ),
)
"""Every history component with ``cache_stable`` on, LangChain first."""

DEPLOYMENTS: tuple[Selector, ...] = tuple(
    Selector(
        f"{c.name} cache_stable [{mode}]",
        c.framework,
        True,
        True,
        deployed(c, mode),
        f"{c.setup}; {MODE_LABELS[mode]}",
        component=c.name,
        mode=mode,
    )
    for c in COMPONENTS
    for mode in MODES
)
"""Every component in every deployment mode (component by component)."""
