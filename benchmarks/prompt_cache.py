"""The prompt-cache benchmark: how much of each request a provider's prompt cache serves.

    python -m benchmarks.prompt_cache                  # 3 sessions per kind, >= 150 calls each
    python -m benchmarks.prompt_cache --quick          # 1 short session per kind (tests)
    python -m benchmarks.prompt_cache --sweep          # + the low-water sweep (the plot's data)
    python -m benchmarks.prompt_cache --docs docs/cache-stable.md   # refresh the doc's tables

Long generated sessions (:func:`generate_session`: a chat, and an agent working through
tasks with tool rounds) are replayed call by call through every selector, each keeping
whatever it keeps across calls (the memories store the messages as they come; the
cache-stable components remember their previous window). Every request is the window the
selector returns, and is compared with the previous request of the same session:

- **cache-read share**: tokens of the longest common prefix of the two requests (whole
  messages, system prompt included: providers cache the request's leading bytes) over the
  request's tokens, summed over the calls at the budget — once a provider's minimum
  (1,024 tokens) is met, rounded as the provider rounds (:data:`PRICINGS`);
- **input cost** under each pricing scheme, as a multiple of the uncached price of the
  same requests;
- **mean window**: request tokens / budget;
- the **coherent-window figures** of every window (:mod:`benchmarks.window_metrics`):
  holes, lost tasks, missing replies, empty and invalid windows, over budget, lost system
  prompts.

Only calls *at the budget* are measured: those whose history no longer fits (before that,
every selector sends the whole history). Deterministic: nothing is timed, the same seed
gives the same figures on any machine.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/prompt_cache.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.window_cases import Case, Message, _Builder, approximate_tokens
from benchmarks.window_metrics import align, score_window
from cupel.conversation import Conversation

__all__ = [
    "PRICINGS",
    "SELECTORS",
    "Pricing",
    "Result",
    "Selector",
    "Session",
    "cached_tokens",
    "common_prefix",
    "generate_session",
    "main",
    "replay",
    "request_cost",
    "sweep",
]

SEED = 20261216
BUDGET = 4000
SESSIONS = 3
CALLS = 150
QUICK_CALLS = 30
READ_TARGET = 0.75
COST_TARGET = 0.40
WINDOW_TARGET = 0.65
AGENT_ROUNDS = (20, 80)
"""Tool rounds per task in an agent session."""
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TABLE_START = "<!-- prompt-cache table: start -->"
TABLE_END = "<!-- prompt-cache table: end -->"
SWEEP_START = "<!-- prompt-cache sweep: start -->"
SWEEP_END = "<!-- prompt-cache sweep: end -->"


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


# -- selectors -------------------------------------------------------------------------------------
Call = Callable[[list[Any], list[Any]], Sequence[Any]]
"""One call of a selector: ``(history so far, messages new since the last call)`` →
the window sent to the model."""


@dataclass(frozen=True)
class Selector:
    """A selector replayed over a session: ``start(budget)`` gives a fresh per-session
    :data:`Call` (state lives in its closure or in the component it builds)."""

    name: str
    framework: str
    cupel: bool
    stable: bool
    start: Callable[[int], Call]
    setup: str


def _trim(budget: int) -> Call:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        return trim_messages(
            history,
            max_tokens=budget,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
            start_on="human",
        )

    return call


def _select_messages(low_water: bool | float) -> Callable[[int], Call]:
    def start(budget: int) -> Call:
        from cupel_langchain import select_messages

        previous: list[Any] | None = None

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            nonlocal previous
            if low_water is False:
                return select_messages(history, max_tokens=budget)
            window = select_messages(
                history, max_tokens=budget, cache_stable=low_water, previous=previous
            )
            previous = window
            return window

        return call

    return start


def _selector(budget: int) -> Call:
    from cupel_langchain import CupelMessageSelector

    selector = CupelMessageSelector(max_tokens=budget, cache_stable=True)
    config = {"configurable": {"thread_id": "session"}}
    return lambda history, new: selector.invoke(history, config=config)  # type: ignore[arg-type]


def _middleware(budget: int) -> Call:
    from langchain.agents.middleware import ModelRequest, ModelResponse
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from cupel_langchain import CupelContextMiddleware

    middleware = CupelContextMiddleware(max_tokens=budget, cache_stable=True)
    model = GenericFakeChatModel(messages=iter([AIMessage("ok")]))

    def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
        request = ModelRequest(model=model, messages=history[1:], system_message=history[0])
        seen: list[ModelRequest[Any]] = []

        def handler(selected: ModelRequest[Any]) -> ModelResponse[Any]:
            seen.append(selected)
            return ModelResponse(result=[AIMessage("ok")])

        middleware.wrap_model_call(request, handler)
        (sent,) = seen
        head = [sent.system_message] if sent.system_message is not None else []
        return [*head, *sent.messages]

    return call


def _memory(make: Callable[[int], Any]) -> Callable[[int], Call]:
    def start(budget: int) -> Call:
        memory = make(budget)

        def call(history: list[Any], new: list[Any]) -> Sequence[Any]:
            for message in new:  # as a chat engine or an agent stores them
                memory.put(message)
            return memory.get()  # type: ignore[no-any-return]

        return call

    return start


def _buffer(budget: int) -> Any:
    from llama_index.core.memory import ChatMemoryBuffer

    return ChatMemoryBuffer.from_defaults(token_limit=budget)


def _li_memory(budget: int) -> Any:
    from llama_index.core.memory import Memory

    return Memory.from_defaults(token_limit=budget)


def _chat_memory(cache_stable: bool) -> Callable[[int], Any]:
    def make(budget: int) -> Any:
        from cupel_llamaindex import CupelChatMemory

        return CupelChatMemory.from_defaults(token_limit=budget, cache_stable=cache_stable)

    return make


def _cupel_memory(cache_stable: bool) -> Callable[[int], Any]:
    def make(budget: int) -> Any:
        from cupel_llamaindex import CupelMemory

        return CupelMemory.from_defaults(token_limit=budget, cache_stable=cache_stable)

    return make


SELECTORS: tuple[Selector, ...] = (
    Selector(
        "trim_messages",
        "langchain",
        False,
        False,
        _trim,
        'trim_messages(history, max_tokens=B, strategy="last", '
        'token_counter=count_tokens_approximately, include_system=True, start_on="human")',
    ),
    Selector(
        "select_messages",
        "langchain",
        True,
        False,
        _select_messages(False),
        "select_messages(history, max_tokens=B)  (cupel's default)",
    ),
    Selector(
        "select_messages cache_stable",
        "langchain",
        True,
        True,
        _select_messages(True),
        "select_messages(history, max_tokens=B, cache_stable=True, previous=window)",
    ),
    Selector(
        "CupelMessageSelector cache_stable",
        "langchain",
        True,
        True,
        _selector,
        "CupelMessageSelector(max_tokens=B, cache_stable=True), config thread_id",
    ),
    Selector(
        "CupelContextMiddleware cache_stable",
        "langchain",
        True,
        True,
        _middleware,
        "CupelContextMiddleware(max_tokens=B, cache_stable=True).wrap_model_call(...)",
    ),
    Selector(
        "ChatMemoryBuffer",
        "llamaindex",
        False,
        False,
        _memory(_buffer),
        "ChatMemoryBuffer.from_defaults(token_limit=B); put new messages; get()",
    ),
    Selector(
        "Memory",
        "llamaindex",
        False,
        False,
        _memory(_li_memory),
        "Memory.from_defaults(token_limit=B) (token_flush_size flushes in chunks); put; get()",
    ),
    Selector(
        "CupelChatMemory",
        "llamaindex",
        True,
        False,
        _memory(_chat_memory(False)),
        "CupelChatMemory.from_defaults(token_limit=B)  (cupel's default)",
    ),
    Selector(
        "CupelChatMemory cache_stable",
        "llamaindex",
        True,
        True,
        _memory(_chat_memory(True)),
        "CupelChatMemory.from_defaults(token_limit=B, cache_stable=True)",
    ),
    Selector(
        "CupelMemory",
        "llamaindex",
        True,
        False,
        _memory(_cupel_memory(False)),
        "CupelMemory.from_defaults(token_limit=B)  (cupel's default)",
    ),
    Selector(
        "CupelMemory cache_stable",
        "llamaindex",
        True,
        True,
        _memory(_cupel_memory(True)),
        "CupelMemory.from_defaults(token_limit=B, cache_stable=True)",
    ),
)
"""Every selector: LangChain first, incumbents and cupel's defaults before the
cache-stable variants."""


# -- replay ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """A session in one framework: messages, structure, tokens per message."""

    messages: list[Any]
    tokens: list[int]
    roles: list[str]
    calls: dict[int, list[str | None]]
    answers: dict[int, str | None]

    def count(self, indices: Sequence[int]) -> int:
        """Tokens of the messages at ``indices``."""
        tokens = self.tokens
        return sum(tokens[i] for i in indices)

    def conversation(self, count: int) -> Conversation:
        """The structure of the first ``count`` messages."""
        return Conversation(
            self.roles[:count],
            calls={i: c for i, c in self.calls.items() if i < count},
            answers={i: a for i, a in self.answers.items() if i < count},
        )


def prepare(session: Session, framework: str) -> Prepared:
    """The session's messages in ``framework``, counted as the window-quality benchmark
    counts them (``count_tokens_approximately``; LlamaIndex's default tokenizer on the
    text and tool calls)."""
    from benchmarks.window_quality import prepare_langchain, prepare_llamaindex

    if framework == "langchain":
        prepared = prepare_langchain(session.case())
    else:
        from llama_index.core.utils import get_tokenizer

        prepared = prepare_llamaindex(session.case(), get_tokenizer())
    roles = [message.role for message in session.messages]
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    for index, message in enumerate(session.messages):
        if message.calls:
            calls[index] = [c.id for c in message.calls]
        if message.answers is not None:
            answers[index] = message.answers
    return Prepared(prepared.messages, prepared.tokens, roles, calls, answers)


@dataclass
class Result:
    """One selector over one session: per call at the budget, the request's tokens and
    its prefix shared with the previous request; the window figures."""

    selector: str
    session: str
    kind: str
    budget: int
    totals: list[int] = field(default_factory=list)
    prefixes: list[int] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    error: str | None = None

    @property
    def calls(self) -> int:
        return len(self.totals)

    def read_share(self, pricing: Pricing) -> float:
        """Tokens read from the cache / request tokens, over the calls."""
        total = sum(self.totals)
        read = sum(cached_tokens(p, pricing) for p in self.prefixes)
        return read / total if total else 0.0

    def cost(self, pricing: Pricing) -> float:
        """The input cost as a multiple of the uncached cost of the same requests."""
        total = sum(self.totals)
        spent = sum(
            request_cost(t, cached_tokens(p, pricing), pricing)
            for t, p in zip(self.totals, self.prefixes, strict=True)
        )
        return spent / total if total else 0.0

    def window(self) -> float:
        """Mean request tokens / budget."""
        return statistics.fmean(self.totals) / self.budget if self.totals else 0.0


FAILURES = ("holes", "task_lost", "no_reply", "empty", "invalid", "over_budget", "system_lost")
"""The coherent-window figures counted for every window (targets: 0)."""


def replay(session: Session, selector: Selector, prepared: Prepared) -> Result:
    """``selector`` over ``session``, call by call."""
    result = Result(selector.name, session.name, session.kind, session.budget)
    measured = set(session.at_budget())
    call = selector.start(session.budget)
    history = prepared.messages
    previous: list[int] = []
    seen = 0
    failures = dict.fromkeys(FAILURES, 0)
    try:
        for position, count in enumerate(session.calls):
            window = list(call(history[:count], history[seen:count]))
            seen = count
            kept, _ = align(window, history[:count])
            request = sorted(kept)
            if position in measured:
                result.totals.append(prepared.count(request))
                shared = common_prefix(previous, request)
                result.prefixes.append(prepared.count(request[:shared]))
                score = score_window(
                    prepared.conversation(count),
                    request,
                    tokens=prepared.count,
                    budget=session.budget,
                )
                for name in FAILURES:
                    failures[name] += bool(getattr(score, name))
            previous = request
    except Exception as exc:  # an incumbent may fail: reported, not fatal
        result.error = f"{type(exc).__name__}: {exc}"
    result.failures = failures
    return result


def generate_sessions(per_kind: int, *, seed: int, calls: int, budget: int) -> list[Session]:
    """``per_kind`` chat sessions, then as many agent sessions."""
    return [
        generate_session(kind, number, seed=seed, calls=calls, budget=budget)
        for kind in ("chat", "agent")
        for number in range(per_kind)
    ]


def run(sessions: Sequence[Session], selectors: Sequence[Selector] = SELECTORS) -> list[Result]:
    """Every selector over every session."""
    out: list[Result] = []
    for session in sessions:
        prepared: dict[str, Prepared] = {}
        for selector in selectors:
            if selector.framework not in prepared:
                prepared[selector.framework] = prepare(session, selector.framework)
            out.append(replay(session, selector, prepared[selector.framework]))
    return out


# -- summary ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One selector on one kind of session, every session pooled."""

    selector: str
    framework: str
    cupel: bool
    stable: bool
    kind: str
    calls: int
    errors: int
    read: dict[str, float]
    cost: dict[str, float]
    window: float
    failures: dict[str, int]


def summarize(results: Sequence[Result], selectors: Sequence[Selector] = SELECTORS) -> list[Row]:
    """Per selector and kind: the shares and costs over all calls pooled (tokens
    weighted), the mean window over all calls."""
    rows: list[Row] = []
    for selector in selectors:
        for kind in ("chat", "agent"):
            mine = [r for r in results if r.selector == selector.name and r.kind == kind]
            if not mine:
                continue
            pooled = Result(selector.name, "all", kind, mine[0].budget)
            for r in mine:
                pooled.totals.extend(r.totals)
                pooled.prefixes.extend(r.prefixes)
            rows.append(
                Row(
                    selector=selector.name,
                    framework=selector.framework,
                    cupel=selector.cupel,
                    stable=selector.stable,
                    kind=kind,
                    calls=pooled.calls,
                    errors=sum(r.error is not None for r in mine),
                    read={p.name: pooled.read_share(p) for p in PRICINGS},
                    cost={p.name: pooled.cost(p) for p in PRICINGS},
                    window=pooled.window(),
                    failures={
                        name: sum(r.failures.get(name, 0) for r in mine) for name in FAILURES
                    },
                )
            )
    return rows


def targets(rows: Sequence[Row], sessions: Sequence[Session]) -> list[tuple[str, bool]]:
    """The done-when checks, each as (what, met): every cache-stable component on each
    kind — read share, Anthropic-style cost, mean window — every cupel component with
    zero window failures, and sessions of at least :data:`CALLS` calls at the budget."""
    checks: list[tuple[str, bool]] = []
    shortest = min((len(s.at_budget()) for s in sessions), default=0)
    checks.append(
        (f"sessions: at least {CALLS} calls at the budget each ({shortest})", shortest >= CALLS)
    )
    anthropic = PRICINGS[0].name
    for row in rows:
        if not row.cupel:
            continue
        where = f"{row.selector} ({row.kind})"
        failed = sum(row.failures.values()) + row.errors
        checks.append((f"{where}: {failed} window failures (target 0)", failed == 0))
        if not row.stable:
            continue
        read = row.read[anthropic]
        cost = row.cost[anthropic]
        checks.append((f"{where}: cache-read share {read:.1%} (target >= 75%)", read >= 0.75))
        checks.append((f"{where}: {anthropic} cost {cost:.2f}x (target <= 0.40x)", cost <= 0.40))
        checks.append(
            (f"{where}: mean window {row.window:.1%} (target >= 65%)", row.window >= 0.65)
        )
    return checks


def table(rows: Sequence[Row]) -> str:
    """The results as a Markdown table."""
    names = [p.name for p in PRICINGS]
    header = (
        "| framework | selector | session | calls | cache read | "
        + " | ".join(f"cost ({n})" for n in names)
        + " | mean window | window failures |"
    )
    lines = [header, "|" + "---|" * (7 + len(names))]
    for r in rows:
        name = f"**{r.selector}**" if r.stable else r.selector
        failed = sum(r.failures.values())
        errors = f" ({r.errors} errors)" if r.errors else ""
        costs = " | ".join(f"{r.cost[n]:.2f}x" for n in names)
        lines.append(
            f"| {r.framework} | {name} | {r.kind} | {r.calls}{errors} | "
            f"{r.read[names[0]]:.0%} | {costs} | {r.window:.0%} | {failed} |"
        )
    return "\n".join(lines)


# -- the low-water sweep ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """The cache-stable ``select_messages`` at one low-water mark, on one kind."""

    low_water: float
    kind: str
    read: float
    cost: dict[str, float]
    window: float


def sweep(
    sessions: Sequence[Session], marks: Sequence[float] = SWEEP
) -> tuple[list[Point], list[Row]]:
    """``select_messages(cache_stable=mark)`` over the sessions for each mark, and the
    default (minimal-fit) window for reference: the data of the trade-off plot."""
    points: list[Point] = []
    selectors = [
        Selector(f"low_water={m}", "langchain", True, True, _select_messages(m), "") for m in marks
    ]
    default = [s for s in SELECTORS if s.name == "select_messages"]
    results = run(sessions, [*selectors, *default])
    rows = summarize(results, [*selectors, *default])
    for mark, selector in zip(marks, selectors, strict=True):
        for row in (r for r in rows if r.selector == selector.name):
            points.append(Point(mark, row.kind, row.read[PRICINGS[0].name], row.cost, row.window))
    return points, [r for r in rows if r.selector == "select_messages"]


def sweep_table(points: Sequence[Point], defaults: Sequence[Row]) -> str:
    """The sweep as a Markdown table."""
    names = [p.name for p in PRICINGS]
    lines = [
        "| low-water mark | session | cache read | "
        + " | ".join(f"cost ({n})" for n in names)
        + " | mean window |",
        "|" + "---|" * (4 + len(names)),
    ]
    for p in points:
        costs = " | ".join(f"{p.cost[n]:.2f}x" for n in names)
        lines.append(f"| {p.low_water:.1f} | {p.kind} | {p.read:.0%} | {costs} | {p.window:.0%} |")
    for r in defaults:
        costs = " | ".join(f"{r.cost[n]:.2f}x" for n in names)
        lines.append(
            f"| off (default) | {r.kind} | {r.read[names[0]]:.0%} | {costs} | {r.window:.0%} |"
        )
    return "\n".join(lines)


# -- the command -----------------------------------------------------------------------------------
def command(sessions: int, calls: int, seed: int, extra: str = "") -> str:
    """The command reproducing a run."""
    parts = ["python -m benchmarks.prompt_cache"]
    if sessions != SESSIONS:
        parts.append(f"--sessions {sessions}")
    if calls != CALLS:
        parts.append(f"--calls {calls}")
    if seed != SEED:
        parts.append(f"--seed {seed}")
    if extra:
        parts.append(extra)
    return " ".join(parts)


def _replace_block(path: Path, start: str, end: str, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise SystemExit(f"{path}: no markers ({start} ... {end})")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(head + start + "\n" + block + "\n" + end + tail, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.prompt_cache", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sessions", type=int, default=None, help=f"per kind ({SESSIONS})")
    parser.add_argument("--calls", type=int, default=None, help=f"at the budget ({CALLS})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--budget", type=int, default=BUDGET, help=f"default {BUDGET}")
    parser.add_argument("--quick", action="store_true", help="1 session per kind, 30 calls")
    parser.add_argument("--sweep", action="store_true", help="also sweep the low-water mark")
    parser.add_argument("--json", type=Path, help="write the summary (and sweep) here")
    parser.add_argument("--docs", type=Path, help="rewrite the table blocks of this file")
    args = parser.parse_args(argv)
    per_kind = args.sessions if args.sessions is not None else (1 if args.quick else SESSIONS)
    calls = args.calls if args.calls is not None else (QUICK_CALLS if args.quick else CALLS)
    if per_kind < 1 or calls < 1 or args.budget < 100:
        parser.error("--sessions and --calls must be >= 1, --budget >= 100")
    started = time.perf_counter()
    sessions = generate_sessions(per_kind, seed=args.seed, calls=calls, budget=args.budget)
    results = run(sessions)
    rows = summarize(results)
    checks = targets(rows, sessions)
    reproduce = command(per_kind, calls, args.seed)
    print(
        f"Prompt cache: {per_kind} sessions per kind, >= {calls} calls at a {args.budget}-token "
        f"budget each, seed {args.seed}"
    )
    print(f"reproduce: {reproduce}\n")
    print(table(rows))
    print("\nPricing (multiples of the uncached input price):")
    for p in PRICINGS:
        print(f"  {p.name}: {p.source}")
    points: list[Point] = []
    defaults: list[Row] = []
    if args.sweep:
        points, defaults = sweep(sessions)
        print("\nLow-water sweep (select_messages, cache_stable=mark):\n")
        print(sweep_table(points, defaults))
    print("\nTargets (cache-stable components; window failures of every cupel component):")
    for label, met in checks:
        print(f"  [{'met' if met else 'NOT MET'}] {label}")
    elapsed = time.perf_counter() - started
    print(f"\n{len(sessions)} sessions, {sum(r.calls for r in results)} calls in {elapsed:.1f} s")
    if args.json is not None:
        payload = {
            "sessions": per_kind,
            "calls": calls,
            "seed": args.seed,
            "budget": args.budget,
            "pricings": [asdict(p) for p in PRICINGS],
            "summary": [asdict(r) for r in rows],
            "targets": [{"check": label, "met": met} for label, met in checks],
            "sweep": [asdict(p) for p in points],
            "sweep_default": [asdict(r) for r in defaults],
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if args.docs is not None:
        block = f"`{reproduce}`\n\n{table(rows)}"
        _replace_block(args.docs, TABLE_START, TABLE_END, block)
        if args.sweep:
            sweep_block = f"`{command(per_kind, calls, args.seed, '--sweep')}`\n\n"
            sweep_block += sweep_table(points, defaults)
            _replace_block(args.docs, SWEEP_START, SWEEP_END, sweep_block)
    return 0 if all(met for _, met in checks) or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
