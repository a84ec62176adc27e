"""CupelMemory: LlamaIndex's current Memory API (SQL chat store, memory blocks) with cupel
choosing the history window and the memory blocks under one budget, used by a
FunctionAgent that reuses one workflow Context across runs (mock LLM, no network).

Run: python docs/examples/llamaindex_memory.py
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.memory import StaticMemoryBlock
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from cupel_llamaindex import CupelMemory


def melting_point(element: str = "iron") -> str:
    """Look up an element's melting point."""
    return f"{element}: 1,538 °C"


def words(text: str) -> list[str]:
    return text.split()


def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    return ChatMessage(role="assistant", content="Iron melts at 1,538 °C. " * 3)


async def main() -> None:
    memory = CupelMemory.from_defaults(
        token_limit=90,
        tokenizer_fn=words,
        memory_blocks=[
            StaticMemoryBlock(
                name="profile", static_content="The user is Ada, a chemist.", priority=0
            ),
            StaticMemoryBlock(
                name="style", static_content="Answer in one sentence. " * 2, priority=2
            ),
            StaticMemoryBlock(name="trivia", static_content="Ada likes trams. " * 12, priority=1),
        ],
    )
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=respond)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(melting_point)], llm=llm)
    ctx = Context(agent)  # reused: every run works on the memory passed in
    for question in ("What melts at 1,538 °C?", "And copper?", "And gold?", "And tin?"):
        await agent.run(user_msg=question, memory=memory, ctx=ctx)
        report = memory.last_report
        assert report is not None
        blocks = [
            e.item.metadata["llamaindex_memory_block"]
            for e in report.included
            if "llamaindex_memory_block" in e.item.metadata
        ]
        sent = llm.last_chat_messages or []
        left_out = [e.reason.name for e in report.excluded]
        print(
            f"{question:<24} sent {len(sent)} messages, {report.included_tokens} tokens; "
            f"blocks {blocks}; left out {left_out}; stored {len(memory.get_all())}"
        )


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Context skips the live memory on purpose
        asyncio.run(main())
