"""``truncate_oversized=True`` on the LlamaIndex memories: a message too large for any
window comes back as a cut copy instead of a ``PinnedBudgetError`` or being left out.

Media blocks go first, then the longest text block is cut to head and tail around a
marker; tool calls never change; the stored messages are untouched; the report's item
carries ``cupel:cut_tokens``; the window is within ``token_limit`` by the provider's bill.
"""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)

from benchmarks.bill import Bill
from benchmarks.bill_cases import png
from cupel import PinnedBudgetError
from cupel_llamaindex import CupelChatMemory, CupelMemory

LOG = "\n".join(f"2026-11-27T10:{i % 60:02d} worker-{i % 7} ok id={i}" for i in range(2000))
LIMIT = 600


def agent_history() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="You are an SRE assistant."),
        ChatMessage(role="user", content="Why did the deploy fail? Read the log."),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="read_log", tool_kwargs={})],
        ),
        ChatMessage(role="tool", content=LOG, additional_kwargs={"tool_call_id": "c1"}),
    ]


def chat_memory(history: list[ChatMessage], **options: object) -> CupelChatMemory:
    return CupelChatMemory.from_defaults(chat_history=history, token_limit=LIMIT, **options)  # type: ignore[arg-type]


def cupel_memory(history: list[ChatMessage], **options: object) -> CupelMemory:
    memory = CupelMemory.from_defaults(token_limit=LIMIT, **options)  # type: ignore[arg-type]
    memory.put_messages(history)
    return memory


@pytest.mark.parametrize("make", [chat_memory, cupel_memory])
def test_a_huge_tool_result_is_cut_to_fit_with_its_call(make: object) -> None:
    history = agent_history()
    by_default = make(history)  # type: ignore[operator]
    assert [m.role for m in by_default.get()] == [MessageRole.SYSTEM, MessageRole.USER]
    memory = make(history, truncate_oversized=True)  # type: ignore[operator]
    window = memory.get()
    assert [m.role for m in window] == [
        MessageRole.SYSTEM,
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
    ]
    result = window[-1]
    assert result.additional_kwargs["tool_call_id"] == "c1"
    assert str(result.content).startswith(LOG[:30]) and "tokens cut ...]" in str(result.content)
    assert history[3].content == LOG  # the stored message is untouched
    assert Bill().llamaindex(window) <= LIMIT
    assert asyncio.run(memory.aget())[-1].content == result.content
    cut = [e for e in memory.last_report.included if "cupel:cut_tokens" in e.item.metadata]
    assert len(cut) == 1 and cut[0].item.metadata["cupel:cut_tokens"] > 1000


def test_a_pasted_log_as_the_question_is_cut_and_its_image_dropped_first() -> None:
    question = ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="What is wrong here?\n" + LOG),
            ImageBlock(image=png(1600, 1200), image_mimetype="image/png"),
        ],
    )
    history = [ChatMessage(role="system", content="Be brief."), question]
    with pytest.raises(PinnedBudgetError):
        chat_memory(history).get()
    window = chat_memory(history, truncate_oversized=True).get()
    blocks = window[1].blocks
    assert [type(b).__name__ for b in blocks] == ["TextBlock", "TextBlock"]
    assert blocks[0].text.startswith("What is wrong here?")  # type: ignore[union-attr]
    assert "media removed" in blocks[1].text  # type: ignore[union-attr]
    assert Bill().llamaindex(window) <= LIMIT
    assert len(question.blocks) == 2 and isinstance(question.blocks[1], ImageBlock)
