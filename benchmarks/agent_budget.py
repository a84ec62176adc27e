"""The agent-budget benchmark: does a workflow ``FunctionAgent``'s whole request fit the
memory's ``token_limit``, as the provider bills it?

    python -m benchmarks.agent_budget            # 30 runs per row, seed 26
    python -m benchmarks.agent_budget --quick    # 6 runs per row (tests)

llama-index-core 0.14's ``FunctionAgent`` sends ``[system prompt, *memory window, *this
run's tool calls and results]``; the memory is read with ``aget()`` / ``aget(input=...)``
and is never told about the system prompt or the run's tool rounds. Each row runs a
``FunctionAgent`` (system prompt of ~45 tokens; 0-3 tool rounds per run of 1-2 parallel
calls whose results are 20-200 words) driven by LlamaIndex's ``MockFunctionCallingLLM``
over ``CupelChatMemory`` / ``CupelMemory`` with an ``agent_reserve``, and bills every
request the LLM receives with :class:`benchmarks.bill.Bill` (cl100k, 3 per message, tool
calls' names, arguments and ids, result call ids, 3 for the reply; tool definitions are
not billed). ``added`` is the bill of what the agent sends besides the window. The
bound ``bill <= token_limit + max(0, added - agent_reserve)`` is checked on every request.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bill import Bill

__all__ = ["Row", "main", "run"]

SEED = 26
RUNS = 30
QUICK_RUNS = 6
LIMITS = (1000, 4000)
RESERVES = (0, 300, 600, 900)
_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


@dataclass(frozen=True)
class Row:
    """One memory, limit and ``agent_reserve``: requests, how many went over the limit,
    the worst bill / limit, the most the agent added (system prompt and tool rounds)
    and whether every request kept the bound."""

    memory: str
    limit: int
    reserve: int
    requests: int
    over: int
    worst: float
    added: int
    bound: bool


def _agent_requests(memory: Any, runs: int, rng: random.Random) -> list[list[Any]]:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.tools import FunctionTool

    def text(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words))

    def search(query: str = "x") -> str:
        """Search the notes."""
        return text(rng.randint(20, 200))

    requests: list[list[Any]] = []
    state = {"rounds": 0, "target": 0}

    def respond(messages: Sequence[Any], **kwargs: Any) -> Any:
        requests.append(list(messages))
        if messages[-1].role == MessageRole.USER:
            state["rounds"], state["target"] = 0, rng.randint(0, 3)
        if state["rounds"] < state["target"]:
            state["rounds"] += 1
            calls = [
                ToolCallBlock(
                    tool_call_id=f"call_{rng.getrandbits(40):x}",
                    tool_name="search",
                    tool_kwargs={"query": text(rng.randint(2, 8))},
                )
                for _ in range(rng.randint(1, 2))
            ]
            return ChatMessage(role="assistant", blocks=calls)
        return ChatMessage(role="assistant", content=text(rng.randint(10, 80)))

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(search)],
        llm=MockFunctionCallingLLM(response_generator=respond),
        system_prompt="You are a careful research assistant. " + text(30),
    )

    async def scenario() -> None:
        for number in range(runs):
            task = f"question {number}: " + text(rng.randint(5, 40))
            await agent.run(user_msg=task, memory=memory)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(scenario())
    return requests


def _added(request: list[Any], bill: Bill) -> int:
    """The bill of the system prompt and of the messages after the task (the run's tool
    rounds): what the agent sends besides the memory's window."""
    from llama_index.core.base.llms.types import MessageRole

    task = max(i for i, m in enumerate(request) if m.role == MessageRole.USER)
    return sum(bill.llamaindex_message(m) for m in (request[0], *request[task + 1 :]))


def run(runs: int = RUNS, seed: int = SEED) -> list[Row]:
    """Every row (memory x limit x reserve)."""
    from cupel_llamaindex import CupelChatMemory, CupelMemory

    bill = Bill()
    rows = []
    for memory_class in (CupelChatMemory, CupelMemory):
        for limit in LIMITS:
            for reserve in RESERVES:
                rng = random.Random(f"agent:{seed}:{limit}:{reserve}")
                memory = memory_class.from_defaults(token_limit=limit, agent_reserve=reserve)
                requests = _agent_requests(memory, runs, rng)
                billed = [bill.llamaindex(r) for r in requests]
                added = [_added(r, bill) for r in requests]
                rows.append(
                    Row(
                        memory=memory_class.__name__,
                        limit=limit,
                        reserve=reserve,
                        requests=len(requests),
                        over=sum(b > limit for b in billed),
                        worst=max(billed) / limit,
                        added=max(added),
                        bound=all(
                            b <= limit + max(0, a - reserve)
                            for b, a in zip(billed, added, strict=True)
                        ),
                    )
                )
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| memory | token_limit | agent_reserve | requests | over the limit | worst "
        "| most added by the agent | bound kept |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.memory} | {r.limit:,} | {r.reserve} | {r.requests} | "
            f"{r.over / r.requests:.0%} | {r.worst:.2f}x | {r.added} | {r.bound} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="agent runs per row")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs per row")
    args = parser.parse_args(argv)
    rows = run(QUICK_RUNS if args.quick else args.runs, args.seed)
    print(table(rows))
    return 0 if all(r.bound for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
