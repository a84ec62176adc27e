"""Shared helpers for the cupel_llamaindex tests: a recording instrumentation handler and
a checker for chat windows (same objects, history order, budget, tool-call integrity)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

from cupel_llamaindex import CupelSelectionEvent, tool_call_ids


class SelectionRecorder(BaseEventHandler):
    """A real LlamaIndex event handler keeping the cupel selection events it receives."""

    events: list[CupelSelectionEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "SelectionRecorder"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, CupelSelectionEvent):
            self.events.append(event)


def recording() -> Iterator[SelectionRecorder]:
    """Attach a recorder to the root dispatcher for the duration of a test."""
    root = get_dispatcher()
    recorder = SelectionRecorder()
    root.add_event_handler(recorder)
    try:
        yield recorder
    finally:
        root.event_handlers = [h for h in root.event_handlers if h is not recorder]


def counting_split() -> tuple[list[str], Callable[[str], list[str]]]:
    """A whitespace tokenizer that records every text it is given: ``(texts, tokenizer)``."""
    texts: list[str] = []

    def tokenizer(text: str) -> list[str]:
        texts.append(text)
        return text.split()

    return texts, tokenizer


def words(message: ChatMessage) -> int:
    """An independent per-message counter for tests: 1 + words of the text content."""
    return 1 + len((message.content or "").split())


def check_window(
    window: Sequence[ChatMessage],
    history: Sequence[ChatMessage],
    *,
    budget: int,
    count: Callable[[ChatMessage], int],
    start_on_user: bool = True,
) -> None:
    """Assert everything a selected chat window must satisfy."""
    position = {id(m): i for i, m in enumerate(history)}
    assert all(id(m) in position for m in window), "the window holds objects not in the history"
    indices = [position[id(m)] for m in window]
    assert indices == sorted(indices), "the window is not in history order"
    assert len(set(indices)) == len(indices), "a message appears twice"
    assert sum(count(m) for m in window) <= budget, "the window exceeds the budget"

    conversation = [m for m in window if m.role not in (MessageRole.SYSTEM, MessageRole.DEVELOPER)]
    if conversation:
        assert conversation[0].role != MessageRole.TOOL, "the window starts with a tool message"
        if start_on_user and any(m.role == MessageRole.USER for m in conversation):
            assert conversation[0].role == MessageRole.USER, "the window does not start on user"

    assert provider_problems(window) == [], provider_problems(window)
    in_window = {id(m) for m in window}
    for message in history:
        if message.role in (MessageRole.SYSTEM, MessageRole.DEVELOPER):
            assert id(message) in in_window, "a system message was dropped"


def provider_problems(window: Sequence[ChatMessage]) -> list[str]:
    """What a chat-model provider would reject in ``window``, checked independently of
    cupel: the tool messages right after an assistant message must answer exactly its
    calls, each once, before any other message; no tool message anywhere else."""
    problems: list[str] = []
    pending: list[str] | None = None  # the open calls, None: no run of results open
    for i, message in enumerate(window):
        if message.role == MessageRole.TOOL:
            answered = message.additional_kwargs.get("tool_call_id")
            if pending is None or answered not in pending:
                problems.append(f"{i}: tool message answers {answered!r}, not an open call")
            else:
                pending.remove(answered)
            continue
        if pending:
            problems.append(f"{i}: calls {pending} unanswered before a {message.role} message")
        pending = None
        ids, makes_calls = tool_call_ids(message)
        if message.role == MessageRole.ASSISTANT and makes_calls:
            pending = list(ids)
    if pending:
        problems.append(f"end: calls {pending} unanswered")
    return problems
