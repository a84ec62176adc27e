"""``truncate_oversized=True``: a message too large for any window is sent as a cut copy.

The newest unit (a huge tool result) or the pinned latest human message (a pasted log)
that alone exceeds the budget: by default a clear error (pinned) or left out (unpinned);
with the option a copy of it, media dropped first, then its text cut to head and tail
around a marker — never tool-call arguments or ids — reported on the unit's item. The
original objects are untouched and the window stays valid and within budget.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from llama_index.core.utils import get_tokenizer

from cupel import PinnedBudgetError
from cupel.counting import REPLY_TOKENS
from cupel_langchain import (
    CupelContextMiddleware,
    approximate_message_tokens,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)

ENCODE = get_tokenizer()
LOG = "\n".join(
    f"2026-11-27T10:{i // 60:02d}:{i % 60:02d} worker-{i % 7} ok id={i}" for i in range(2000)
)


def cl100k_bill(messages: list[BaseMessage]) -> int:
    from benchmarks.bill import Bill

    return Bill().langchain(messages)


def agent_history() -> list[BaseMessage]:
    return [
        SystemMessage("You are an SRE assistant."),
        HumanMessage("Why did the deploy fail? Read the log."),
        AIMessage("", tool_calls=[{"name": "read_log", "args": {"lines": 2000}, "id": "call_9"}]),
        ToolMessage(LOG, tool_call_id="call_9"),
    ]


def test_by_default_the_oversized_tool_result_is_left_out_with_its_call() -> None:
    history = agent_history()
    kept = select_messages(history, max_tokens=600)
    assert kept == history[:2]


def test_the_oversized_tool_result_is_sent_cut_with_its_call_and_reported() -> None:
    history = agent_history()
    before = LOG
    kept, report = select_messages_with_report(history, max_tokens=600, truncate_oversized=True)
    assert kept[:3] == history[:3] and kept[2] is history[2]  # the call: the same object
    cut = kept[3]
    assert isinstance(cut, ToolMessage) and cut is not history[3]
    assert cut.tool_call_id == "call_9" and history[3].content == before  # original untouched
    assert isinstance(cut.content, str)
    assert cut.content.startswith(LOG[:40]) and cut.content.endswith(LOG[-30:])
    assert "tokens cut ...]" in cut.content
    assert tool_call_problems(kept) == []
    assert sum(map(approximate_message_tokens, kept)) + REPLY_TOKENS <= 600
    entry = next(
        e for e in report.included if e.item.metadata.get("langchain.type") == "tool_group"
    )
    cut_tokens = entry.item.metadata["cupel:cut_tokens"]
    assert cut_tokens == approximate_message_tokens(history[3]) - approximate_message_tokens(cut)
    assert cut_tokens > 1000


def test_with_a_real_text_counter_the_request_is_billed_within_the_budget() -> None:
    history = agent_history()
    kept = select_messages(history, max_tokens=800, token_counter=ENCODE, truncate_oversized=True)
    assert len(kept) == 4 and cl100k_bill(kept) <= 800
    assert cl100k_bill(kept) >= 700  # cut to fit, not to nothing


def test_a_pasted_log_as_the_question_is_an_error_by_default_and_cut_with_the_option() -> None:
    history = [SystemMessage("Be brief."), HumanMessage("What is wrong here?\n" + LOG)]
    with pytest.raises(PinnedBudgetError):
        select_messages(history, max_tokens=500)
    kept = select_messages(history, max_tokens=500, truncate_oversized=True)
    assert kept[0] is history[0]
    assert kept[1].content.startswith("What is wrong here?")
    assert sum(map(approximate_message_tokens, kept)) + REPLY_TOKENS <= 500


def png(width: int, height: int) -> str:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    data = (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    )
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_media_are_dropped_before_text_is_cut() -> None:
    question: list[Any] = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": png(2000, 2000)}},
    ]
    history = [SystemMessage("Be brief."), HumanMessage(question)]
    kept = select_messages(history, max_tokens=200, truncate_oversized=True)
    content = kept[1].content
    assert isinstance(content, list) and content[0] == question[0]  # the text kept whole
    assert [block["type"] for block in content] == ["text", "text"]
    assert "media removed" in content[1]["text"]
    assert history[1].content == question


def test_tool_call_arguments_are_never_cut() -> None:
    huge_args = {"query": "x " * 3000}
    history = [
        HumanMessage("Search."),
        AIMessage("", tool_calls=[{"name": "search", "args": huge_args, "id": "c1"}]),
        ToolMessage("found", tool_call_id="c1"),
    ]
    kept = select_messages(history, max_tokens=300, truncate_oversized=True)
    assert kept == history[:1]  # the call cannot be cut: the unit stays out, as by default


@tool
def read_log(lines: int) -> str:
    """Read the deploy log."""
    return LOG


def test_an_agent_with_a_huge_tool_result_gets_requests_within_the_budget() -> None:
    seen: list[list[BaseMessage]] = []

    class Recording(GenericFakeChatModel):
        """LangChain's fake chat model, accepting tools like a real one and recording
        every request."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Recording:
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    replies = iter(
        [
            AIMessage("", tool_calls=[{"name": "read_log", "args": {"lines": 2000}, "id": "c1"}]),
            AIMessage("The log shows every worker ok; the deploy did not fail on them."),
        ]
    )
    budget = 1500
    middleware = CupelContextMiddleware(
        max_tokens=budget, token_counter=ENCODE, truncate_oversized=True
    )
    agent = create_agent(
        Recording(messages=replies),
        tools=[read_log],
        system_prompt="You are an SRE assistant.",
        middleware=[middleware],
    )
    result = agent.invoke({"messages": [HumanMessage("Why did the deploy fail? Read the log.")]})
    assert result["messages"][-1].content.startswith("The log shows")
    assert len(seen) == 2
    final = seen[-1]
    assert isinstance(final[-1], ToolMessage) and "tokens cut ...]" in str(final[-1].content)
    for request in seen:
        assert tool_call_problems(request) == []
        assert cl100k_bill(request) <= budget  # the tool definition is reserved as well
    assert result["messages"][-2].content == LOG  # the agent's state keeps the whole result
