"""Mistakes that reached LlamaIndex users as raw Python errors (issue 30) are one-line
cupel errors naming the field and what is allowed, raised when the component is built;
the selection event dumps to JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.llms import ChatMessage

from cupel import ConfigurationError
from cupel_llamaindex import CupelChatMemory, CupelMemory, CupelSelectionEvent

LIMIT = "must be an int from 1 to 9,007,199,254,740,992"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token_limit": "100"}, f"CupelMemory.token_limit: {LIMIT}, got '100'"),
        ({"token_limit": -1}, f"CupelMemory.token_limit: {LIMIT}, got -1"),
        ({"token_limit": True}, f"CupelMemory.token_limit: {LIMIT}, got True"),
        ({"token_limit": 10**400}, f"CupelMemory.token_limit: {LIMIT}, got an int of about 401"),
        (
            {"token_limit": 100, "chat_history_token_ratio": math.nan},
            "CupelMemory.chat_history_token_ratio: must be a number from 0 to 1, got nan",
        ),
        (
            {"token_limit": 100, "chat_history_token_ratio": 1.5},
            "CupelMemory.chat_history_token_ratio: must be a number from 0 to 1, got 1.5",
        ),
    ],
)
def test_cupel_memory_limits_are_refused_at_construction(
    kwargs: dict[str, Any], message: str
) -> None:
    for build in (CupelMemory.from_defaults, CupelMemory):
        with pytest.raises(ConfigurationError) as caught:
            build(tokenizer_fn=str.split, **kwargs)
        text = str(caught.value)
        assert text.startswith(message) and "\n" not in text and len(text) < 160, text


def test_cupel_chat_memory_refuses_a_token_limit_too_large_for_float_arithmetic() -> None:
    with pytest.raises(ConfigurationError, match=f"CupelChatMemory.token_limit: {LIMIT}"):
        CupelChatMemory.from_defaults(token_limit=10**400)


def test_the_edges_still_select() -> None:
    for ratio in (0, 1):
        memory = CupelMemory.from_defaults(
            token_limit=1000, chat_history_token_ratio=ratio, tokenizer_fn=str.split
        )
        memory.put(ChatMessage(role="user", content="hi"))
        assert [m.content for m in memory.get()] == ["hi"]


class _Collect(BaseEventHandler):
    events: list[Any]

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, CupelSelectionEvent):
            self.events.append(event)


def test_the_selection_event_dumps_to_json() -> None:
    handler = _Collect(events=[])
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        memory = CupelChatMemory.from_defaults(token_limit=100, tokenizer_fn=str.split)
        memory.put(ChatMessage(role="user", content="hi"))
        memory.get()
    finally:
        root.event_handlers.remove(handler)
    (event,) = handler.events
    data = json.loads(json.dumps(event.model_dump()))
    assert data["timestamp"] == event.timestamp.isoformat()
    assert data["report"]["included"][0]["item"]["content"].endswith("user: hi")


def test_tool_call_arguments_nested_too_deep_are_refused_in_one_line() -> None:
    from llama_index.core.base.llms.types import ToolCallBlock

    arguments: dict[str, Any] = {}
    inner = arguments
    for _ in range(2000):
        inner["a"] = {}
        inner = inner["a"]
    memory = CupelChatMemory.from_defaults(token_limit=100_000, tokenizer_fn=str.split)
    memory.put(ChatMessage(role="user", content="hi"))
    call = ToolCallBlock(tool_call_id="c1", tool_name="t", tool_kwargs=arguments)
    memory.put(ChatMessage(role="assistant", blocks=[call]))
    with pytest.raises(ConfigurationError) as caught:
        memory.get()
    assert str(caught.value) == (
        "tool call arguments nest too deep to encode as JSON (keep them under a few hundred levels)"
    )
