"""What a cache-stable history component keeps alive between calls (issue 27): one component
object serves many conversations, each one call over a fresh history, the caller drops the
history (and the store its messages) afterwards; whatever is still allocated is held by the
component.

    python -m benchmarks.cache_retention                       # 200 conversations x 301 messages
    python -m benchmarks.cache_retention --conversations 1000 --messages 41

Measured with :mod:`tracemalloc` (Python allocations, after a full collection), against the
same component after one warm-up conversation. A component holding nothing per conversation
shows (close to) zero per conversation; today's components keep each conversation's previous
window and the history it was selected from (up to ``max_conversations``).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

__all__ = ["COMPONENTS", "Retention", "main", "retention"]

BUDGET = 4000
WORDS = 40
"""Words per generated message (about 50 tokens)."""

Converse = Callable[[int, int], None]
"""One conversation through the component: ``(conversation number, messages)``."""


@dataclass(frozen=True)
class Retention:
    """What one component object retains after ``conversations`` conversations."""

    component: str
    conversations: int
    messages: int
    retained: int
    """Bytes still allocated (Python heap, tracemalloc) beyond the warmed-up component."""

    @property
    def per_conversation(self) -> float:
        return self.retained / self.conversations


def _text(conversation: int, index: int) -> str:
    return " ".join(f"w{conversation}x{index}y{k}" for k in range(WORDS))


def _langchain_history(conversation: int, messages: int) -> list[Any]:
    """A fresh chat: a system prompt, then human and AI messages alternating, ending on a
    human message (new objects and new texts for every conversation)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    history: list[Any] = [SystemMessage(_text(conversation, 0))]
    for index in range(1, messages):
        kind = HumanMessage if index % 2 else AIMessage
        history.append(kind(_text(conversation, index)))
    if not isinstance(history[-1], HumanMessage):
        history.append(HumanMessage(_text(conversation, messages)))
    return history


def _llamaindex_history(conversation: int, messages: int) -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage

    roles = ["system"] + ["user" if i % 2 else "assistant" for i in range(1, messages)]
    if roles[-1] != "user":
        roles.append("user")
    return [ChatMessage(role=role, content=_text(conversation, i)) for i, role in enumerate(roles)]


def _thread(conversation: int) -> AbstractContextManager[Any]:
    """The LangGraph run config of ``conversation`` (its ``thread_id``), as an agent run
    sets it for its middleware."""
    from contextlib import contextmanager

    from langchain_core.runnables.config import var_child_runnable_config

    @contextmanager
    def scope() -> Any:
        token = var_child_runnable_config.set({"configurable": {"thread_id": f"c{conversation}"}})
        try:
            yield
        finally:
            var_child_runnable_config.reset(token)

    return scope()


def _selector() -> Converse:
    from cupel_langchain import CupelMessageSelector

    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)

    def converse(conversation: int, messages: int) -> None:
        config = {"configurable": {"thread_id": f"c{conversation}"}}
        selector.invoke(_langchain_history(conversation, messages), config=config)  # type: ignore[arg-type]

    return converse


def _middleware(persistent: bool) -> Callable[[], Converse]:
    def make() -> Converse:
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage

        from benchmarks.cache_selectors import _model_call
        from cupel_langchain import CupelContextMiddleware

        middleware = CupelContextMiddleware(
            max_tokens=BUDGET, cache_stable=True, persistent=persistent
        )
        model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))

        def converse(conversation: int, messages: int) -> None:
            system, *rest = _langchain_history(conversation, messages)
            with _thread(conversation):
                if persistent:
                    update = middleware.before_model({"messages": rest}, None)  # type: ignore[arg-type]
                    if update is not None:
                        rest = update["messages"][1:]
                _model_call(middleware, model, system, rest)

        return converse

    return make


def _chat_memory() -> Converse:
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(token_limit=BUDGET, cache_stable=True)

    def converse(conversation: int, messages: int) -> None:
        memory.chat_store_key = f"c{conversation}"
        memory.set(_llamaindex_history(conversation, messages))
        memory.get()
        memory.reset()  # the store forgets the conversation; the component should too

    return converse


def _cupel_memory() -> Converse:
    from cupel_llamaindex import CupelMemory

    memory = CupelMemory.from_defaults(token_limit=BUDGET, cache_stable=True)

    def converse(conversation: int, messages: int) -> None:
        memory.session_id = f"c{conversation}"
        memory.put_messages(_llamaindex_history(conversation, messages))
        memory.get()
        memory.reset()

    return converse


COMPONENTS: dict[str, Callable[[], Converse]] = {
    "CupelMessageSelector": _selector,
    "CupelContextMiddleware": _middleware(False),
    "CupelContextMiddleware persistent": _middleware(True),
    "CupelChatMemory": _chat_memory,
    "CupelMemory": _cupel_memory,
}
"""The history components that keep state across calls (``select_messages`` keeps none:
its caller holds ``previous``)."""


def retention(component: str, conversations: int, messages: int) -> Retention:
    """``conversations`` conversations of ``messages`` messages through one ``component``
    object (:data:`COMPONENTS`): the bytes it still holds afterwards."""
    converse = COMPONENTS[component]()
    converse(-1, messages)  # warm-up: imports, pipelines, first-call caches
    gc.collect()
    tracemalloc.start()
    try:
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        for conversation in range(conversations):
            converse(conversation, messages)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del converse
    return Retention(component, conversations, messages, after - before)


def table(results: Sequence[Retention]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| component | conversations | messages | retained | per conversation |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.component} | {r.conversations} | {r.messages} | "
            f"{r.retained / 1e6:.1f} MB | {r.per_conversation / 1e3:.1f} kB |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cache_retention", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--conversations", type=int, default=200, help="default 200")
    parser.add_argument("--messages", type=int, default=301, help="per conversation (301)")
    parser.add_argument(
        "--components", default=",".join(COMPONENTS), help="comma-separated (default: all)"
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.components.split(",") if n.strip()]
    unknown = [n for n in names if n not in COMPONENTS]
    if unknown or args.conversations < 1 or args.messages < 2:
        parser.error(f"unknown components {unknown}" if unknown else "too few conversations")
    started = time.perf_counter()
    results = [retention(name, args.conversations, args.messages) for name in names]
    print(
        f"Retained by one cache-stable component after {args.conversations} conversations of "
        f"{args.messages} messages (tracemalloc)\n"
    )
    print(table(results))
    print(f"\n{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
