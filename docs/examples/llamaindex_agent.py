"""A FunctionAgent (llama_index.core.agent.workflow) with CupelChatMemory.

Runs offline with MockFunctionCallingLLM, which calls the tool on a new task and answers
once the tool result is in. The memory already holds a long history with tool calls; the
window the agent sends keeps every tool call together with its result, and with
``agent_reserve`` the whole request (system prompt, window, this run's tool round and the
reply) fits ``token_limit``.

    python docs/examples/llamaindex_agent.py
"""

from __future__ import annotations

import asyncio

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLMWithChatMemoryOfLastCall
from llama_index.core.tools import FunctionTool

from cupel_llamaindex import CupelChatMemory


def weather(city: str = "Lisbon") -> str:
    """Current weather for a city."""
    return f"Sunny and 21 degrees in {city}."


def respond(messages: list[ChatMessage], **kwargs: object) -> ChatMessage:
    if messages[-1].role == MessageRole.USER:
        call = ToolCallBlock(tool_call_id="call-new", tool_name="weather", tool_kwargs={})
        return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content="It is sunny: pack light clothes.")


def history() -> list[ChatMessage]:
    out = []
    for day in range(12):
        call_id = f"call-{day}"
        out += [
            ChatMessage(role="user", content=f"Day {day}: what should I wear today?"),
            ChatMessage(
                role="assistant",
                blocks=[ToolCallBlock(tool_call_id=call_id, tool_name="weather", tool_kwargs={})],
            ),
            ChatMessage(
                role="tool",
                content=f"Day {day}: cloudy, {10 + day} degrees.",
                additional_kwargs={"tool_call_id": call_id},
            ),
            ChatMessage(role="assistant", content=f"Day {day}: bring a light jacket."),
        ]
    return out


async def main() -> None:
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=respond)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather)], llm=llm, system_prompt="Be brief."
    )
    # agent_reserve: room in token_limit for what the agent sends besides the memory, its
    # system prompt (3 + 3 tokens) and this run's tool round (a call and its result, ~25)
    memory = CupelChatMemory.from_defaults(
        chat_history=history(), token_limit=150, agent_reserve=35
    )

    answer = await agent.run(user_msg="And what about tomorrow?", memory=memory)

    print("answer:", answer)
    sent = llm.last_chat_messages or []
    print(f"the LLM's last call received {len(sent)} messages:")
    for message in sent:
        kinds = ",".join(type(b).__name__ for b in message.blocks)
        print(f"  {message.role.value:9s} [{kinds}] {str(message.content)[:50]}")
    report = memory.last_report
    assert report is not None
    print(
        f"memory window: {len(report.included)} units, {report.included_tokens} tokens; "
        f"{len(report.excluded)} older units left out"
    )


if __name__ == "__main__":
    asyncio.run(main())
