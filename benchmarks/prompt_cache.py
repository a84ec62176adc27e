"""The prompt-cache benchmark: how much of each request a provider's prompt cache serves.

    python -m benchmarks.prompt_cache                  # 3 sessions per kind, >= 150 calls each
    python -m benchmarks.prompt_cache --quick          # 1 short session per kind (tests)
    python -m benchmarks.prompt_cache --sweep          # + the low-water sweep (the plot's data)
    python -m benchmarks.prompt_cache --modes none     # without the deployment modes
    python -m benchmarks.prompt_cache --quick --modes all   # quick, with them
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

**Deployment modes** (:data:`~benchmarks.cache_selectors.DEPLOYMENTS`, issue 27): every
history component with ``cache_stable`` on, run as applications run it — one process,
four round-robin workers (four component objects, calls dealt in turn), a restart every
20 calls (the object rebuilt), a component built per call — over what a session's
processes share (the whole history, one agent state, one chat store, one database).
Their targets (:func:`deployment_targets`): every row at least today's one-process figure
for its kind of session (:data:`DEPLOYMENT_TARGETS`) and at least the same run's
one-process row of its component, with zero window failures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/prompt_cache.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cache_model import (
    PRICINGS,
    Pricing,
    Session,
    cached_tokens,
    common_prefix,
    generate_session,
    request_cost,
)
from benchmarks.cache_selectors import (
    DEPLOYMENTS,
    MODE_LABELS,
    MODES,
    SELECTORS,
    Selector,
    select_messages_call,
)
from benchmarks.harness import replace_block
from benchmarks.window_metrics import align, score_window
from cupel.conversation import Conversation

__all__ = [
    "DEPLOYMENTS",
    "DEPLOYMENT_TARGETS",
    "MODES",
    "PRICINGS",
    "SELECTORS",
    "Pricing",
    "Result",
    "Selector",
    "Session",
    "cached_tokens",
    "common_prefix",
    "deployment_table",
    "deployment_targets",
    "deployments",
    "generate_session",
    "main",
    "parse_modes",
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
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TABLE_START = "<!-- prompt-cache table: start -->"
TABLE_END = "<!-- prompt-cache table: end -->"
SWEEP_START = "<!-- prompt-cache sweep: start -->"
SWEEP_END = "<!-- prompt-cache sweep: end -->"
DEPLOY_START = "<!-- prompt-cache deployments: start -->"
DEPLOY_END = "<!-- prompt-cache deployments: end -->"
DEPLOYMENT_TARGETS: dict[tuple[str, str], tuple[float, float]] = {
    ("langchain", "chat"): (0.78, 0.35),
    ("langchain", "agent"): (0.73, 0.41),
    ("llamaindex", "chat"): (0.84, 0.28),
    ("llamaindex", "agent"): (0.79, 0.34),
}
"""(framework, kind) → (cache-read share, Anthropic cost): one process's figures as issue
27 gives them, which every deployment mode must reach (compared as they are stated:
whole percents, costs to the hundredth)."""


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
    counts them: as the provider bills each message (:mod:`benchmarks.bill`)."""
    from benchmarks.bill import Bill
    from benchmarks.window_quality import prepare_langchain, prepare_llamaindex

    if framework == "langchain":
        prepared = prepare_langchain(session.case(), Bill())
    else:
        prepared = prepare_llamaindex(session.case(), Bill())
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
    component: str = ""
    mode: str = ""


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
                    component=selector.component,
                    mode=selector.mode,
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


def _header(*leading: str) -> list[str]:
    """A results table's header lines: the ``leading`` columns, then calls, the cache-read
    share, the cost under each pricing, the mean window and the window failures."""
    costs = [f"cost ({p.name})" for p in PRICINGS]
    columns = [*leading, "calls", "cache read", *costs, "mean window", "window failures"]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def table(rows: Sequence[Row]) -> str:
    """The results as a Markdown table."""
    names = [p.name for p in PRICINGS]
    lines = _header("framework", "selector", "session")
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


# -- deployment modes ------------------------------------------------------------------------------
def deployments(
    sessions: Sequence[Session], modes: Sequence[str] = MODES
) -> tuple[list[Result], list[Row]]:
    """Every cache-stable history component in each of ``modes`` over the sessions; the
    rows by component, kind of session, then mode."""
    selectors = [s for s in DEPLOYMENTS if s.mode in modes]
    results = run(sessions, selectors)
    components = list(dict.fromkeys(s.component for s in selectors))
    rows = sorted(
        summarize(results, selectors),
        key=lambda r: (
            components.index(r.component),
            ("chat", "agent").index(r.kind),
            MODES.index(r.mode),
        ),
    )
    return results, rows


def deployment_targets(rows: Sequence[Row], *, fixed: bool = True) -> list[tuple[str, bool]]:
    """Issue 27's checks, each as (what, met), for every deployment-mode row: zero window
    failures; at least the same run's one-process row of its component (cache-read share
    and Anthropic cost, at the precision shown: 0.1%, 0.01x); with ``fixed``, at least
    today's one-process figure for its kind of session (:data:`DEPLOYMENT_TARGETS`)."""
    checks: list[tuple[str, bool]] = []
    anthropic = PRICINGS[0].name
    one = {(r.component, r.kind): r for r in rows if r.mode == "one"}
    for row in rows:
        where = f"{row.component} [{MODE_LABELS[row.mode]}] ({row.kind})"
        failed = sum(row.failures.values()) + row.errors
        checks.append((f"{where}: {failed} window failures (target 0)", failed == 0))
        read, cost = row.read[anthropic], row.cost[anthropic]
        if fixed:
            want_read, want_cost = DEPLOYMENT_TARGETS[(row.framework, row.kind)]
            checks.append(
                (
                    f"{where}: cache-read share {read:.1%} (target >= {want_read:.0%})",
                    round(read, 2) >= want_read,
                )
            )
            checks.append(
                (
                    f"{where}: {anthropic} cost {cost:.3f}x (target <= {want_cost:.2f}x)",
                    round(cost, 2) <= want_cost,
                )
            )
        base = one.get((row.component, row.kind))
        if base is not None and row is not base:
            base_read, base_cost = base.read[anthropic], base.cost[anthropic]
            checks.append(
                (
                    f"{where}: {read:.1%} read at {cost:.2f}x "
                    f"(target: one process's {base_read:.1%} at {base_cost:.2f}x)",
                    round(read, 3) >= round(base_read, 3) and round(cost, 2) <= round(base_cost, 2),
                )
            )
    return checks


def deployment_table(rows: Sequence[Row]) -> str:
    """The deployment-mode rows as a Markdown table."""
    names = [p.name for p in PRICINGS]
    lines = _header("framework", "component", "deployment", "session")
    for r in rows:
        errors = f" ({r.errors} errors)" if r.errors else ""
        costs = " | ".join(f"{r.cost[n]:.2f}x" for n in names)
        lines.append(
            f"| {r.framework} | {r.component} | {MODE_LABELS[r.mode]} | {r.kind} | "
            f"{r.calls}{errors} | {r.read[names[0]]:.0%} | {costs} | {r.window:.0%} | "
            f"{sum(r.failures.values())} |"
        )
    return "\n".join(lines)


def parse_modes(text: str) -> list[str]:
    """``--modes``: ``all``, ``none`` or modes separated by commas (in :data:`MODES` order).

    >>> parse_modes("per-call,one"), parse_modes("none")
    (['one', 'per-call'], [])
    """
    if text == "all":
        return list(MODES)
    if text == "none":
        return []
    given = {m.strip() for m in text.split(",") if m.strip()}
    unknown = sorted(given - set(MODES))
    if unknown or not given:
        raise ValueError(f"unknown modes {unknown or text!r}: use all, none or {', '.join(MODES)}")
    return [m for m in MODES if m in given]


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
        Selector(f"low_water={m}", "langchain", True, True, select_messages_call(m), "")
        for m in marks
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
    parser.add_argument(
        "--modes",
        help=f"deployment modes: all, none or some of {','.join(MODES)} "
        "(default: all; none with --quick)",
    )
    args = parser.parse_args(argv)
    per_kind = args.sessions if args.sessions is not None else (1 if args.quick else SESSIONS)
    calls = args.calls if args.calls is not None else (QUICK_CALLS if args.quick else CALLS)
    if per_kind < 1 or calls < 1 or args.budget < 100:
        parser.error("--sessions and --calls must be >= 1, --budget >= 100")
    try:
        modes = parse_modes(args.modes or ("none" if args.quick else "all"))
    except ValueError as exc:
        parser.error(f"--modes: {exc}")
    started = time.perf_counter()
    sessions = generate_sessions(per_kind, seed=args.seed, calls=calls, budget=args.budget)
    results = run(sessions)
    rows = summarize(results)
    checks = targets(rows, sessions)
    deployed, deploy_rows = deployments(sessions, modes) if modes else ([], [])
    deploy_checks = deployment_targets(deploy_rows)
    reproduce = command(per_kind, calls, args.seed)
    if modes != list(MODES):
        reproduce += f" --modes {','.join(modes) or 'none'}"
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
    if deploy_rows:
        print(f"\nDeployment modes (issue 27): {', '.join(MODE_LABELS[m] for m in modes)}\n")
        print(deployment_table(deploy_rows))
    print("\nTargets (cache-stable components; window failures of every cupel component):")
    for label, met in checks:
        print(f"  [{'met' if met else 'NOT MET'}] {label}")
    if deploy_checks:
        unmet = sum(not met for _, met in deploy_checks)
        print(f"\nDeployment targets (issue 27; {unmet} of {len(deploy_checks)} not met):")
        for label, met in deploy_checks:
            print(f"  [{'met' if met else 'NOT MET'}] {label}")
    elapsed = time.perf_counter() - started
    replayed = sum(r.calls for r in [*results, *deployed])
    print(f"\n{len(sessions)} sessions, {replayed} calls measured in {elapsed:.1f} s")
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
            "modes": modes,
            "deployments": [asdict(r) for r in deploy_rows],
            "deployment_targets": [{"check": label, "met": met} for label, met in deploy_checks],
            "deployment_results": [asdict(r) for r in deployed],
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if args.docs is not None:
        block = f"`{reproduce}`\n\n{table(rows)}"
        replace_block(args.docs, TABLE_START, TABLE_END, block)
        if deploy_rows:
            block = f"`{reproduce}`\n\n{deployment_table(deploy_rows)}"
            replace_block(args.docs, DEPLOY_START, DEPLOY_END, block)
        if args.sweep:
            sweep_block = f"`{command(per_kind, calls, args.seed, '--sweep')}`\n\n"
            sweep_block += sweep_table(points, defaults)
            replace_block(args.docs, SWEEP_START, SWEEP_END, sweep_block)
    return 0 if all(met for _, met in [*checks, *deploy_checks]) or args.quick else 1


if __name__ == "__main__":
    raise SystemExit(main())
