"""The prompt-cache benchmark's model: providers' cache pricing (:data:`PRICINGS`), what a
request costs given the prefix it shares with the previous one, and the generated sessions
(long chats and agent runs) replayed by :mod:`benchmarks.prompt_cache`."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.window_cases import Case, Message, _Builder, approximate_tokens

__all__ = [
    "AGENT_ROUNDS",
    "PRICINGS",
    "Pricing",
    "Session",
    "cached_tokens",
    "common_prefix",
    "generate_session",
    "request_cost",
]

AGENT_ROUNDS = (20, 80)
"""How many tool rounds an agent session's tasks take (a range)."""


# -- pricing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pricing:
    """A provider's prompt-cache prices, as multiples of its uncached input price."""

    name: str
    read: float
    """Price of a cached (read) input token."""
    write: float
    """Price of an input token that is not read from the cache (1.0: no write premium)."""
    minimum: int
    """Shortest prefix the provider caches, in tokens."""
    step: int
    """Granularity of the cached prefix beyond the minimum, in tokens."""
    source: str


PRICINGS: tuple[Pricing, ...] = (
    Pricing(
        "Anthropic",
        read=0.10,
        write=1.25,
        minimum=1024,
        step=1,
        source=(
            "Anthropic prompt caching (5-minute cache): writes 1.25x, reads 0.1x the base "
            "input price, minimum 1,024 tokens (Claude Sonnet/Opus); pricing page as "
            "checked 2026-06"
        ),
    ),
    Pricing(
        "OpenAI",
        read=0.50,
        write=1.00,
        minimum=1024,
        step=128,
        source=(
            "OpenAI automatic prompt caching (GPT-4o family): cached input 0.5x, no write "
            "premium, from 1,024 tokens in 128-token increments; 'Prompt Caching in the "
            "API', 2024-10-01"
        ),
    ),
)
"""The pricing schemes costs are given under (each a multiple of the uncached price)."""


def cached_tokens(prefix: int, pricing: Pricing) -> int:
    """The tokens of a ``prefix`` shared with the previous request that ``pricing``'s
    provider reads from its cache: none below the minimum, else rounded down to its step.

    >>> [cached_tokens(n, PRICINGS[1]) for n in (1000, 1024, 1200, 1300)]
    [0, 1024, 1152, 1280]
    """
    if prefix < pricing.minimum:
        return 0
    return pricing.minimum + (prefix - pricing.minimum) // pricing.step * pricing.step


def request_cost(total: int, cached: int, pricing: Pricing) -> float:
    """The input cost of a request of ``total`` tokens of which ``cached`` are read, in
    uncached-token units.

    >>> request_cost(1000, 800, PRICINGS[0])  # 800 x 0.1 + 200 x 1.25
    330.0
    """
    return cached * pricing.read + (total - cached) * pricing.write


def common_prefix(previous: Sequence[int], current: Sequence[int]) -> int:
    """How many leading messages two requests share (message ids, in request order).

    >>> common_prefix([0, 3, 4], [0, 3, 4, 5]), common_prefix([0, 3, 4], [0, 4, 5])
    (3, 1)
    """
    count = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        count += 1
    return count


# -- sessions --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Session:
    """A generated session: its messages and where the model is called (the number of
    messages the history holds at each call)."""

    kind: str
    number: int
    messages: tuple[Message, ...]
    calls: tuple[int, ...]
    budget: int

    @property
    def name(self) -> str:
        return f"{self.kind} #{self.number}"

    def at_budget(self) -> list[int]:
        """The calls (their positions in :attr:`calls`) whose history no longer fits."""
        sizes = [approximate_tokens(m) for m in self.messages]
        out = []
        total = 0
        done = 0
        for position, count in enumerate(self.calls):
            while done < count:
                total += sizes[done]
                done += 1
            if total > self.budget:
                out.append(position)
        return out

    def case(self) -> Case:
        """The session as a window-quality case (for the framework conversions)."""
        return Case(self.kind, self.number, self.messages, self.budget, "blocks")


def generate_session(kind: str, number: int, *, seed: int, calls: int, budget: int) -> Session:
    """Session ``number`` of ``kind`` (``"chat"`` or ``"agent"``) with at least ``calls``
    calls at ``budget``, from ``seed`` alone.

    - chat: a system prompt (150-300 tokens); each turn a user message (20-150), a tool
      round one turn in five, an answer (80-350); a call after the user message and
      after the tool results;
    - agent: a system prompt (300-500); tasks (30-300 tokens) each followed by 20-80
      tool rounds (1-3 parallel calls, results of 20-400 tokens) and a short answer; a
      call after the task and after every round's results.

    >>> s = generate_session("agent", 0, seed=1, calls=5, budget=2000)
    >>> s == generate_session("agent", 0, seed=1, calls=5, budget=2000), len(s.at_budget()) >= 5
    (True, True)
    """
    if kind not in ("chat", "agent"):
        raise ValueError(f"kind must be 'chat' or 'agent', got {kind!r}")
    rng = random.Random(f"prompt-cache:{seed}:{kind}:{number}")
    b = _Builder(rng, messy=False)
    points: list[int] = []
    counted = [0, 0]  # messages counted, their tokens
    at_budget = 0

    def call() -> None:
        nonlocal at_budget
        while counted[0] < len(b.messages):
            counted[1] += approximate_tokens(b.messages[counted[0]])
            counted[0] += 1
        points.append(len(b.messages))
        at_budget += counted[1] > budget

    if kind == "chat":
        b.add("system", rng.randint(150, 300))
        while at_budget < calls:
            b.add("user", rng.randint(20, 150))
            call()
            if rng.random() < 0.2:
                b.tool_round(rng.choice([1, 2]), None, rng.choice([0, rng.randint(5, 40)]))
                call()
            b.add("assistant", rng.randint(80, 350))
    else:
        b.add("system", rng.randint(300, 500))
        while at_budget < calls:
            b.add("user", rng.randint(30, 300))
            call()
            for _ in range(rng.randint(*AGENT_ROUNDS)):
                b.tool_round(rng.choice([1, 1, 2, 3]), None, rng.choice([0, 0, rng.randint(5, 60)]))
                call()
                if at_budget >= calls:
                    break
            b.add("assistant", rng.randint(50, 200))
    return Session(kind, number, tuple(b.messages), tuple(points), budget)
