"""Generated conversations for the window-quality benchmark, as neutral descriptions
converted to real LangChain and LlamaIndex messages.

Four categories, each case seeded by ``(seed, category, number)`` alone:

- ``chat clean``: a system prompt and 6-40 user/assistant turns (some with a tool round)
  ending on the user's next question. Role lengths vary per conversation: short user /
  long assistant, long user / short assistant, or balanced.
- ``agent clean``: a system prompt, sometimes a few earlier chat turns, then one task and
  tool rounds (1-4 parallel calls per assistant message, results in any order), ending
  on tool results (the next model call).
- ``chat messy`` / ``agent messy``: the same, with what real histories carry: a
  partially answered call, an unanswered call, a result arriving late (after another
  message), a duplicate result, a result for a call never made, and invalid tool calls
  (malformed arguments; answered with an error or not). Every messy case has at least
  one; :attr:`Case.problems` counts the problems the providers' rule will flag and
  :attr:`Case.invalid_calls` the invalid tool calls.

Sizes: messages of about 10-400 tokens (four characters per token); the budget is 1,500-6,000
tokens and nine cases in ten are 1.3-4 times longer than it (the rest fit or nearly).

>>> case = generate_case("agent messy", 0, seed=7)
>>> case == generate_case("agent messy", 0, seed=7), sum(case.problems.values()) > 0
(True, True)
>>> [m.role for m in case.messages[:2]]
['system', 'user']
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CATEGORIES",
    "Call",
    "Case",
    "Message",
    "generate_case",
    "generate_cases",
    "to_langchain",
    "to_llamaindex",
]

CATEGORIES = ("chat clean", "chat messy", "agent clean", "agent messy")
"""The case categories, in table order."""

DEFECTS = ("partial", "unanswered", "late", "duplicate", "unknown", "invalid")
"""What a messy case may carry (each at least once over a category's cases)."""

CHARS_PER_TOKEN = 4

_WORDS = """the of and to in is that for it as with was on be by this are from at or an have
    not which but all were when there can more if will one about out into time only new
    some could these two may first then do any like other than now over such our even most
    made after also did many before must through back years where much your way well down
    should because each just those people how too little state good very make world still
    own see men work long get here between both life being under never day same another
    know while last might great old year off come since against go came right used take
    three house order report service config deploy server request response error value key
    table query index cache token budget window message tool result search file path
    build test check status update version release branch commit merge review plan"""
_VOCABULARY = tuple(_WORDS.split())


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call: ``args`` is a dict, or a malformed string for an invalid call."""

    id: str
    name: str
    args: dict[str, Any] | str

    @property
    def invalid(self) -> bool:
        """The model produced arguments that do not parse."""
        return isinstance(self.args, str)


@dataclass(frozen=True, slots=True)
class Message:
    """A neutral message: ``role`` is system / user / assistant / tool; an assistant may
    make ``calls``; a tool message ``answers`` a call id."""

    role: str
    text: str
    calls: tuple[Call, ...] = ()
    answers: str | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """One generated history, its budget and what it carries."""

    category: str
    number: int
    messages: tuple[Message, ...]
    budget: int
    call_style: Literal["blocks", "openai"]
    """How the LlamaIndex conversion writes calls: ``ToolCallBlock`` s or OpenAI-style
    ``additional_kwargs["tool_calls"]``."""
    problems: Counter[str] = field(default_factory=Counter)
    """The providers' problems the history holds, by name (``late_result``, ...)."""
    invalid_calls: int = 0
    """Tool calls with malformed arguments."""
    style: str = ""
    """Role lengths: ``short user`` / ``long user`` / ``balanced`` (chat), ``agent``."""

    @property
    def name(self) -> str:
        return f"{self.category} #{self.number}"


def approximate_tokens(message: Message) -> int:
    """A neutral size estimate (four characters per token, plus the call arguments)."""
    chars = len(message.text) + sum(len(c.name) + len(str(c.args)) for c in message.calls)
    return -(-chars // CHARS_PER_TOKEN) + 3


class _Builder:
    """Appends messages with unique tags and counts what the history carries."""

    def __init__(self, rng: random.Random, messy: bool) -> None:
        self.rng = rng
        self.messy = messy
        self.messages: list[Message] = []
        self.problems: Counter[str] = Counter()
        self.invalid_calls = 0
        self.calls = 0
        self.late: list[str] = []  # results held back until after the next message

    # -- text ------------------------------------------------------------------------------
    def text(self, tokens: int) -> str:
        """About ``tokens`` tokens of text, starting with a tag unique in the history."""
        words = [f"[m{len(self.messages)}]"]
        length = len(words[0])
        target = max(1, tokens - 3) * CHARS_PER_TOKEN
        while length < target:
            word = self.rng.choice(_VOCABULARY)
            words.append(word)
            length += len(word) + 1
        return " ".join(words)

    def tokens(self) -> int:
        return sum(approximate_tokens(m) for m in self.messages)

    # -- messages --------------------------------------------------------------------------
    def add(self, role: str, tokens: int) -> None:
        self.messages.append(Message(role, self.text(tokens)))
        if role != "tool":
            self._release_late()

    def _release_late(self) -> None:
        while self.late:
            call_id = self.late.pop()
            self.messages.append(Message("tool", self.text(self.result_size()), answers=call_id))

    def result_size(self) -> int:
        return self.rng.choice([self.rng.randint(20, 120), self.rng.randint(60, 400)])

    def new_call(self, invalid: bool = False) -> Call:
        self.calls += 1
        name = self.rng.choice(["search", "read_file", "run_tests", "get_weather", "query_db"])
        if invalid:
            self.invalid_calls += 1
            return Call(f"call_{self.calls}", name, '{"query": "unterminated')
        return Call(f"call_{self.calls}", name, {"query": self.text(8)[:40], "n": self.calls})

    def tool_round(self, parallel: int, defect: str | None, text_tokens: int) -> str | None:
        """An assistant message making ``parallel`` calls and their results, carrying
        ``defect`` (see :data:`DEFECTS`); returns the defect actually made."""
        if defect == "partial" and parallel < 2:
            parallel = 2
        invalid = defect == "invalid"
        calls = [self.new_call(invalid and i == 0) for i in range(parallel)]
        text = self.text(text_tokens) if text_tokens else ""
        self.messages.append(Message("assistant", text, tuple(calls)))
        self._release_late()  # a result held back arrives after this message
        ids = [c.id for c in calls]
        self.rng.shuffle(ids)  # results come back in any order
        if defect == "unanswered":
            ids = []
            self.problems["unanswered_calls"] += 1
        elif defect == "partial":
            ids = ids[: self.rng.randint(1, len(ids) - 1)]
            self.problems["partial_answers"] += 1
        elif defect == "late":
            self.late.append(ids.pop())
            self.problems["late_result"] += 1
            self.problems["partial_answers" if ids else "unanswered_calls"] += 1
        elif invalid and self.rng.random() < 0.5:  # the bad call left unanswered
            ids = [i for i in ids if i != calls[0].id]
            self.problems["partial_answers" if ids else "unanswered_calls"] += 1
        for call_id in ids:
            self.messages.append(Message("tool", self.text(self.result_size()), answers=call_id))
        if defect == "duplicate":
            again = self.rng.choice(ids)
            self.messages.append(Message("tool", self.text(self.result_size()), answers=again))
            self.problems["duplicate_result"] += 1
        if defect == "unknown":
            self.calls += 1
            ghost = f"call_{self.calls}"  # never made
            self.messages.append(Message("tool", self.text(self.result_size()), answers=ghost))
            self.problems["unknown_result"] += 1
        return defect

    def defect(self, rate: float) -> str | None:
        if not self.messy or self.rng.random() >= rate:
            return None
        return self.rng.choice(DEFECTS)


_CHAT_STYLES = {
    "short user": ((10, 60), (150, 400)),
    "long user": ((150, 400), (10, 80)),
    "balanced": ((40, 200), (40, 200)),
}


def _length(rng: random.Random, budget: int) -> int:
    """How long the history grows: 1.3-4x the budget, or (one case in ten) 0.5-1x."""
    factor = rng.uniform(0.5, 1.0) if rng.random() < 0.1 else rng.uniform(1.3, 4.0)
    return int(budget * factor)


def _chat_turn(b: _Builder, user: tuple[int, int], assistant: tuple[int, int]) -> None:
    rng = b.rng
    b.add("user", rng.randint(*user))
    if rng.random() < (0.35 if b.messy else 0.2):
        b.tool_round(rng.choice([1, 1, 2]), b.defect(0.6), rng.choice([0, rng.randint(5, 40)]))
    b.add("assistant", rng.randint(*assistant))


def _chat(b: _Builder, budget: int) -> str:
    rng = b.rng
    style = rng.choice(sorted(_CHAT_STYLES))
    user, assistant = _CHAT_STYLES[style]
    b.add("system", rng.randint(30, 250))
    length = _length(rng, budget)
    turns = 0
    while turns < 6 or (b.tokens() < length and turns < 40):
        _chat_turn(b, user, assistant)
        turns += 1
    b.add("user", rng.randint(*user))  # the question being answered
    return style


def _agent(b: _Builder, budget: int) -> str:
    rng = b.rng
    b.add("system", rng.randint(100, 500))
    if rng.random() < 0.3:  # earlier turns of the same session
        for _ in range(rng.randint(1, 3)):
            _chat_turn(b, (10, 120), (20, 200))
    b.add("user", rng.randint(30, 400))  # the task
    length = _length(rng, budget)
    rounds = 0
    while rounds < 3 or (b.tokens() < length and rounds < 40):
        parallel = 1 if rng.random() < 0.5 else rng.randint(2, 4)
        b.tool_round(parallel, b.defect(0.3), rng.choice([0, 0, rng.randint(5, 80)]))
        rounds += 1
    return "agent"


def _ensure_defect(b: _Builder) -> None:
    """A messy case carries at least one defect: add a round with one if it has none."""
    if b.problems or b.invalid_calls:
        return
    tail = b.messages[-1]
    defect = b.rng.choice(DEFECTS)
    b.tool_round(b.rng.randint(1, 3), defect, 0)
    if tail.role == "user":  # keep a chat ending on the user's question
        b.add("user", b.rng.randint(10, 60))


def generate_case(category: str, number: int, *, seed: int) -> Case:
    """Case ``number`` of ``category`` (one of :data:`CATEGORIES`), from ``seed`` alone."""
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}, got {category!r}")
    rng = random.Random(f"{seed}:{category}:{number}")
    kind, cleanliness = category.split()
    budget = rng.randint(1500, 6000)
    b = _Builder(rng, messy=cleanliness == "messy")
    style = _chat(b, budget) if kind == "chat" else _agent(b, budget)
    if b.messy:
        _ensure_defect(b)
    if b.late:  # a result held back at the end arrives with one more (clean) round
        b.tool_round(1, None, 0)
    return Case(
        category=category,
        number=number,
        messages=tuple(b.messages),
        budget=budget,
        call_style="blocks" if rng.random() < 0.5 else "openai",
        problems=b.problems,
        invalid_calls=b.invalid_calls,
        style=style,
    )


def generate_cases(per_category: int, *, seed: int) -> list[Case]:
    """``per_category`` cases of every category, category by category."""
    return [
        generate_case(category, number, seed=seed)
        for category in CATEGORIES
        for number in range(per_category)
    ]


# -- conversions -------------------------------------------------------------------------------
def langchain_calls(calls: Sequence[Call]) -> tuple[list[Any], list[Any]]:
    """The ``tool_calls`` and ``invalid_tool_calls`` of an ``AIMessage`` making ``calls``."""
    valid = [
        {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"}
        for c in calls
        if not c.invalid
    ]
    invalid = [
        {
            "name": c.name,
            "args": c.args,
            "id": c.id,
            "error": "arguments are not valid JSON",
            "type": "invalid_tool_call",
        }
        for c in calls
        if c.invalid
    ]
    return valid, invalid


def to_langchain(case: Case) -> list[Any]:
    """The case as LangChain messages: ``SystemMessage``, ``HumanMessage``, ``AIMessage``
    (``tool_calls``; malformed calls as ``invalid_tool_calls``) and ``ToolMessage``."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for index, message in enumerate(case.messages):
        ident = f"m{index}"
        if message.role == "system":
            out.append(SystemMessage(message.text, id=ident))
        elif message.role == "user":
            out.append(HumanMessage(message.text, id=ident))
        elif message.role == "tool":
            out.append(ToolMessage(message.text, tool_call_id=message.answers or "", id=ident))
        else:
            valid, invalid = langchain_calls(message.calls)
            out.append(
                AIMessage(message.text, tool_calls=valid, invalid_tool_calls=invalid, id=ident)
            )
    return out


def to_llamaindex(case: Case) -> list[Any]:
    """The case as LlamaIndex ``ChatMessage`` s: calls as ``ToolCallBlock`` s or as
    OpenAI-style ``additional_kwargs["tool_calls"]`` (per :attr:`Case.call_style`), tool
    results with ``additional_kwargs["tool_call_id"]``."""
    from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock

    out: list[Any] = []
    for message in case.messages:
        if message.role == "tool":
            out.append(
                ChatMessage(
                    role="tool",
                    content=message.text,
                    additional_kwargs={"tool_call_id": message.answers},
                )
            )
        elif not message.calls:
            out.append(ChatMessage(role=message.role, content=message.text))
        elif case.call_style == "blocks":
            blocks: list[Any] = [TextBlock(text=message.text)] if message.text else []
            blocks.extend(
                ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=c.args)
                for c in message.calls
            )
            out.append(ChatMessage(role="assistant", blocks=blocks))
        else:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _arguments(c)},
                }
                for c in message.calls
            ]
            out.append(
                ChatMessage(
                    role="assistant",
                    content=message.text,
                    additional_kwargs={"tool_calls": calls},
                )
            )
    return out


def _arguments(call: Call) -> str:
    return call.args if isinstance(call.args, str) else json.dumps(call.args)


def roles(messages: Sequence[Message]) -> list[str]:
    """The roles of neutral messages (for tests and summaries)."""
    return [m.role for m in messages]
