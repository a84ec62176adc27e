"""Recall and prompt caches: where should recalled units go? (issue 29)

    python -m benchmarks.recall_cache            # 2 chat and 2 agent sessions, 150 calls each
    python -m benchmarks.recall_cache --quick    # 1 session per kind, 30 calls (tests)

The prompt-cache benchmark's sessions (:mod:`benchmarks.prompt_cache`) replayed call by
call through ``select_messages`` with ``policy="recall"`` and ``cache_stable=True``, and
each request compared with the previous one of its session (the longest common prefix of
whole messages, in the order sent, over the request's tokens, summed over the calls at the
budget, before any provider rounding):

- **before the latest user message**: the requests as cupel sends them — the replayed
  recent window, then the recalled units, then the latest user message (and the latest
  turn's messages after it);
- **in their place**: the same windows, every message in conversation order (the recalled
  units in their place, right after the system prompt);

beside the chat default with and without ``cache_stable`` and recall without it; also
over the recall benchmark's long conversations (:mod:`benchmarks.recall_data`), a call
after every user message, where each question brings back other turns. The
recent window (without the recalled units) is checked for holes, as in
:mod:`benchmarks.recall`. Deterministic: nothing is timed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/recall_cache.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cache_model import Session, common_prefix
from benchmarks.prompt_cache import BUDGET, SEED, generate_sessions, prepare
from benchmarks.recall import SEED as RECALL_SEED
from benchmarks.recall import recalled_positions
from benchmarks.recall_data import generate_dialogues

__all__ = ["VARIANTS", "Variant", "dialogue_sessions", "main", "run", "table"]

DIALOGUE_BUDGET = 2000


@dataclass(frozen=True)
class Variant:
    """A way of selecting (``policy``, ``cache_stable``) and of ordering the request
    (``chronological``: every message in conversation order)."""

    name: str
    policy: str
    cache_stable: bool
    chronological: bool


VARIANTS: tuple[Variant, ...] = (
    Variant("chat", "chat", False, True),
    Variant("chat, cache_stable", "chat", True, True),
    Variant("recall", "recall", False, True),
    Variant("recall, cache_stable: before the latest user message", "recall", True, False),
    Variant("recall, cache_stable: in their place", "recall", True, True),
)


@dataclass
class Tally:
    """One variant on one kind of session, calls at the budget pooled."""

    variant: str
    kind: str
    total: int = 0
    prefix: int = 0
    calls: int = 0
    holes: int = 0
    recalled_calls: int = 0
    windows: list[float] = field(default_factory=list)


def replay(session: Session, variant: Variant, tally: Tally) -> None:
    """``variant`` over ``session``, call by call."""
    from cupel_langchain import select_messages_with_report

    prepared = prepare(session, "langchain")
    history = prepared.messages
    position_of = {id(m): i for i, m in enumerate(history)}
    measured = set(session.at_budget())
    previous: list[int] = []
    for call, count in enumerate(session.calls):
        window, report = select_messages_with_report(
            history[:count],
            max_tokens=session.budget,
            policy=variant.policy,
            cache_stable=variant.cache_stable,
        )
        request = [position_of[id(m)] for m in window]
        if variant.chronological:
            request.sort()
        if call in measured:
            tally.calls += 1
            tally.total += prepared.count(request)
            tally.prefix += prepared.count(request[: common_prefix(previous, request)])
            tally.windows.append(prepared.count(request) / session.budget)
            recalled = _recalled(report, prepared, request)
            tally.recalled_calls += bool(recalled)
            recent = [i for i in request if i not in recalled]
            if prepared.conversation(count).check_window(recent).holes:
                tally.holes += 1
        previous = request


def _recalled(report: Any, prepared: Any, request: Sequence[int]) -> frozenset[int]:
    """The history positions of the messages of the report's recalled units."""
    texts = []
    for message, role in zip(prepared.messages, prepared.roles, strict=True):
        content = message.content if isinstance(message.content, str) else str(message.content)
        texts.append(content or f"[{role} message]")
    return recalled_positions(report, texts, sorted(request))


def dialogue_sessions(count: int, budget: int, seed: int = RECALL_SEED) -> list[Session]:
    """The recall benchmark's long conversations (:mod:`benchmarks.recall_data`) as
    sessions: a call after every user message."""
    out = []
    for dialogue in generate_dialogues(count, seed=seed):
        calls = tuple(i + 1 for i, m in enumerate(dialogue.messages) if m.role == "user")
        out.append(Session("dialogue", dialogue.number, dialogue.messages, calls, budget))
    return out


def run(sessions: Sequence[Session]) -> list[Tally]:
    """Every variant over every session, pooled by kind of session."""
    out: list[Tally] = []
    for kind in dict.fromkeys(s.kind for s in sessions):
        for variant in VARIANTS:
            tally = Tally(variant.name, kind)
            for session in sessions:
                if session.kind == kind:
                    replay(session, variant, tally)
            out.append(tally)
    return out


def table(tallies: Sequence[Tally]) -> str:
    """The figures as a Markdown table."""
    lines = [
        "| session | selection | calls at the budget | cached prefix share | mean window "
        "| calls with recalled units | recent-window holes |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in tallies:
        share = t.prefix / t.total if t.total else 0.0
        window = sum(t.windows) / len(t.windows) if t.windows else 0.0
        lines.append(
            f"| {t.kind} | {t.variant} | {t.calls} | {share:.1%} | {window:.0%} "
            f"| {t.recalled_calls} | {t.holes} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.recall_cache", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="1 session per kind, 30 calls")
    parser.add_argument("--sessions", type=int, default=2, help="sessions per kind (default 2)")
    args = parser.parse_args(argv)
    per_kind, calls = (1, 30) if args.quick else (args.sessions, 150)
    sessions = generate_sessions(per_kind, seed=SEED, calls=calls, budget=BUDGET)
    sessions += dialogue_sessions(per_kind, DIALOGUE_BUDGET)
    print(
        f"{per_kind} chat and {per_kind} agent sessions of the prompt-cache benchmark "
        f"({calls} calls at the budget each, budget {BUDGET:,}) and {per_kind} long "
        f"conversations of the recall benchmark (a call after every user message, budget "
        f"{DIALOGUE_BUDGET:,}): `python -m benchmarks.recall_cache"
        f"{' --quick' if args.quick else ''}`\n"
    )
    print(table(run(sessions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
