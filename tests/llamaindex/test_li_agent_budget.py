"""A workflow FunctionAgent's whole request fits ``token_limit`` (issue 26).

llama-index-core 0.14's ``FunctionAgent`` reads its memory with ``aget()`` when a run
starts and ``aget(input=<the task>)`` after each tool round, then sends
``[system prompt, *window, *this run's tool calls and results]``: the system prompt and
the run's tool rounds (its scratchpad, kept in the workflow context and written to the
memory only when the run ends) never reach the memory, and no argument tells it about
them. ``agent_reserve`` keeps room for them in the window.

The LLM is LlamaIndex's own ``MockFunctionCallingLLM`` driven by a scripted response
generator that calls a real ``FunctionTool`` twice per run, two calls at a time, and
records every request it receives; each request is billed by the oracle of
``benchmarks/bill.py`` (cl100k text, 3 per message, tool calls' names, arguments and
ids, a result's call id, 3 for the reply).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.utils import get_tokenizer

from benchmarks.bill import Bill
from cupel_llamaindex import CupelChatMemory, CupelMemory, messages_to_items

pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)

TOKEN_LIMIT = 1500
SYSTEM_PROMPT = (
    "You are a research assistant for a geography magazine. Search the archive before "
    "answering, cite what you found and answer in two sentences at most."
)
ROUNDS = 2  # tool rounds per run
CALLS = 2  # parallel calls per round
_TOPICS = ["nile", "amazon", "yangtze", "danube", "mekong"]


def _finding(query: str) -> str:
    """What the archive holds on a query: 20 to 50 words, fixed per query."""
    topic, part = query.split()
    size = 20 + (_TOPICS.index(topic) * 11 + int(part) * 7) % 31
    return f"{topic} ({part}): " + " ".join(f"fact{i}" for i in range(size))


def search(query: str) -> str:
    """Search the magazine's archive."""
    return _finding(query)


class Script:
    """The LLM's side: on a new task, ``ROUNDS`` rounds of ``CALLS`` parallel searches,
    then an answer; every request received is kept."""

    def __init__(self) -> None:
        self.requests: list[list[ChatMessage]] = []
        self.calls = 0

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.requests.append(list(messages))
        task = max(i for i, m in enumerate(messages) if m.role == MessageRole.USER)
        done = sum(m.role == MessageRole.ASSISTANT for m in messages[task + 1 :])
        if done < ROUNDS:
            blocks = []
            for _ in range(CALLS):
                self.calls += 1
                query = f"{_TOPICS[self.calls % len(_TOPICS)]} {self.calls % 3}"
                blocks.append(
                    ToolCallBlock(
                        tool_call_id=f"call_{self.calls:06d}",
                        tool_name="search",
                        tool_kwargs={"query": query},
                    )
                )
            return ChatMessage(role="assistant", blocks=blocks)
        return ChatMessage(role="assistant", content="The archive says so, in short. " * 3)


def _history(turns: int) -> list[ChatMessage]:
    out = []
    for t in range(turns):
        out.append(ChatMessage(role="user", content=f"Question {t}: " + "how long is it? " * 6))
        out.append(ChatMessage(role="assistant", content=f"Answer {t}: " + "about so long. " * 9))
    return out


def agent_reserve() -> int:
    """``agent_reserve`` sized as documented: the system prompt + 3, plus the largest
    run's tool rounds — each call message (3 + names, JSON arguments, ids) and each
    result (3 + its text and call id) — counted with the memory's own tokenizer, each
    part at its largest."""
    tokenizer = get_tokenizer()
    queries = [f"{topic} {part}" for topic in _TOPICS for part in "012"]
    query = max(queries, key=lambda q: len(tokenizer(q)))
    finding = max(map(_finding, queries), key=lambda text: len(tokenizer(text)))
    call_id = "call_999999"
    calls = [
        ToolCallBlock(tool_call_id=call_id, tool_name="search", tool_kwargs={"query": query})
    ] * CALLS
    results = [
        ChatMessage(role="tool", content=finding, additional_kwargs={"tool_call_id": call_id})
    ] * CALLS
    system = ChatMessage(role="system", content=SYSTEM_PROMPT)
    counts = messages_to_items(
        [system, ChatMessage(role="assistant", blocks=calls), *results],
        tokenizer_fn=tokenizer,
    ).counts
    return counts[0] + ROUNDS * sum(counts[1:])


def _memory(kind: str, reserve: int) -> CupelChatMemory | CupelMemory:
    if kind == "chat":
        return CupelChatMemory.from_defaults(
            chat_history=_history(40), token_limit=TOKEN_LIMIT, agent_reserve=reserve
        )
    memory = CupelMemory.from_defaults(token_limit=TOKEN_LIMIT, agent_reserve=reserve)
    memory.put_messages(_history(40))
    return memory


def _run(memory: CupelChatMemory | CupelMemory, runs: int = 5) -> list[list[ChatMessage]]:
    script = Script()
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(search)],
        llm=MockFunctionCallingLLM(response_generator=script),
        system_prompt=SYSTEM_PROMPT,
    )

    async def scenario() -> None:
        for run in range(runs):
            task = f"Task {run}: compare the rivers' lengths " + "and their basins " * run
            await agent.run(user_msg=task, memory=memory)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.run(scenario())
    assert len(script.requests) == runs * (ROUNDS + 1)
    return script.requests


def _added_by_the_agent(request: list[ChatMessage], bill: Bill) -> int:
    """The bill of what the agent sends besides the memory's window: its system prompt
    (first) and this run's tool rounds (after the task, the window's last message)."""
    assert request[0].role == MessageRole.SYSTEM and request[0].content == SYSTEM_PROMPT
    task = max(i for i, m in enumerate(request) if m.role == MessageRole.USER)
    return sum(bill.llamaindex_message(m) for m in (request[0], *request[task + 1 :]))


@pytest.mark.parametrize("kind", ["chat", "memory"])
def test_with_agent_reserve_every_request_of_a_function_agent_fits_the_limit(kind: str) -> None:
    bill = Bill()
    reserve = agent_reserve()
    requests = _run(_memory(kind, reserve))
    billed = [bill.llamaindex(r) for r in requests]
    assert max(billed) <= TOKEN_LIMIT, billed
    # the window still fills what the reserve leaves
    windows = [bill.llamaindex(r) - _added_by_the_agent(r, bill) for r in requests]
    assert min(windows) > 0.9 * (TOKEN_LIMIT - reserve), windows
    # every tool round reached the LLM: calls, then their results, in order
    last = requests[-1]
    assert [m.role for m in last[-(CALLS + 1) :]] == [MessageRole.ASSISTANT] + [
        MessageRole.TOOL
    ] * CALLS


@pytest.mark.parametrize("kind", ["chat", "memory"])
@pytest.mark.parametrize("reserve", [0, 300])
def test_a_request_exceeds_the_limit_by_at_most_what_the_agent_adds_beyond_the_reserve(
    kind: str, reserve: int
) -> None:
    bill = Bill()
    requests = _run(_memory(kind, reserve))
    over = 0
    for request in requests:
        added = _added_by_the_agent(request, bill)
        window = bill.llamaindex(request) - added  # the memory's window and the reply
        assert window <= TOKEN_LIMIT - reserve
        over += bill.llamaindex(request) > TOKEN_LIMIT
    assert over > 0  # without the agent's share reserved, requests do go over


def test_the_agent_reads_the_memory_at_the_start_and_after_each_tool_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[tuple[object, dict[str, Any]]] = []
    aget = CupelChatMemory.aget

    async def recorded(self: CupelChatMemory, *args: Any, **kwargs: Any) -> list[ChatMessage]:
        reads.append((args, kwargs))
        return await aget(self, *args, **kwargs)

    monkeypatch.setattr(CupelChatMemory, "aget", recorded)
    _run(_memory("chat", agent_reserve()), runs=1)
    task = "Task 0: compare the rivers' lengths "
    # start: aget(); after each round: aget(input=task); after the answer: aget()
    assert reads == [((), {})] + [((), {"input": task})] * ROUNDS + [((), {})]
