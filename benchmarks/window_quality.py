"""The window-quality benchmark: how good are the windows each component selects?

    python -m benchmarks.window_quality                    # 50 cases per category, seed 20261122
    python -m benchmarks.window_quality --cases 20 --seed 3 --json results.json
    python -m benchmarks.window_quality --quick            # 4 cases per category (tests)
    python -m benchmarks.window_quality --docs docs/window-quality.md   # refresh the doc's table

Generated histories (:mod:`benchmarks.window_cases`: chat and agent runs, clean and
messy) go through every component under its defaults, the budget being its only
setting:

- LangChain: ``select_messages``, ``CupelMessageSelector``, ``CupelContextMiddleware``
  (through its ``wrap_model_call`` hook with a real ``ModelRequest``) and
  ``trim_messages`` in its recommended setup (``strategy="last"``,
  ``include_system=True``, ``start_on="human"``, ``count_tokens_approximately``);
- LlamaIndex: ``CupelChatMemory``, ``CupelMemory``, ``ChatMemoryBuffer`` and ``Memory``
  (the two ``Memory`` API ones with messages put one by one, as a chat engine stores
  them), all with LlamaIndex's default tokenizer.

Each window is scored on the original history with :mod:`benchmarks.window_metrics`
(cupel's ``Conversation.check_window``): holes, task lost, no reply when one was due,
empty when content was due, invalid for the provider, over budget, system prompt lost,
budget use. Every window is billed as the provider bills it (:mod:`benchmarks.bill`:
cl100k text, 3 tokens per message, tool calls with their ids, 3 for the reply), the same
for every component. Windows returned as copies (``Memory`` reads them back from its SQL
store; ``CupelMemory`` too) are aligned to the history by order and equality.

Everything is deterministic: the same seed gives the same table on any machine.
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

if __package__ in (None, ""):  # run as a script: python benchmarks/window_quality.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bill import REPLY, Bill
from benchmarks.harness import replace_block
from benchmarks.window_cases import CATEGORIES, Case, generate_cases, to_langchain, to_llamaindex
from benchmarks.window_components import COMPONENTS, Component
from benchmarks.window_metrics import WindowScore, align, score_window
from cupel.conversation import Conversation

__all__ = [
    "COMPONENTS",
    "Comparison",
    "Component",
    "Outcome",
    "Paired",
    "Summary",
    "compare",
    "main",
    "run",
    "summarize",
    "table",
    "targets",
]

SEED = 20261122
CASES = 50
QUICK_CASES = 4
CHAT_TARGET = 0.85
AGENT_TARGET = 0.80
TABLE_START = "<!-- window-quality table: start -->"
TABLE_END = "<!-- window-quality table: end -->"


# -- the history as each framework sees it -------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """A case in one framework: its messages, their structure and token counts."""

    messages: list[Any]
    conversation: Conversation
    tokens: list[int]

    def count(self, indices: Sequence[int]) -> int:
        tokens = self.tokens
        return sum(tokens[i] for i in indices)


def prepare_langchain(case: Case, bill: Bill) -> Prepared:
    """LangChain messages; structure read as cupel_langchain reads it; tokens as the
    provider bills each message (:mod:`benchmarks.bill`)."""
    from cupel_langchain._messages import read_messages

    messages = to_langchain(case)
    record = read_messages(messages, None)
    conversation = Conversation(record.roles, calls=record.calls, answers=record.answers)
    tokens = [bill.langchain_message(m) for m in messages]
    return Prepared(messages, conversation, tokens)


def prepare_llamaindex(case: Case, bill: Bill) -> Prepared:
    """LlamaIndex messages; structure read as cupel_llamaindex reads it; tokens as the
    provider bills each message (:mod:`benchmarks.bill`)."""
    from cupel_llamaindex import messages_to_items

    messages = to_llamaindex(case)
    conversation = messages_to_items(messages, tokenizer_fn=str.split).history.conversation
    tokens = [bill.llamaindex_message(m) for m in messages]
    return Prepared(messages, conversation, tokens)


# -- running -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """One component on one case: the window's score, or the error it raised."""

    component: str
    case: str
    category: str
    budget: int
    window: list[int] = field(default_factory=list)
    alignment: str = ""
    score: WindowScore | None = None
    error: str | None = None


def run_case(case: Case, components: Sequence[Component], bill: Bill) -> list[Outcome]:
    """Every component on ``case`` (the history converted once per framework; no
    component modifies the messages it is given)."""
    prepared: dict[str, Prepared] = {}
    out: list[Outcome] = []
    for component in components:
        framework = component.framework
        if framework not in prepared:
            prepared[framework] = (
                prepare_langchain(case, bill)
                if framework == "langchain"
                else prepare_llamaindex(case, bill)
            )
        history = prepared[framework]
        try:
            window = list(component.select(list(history.messages), case.budget))
        except Exception as exc:  # an incumbent may fail: counted, not fatal
            error = f"{type(exc).__name__}: {exc}"
            out.append(Outcome(component.name, case.name, case.category, case.budget, error=error))
            continue
        kept, how = align(window, history.messages)
        # the request's bill: the window's messages and the reply
        score = score_window(
            history.conversation, kept, tokens=history.count, budget=case.budget - REPLY
        )
        out.append(Outcome(component.name, case.name, case.category, case.budget, kept, how, score))
    return out


def run(cases: Sequence[Case], components: Sequence[Component] = COMPONENTS) -> list[Outcome]:
    """Every component on every case."""
    bill = Bill()
    return [outcome for case in cases for outcome in run_case(case, components, bill)]


# -- summary -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    """The metrics of one component on one category."""

    component: str
    framework: str
    cupel: bool
    category: str
    windows: int
    errors: int
    holes: int
    task_lost: int
    no_reply: int
    reply_due: int
    empty: int
    content_due: int
    invalid: int
    over_budget: int
    system_lost: int
    budget_use: float
    """Mean of window tokens / budget over the windows returned."""
    alignment: str


def summarize(
    outcomes: Sequence[Outcome], components: Sequence[Component] = COMPONENTS
) -> list[Summary]:
    """One :class:`Summary` per component and category (components in order)."""
    out: list[Summary] = []
    for component in components:
        for category in CATEGORIES:
            mine = [o for o in outcomes if o.component == component.name and o.category == category]
            if not mine:
                continue
            scores = [o.score for o in mine if o.score is not None]
            out.append(
                Summary(
                    component=component.name,
                    framework=component.framework,
                    cupel=component.cupel,
                    category=category,
                    windows=len(scores),
                    errors=sum(o.error is not None for o in mine),
                    holes=sum(s.holes for s in scores),
                    task_lost=sum(s.task_lost for s in scores),
                    no_reply=sum(s.no_reply for s in scores),
                    reply_due=sum(s.reply_due for s in scores),
                    empty=sum(s.empty for s in scores),
                    content_due=sum(s.content_due for s in scores),
                    invalid=sum(s.invalid for s in scores),
                    over_budget=sum(s.over_budget for s in scores),
                    system_lost=sum(s.system_lost for s in scores),
                    budget_use=statistics.fmean(s.use for s in scores) if scores else 0.0,
                    alignment="/".join(sorted({o.alignment for o in mine if o.alignment})),
                )
            )
    return out


def _use(summaries: Sequence[Summary], component: str, kind: str) -> float:
    """Mean budget use of ``component`` over the categories of ``kind`` (chat / agent),
    weighted by windows."""
    rows = [s for s in summaries if s.component == component and s.category.startswith(kind)]
    windows = sum(s.windows for s in rows)
    return sum(s.budget_use * s.windows for s in rows) / windows if windows else 0.0


def usable(score: WindowScore) -> bool:
    """A window a provider accepts within the budget: not over it, valid tool calls."""
    return not (score.over_budget or score.invalid)


def sound(score: WindowScore) -> bool:
    """A :func:`usable` window that also keeps the system prompt and the task."""
    return usable(score) and not (score.system_lost or score.task_lost)


@dataclass(frozen=True)
class Paired:
    """Mean budget use of a cupel component and an incumbent over the same cases."""

    cases: int
    use: float
    incumbent_use: float
    fewer_tokens: int
    """Cases where the cupel window holds fewer tokens than the incumbent's."""

    @classmethod
    def of(cls, pairs: Sequence[tuple[WindowScore, WindowScore]]) -> Paired:
        if not pairs:
            return cls(0, 0.0, 0.0, 0)
        return cls(
            cases=len(pairs),
            use=statistics.fmean(a.use for a, _ in pairs),
            incumbent_use=statistics.fmean(b.use for _, b in pairs),
            fewer_tokens=sum(a.tokens < b.tokens for a, b in pairs),
        )

    def cells(self) -> str:
        if not self.cases:
            return "0 | – | –"
        return f"{self.cases} | {self.use:.1%} / {self.incumbent_use:.1%} | {self.fewer_tokens}"


@dataclass(frozen=True)
class Comparison:
    """Budget use of a cupel component against an incumbent, on the same cases: all of
    them, those where the incumbent's window is :func:`usable`, and those where it is
    :func:`sound` (the fair comparison: both windows could be sent as they are)."""

    component: str
    incumbent: str
    category: str
    all: Paired
    usable: Paired
    sound: Paired


def compare(
    outcomes: Sequence[Outcome], components: Sequence[Component] = COMPONENTS
) -> list[Comparison]:
    """Each cupel component against each incumbent of its framework, per category."""
    by_case: dict[tuple[str, str], Outcome] = {(o.component, o.case): o for o in outcomes}
    cases: dict[str, list[str]] = {}
    for o in outcomes:
        names = cases.setdefault(o.category, [])
        if o.case not in names:
            names.append(o.case)
    out: list[Comparison] = []
    for mine in (c for c in components if c.cupel):
        for other in (c for c in components if not c.cupel and c.framework == mine.framework):
            for category in CATEGORIES:
                pairs: list[tuple[WindowScore, WindowScore]] = []
                for case in cases.get(category, []):
                    a = by_case.get((mine.name, case))
                    b = by_case.get((other.name, case))
                    if a is not None and b is not None and a.score and b.score:
                        pairs.append((a.score, b.score))
                if not pairs:
                    continue
                out.append(
                    Comparison(
                        component=mine.name,
                        incumbent=other.name,
                        category=category,
                        all=Paired.of(pairs),
                        usable=Paired.of([(a, b) for a, b in pairs if usable(b)]),
                        sound=Paired.of([(a, b) for a, b in pairs if sound(b)]),
                    )
                )
    return out


def targets(
    summaries: Sequence[Summary], comparisons: Sequence[Comparison]
) -> list[tuple[str, bool]]:
    """The done-when checks, each as (what, met)."""
    checks: list[tuple[str, bool]] = []
    cupel = [s for s in summaries if s.cupel]
    for name in dict.fromkeys(s.component for s in cupel):
        rows = [s for s in cupel if s.component == name]
        for label, attribute in (
            ("errors", "errors"),
            ("windows with holes", "holes"),
            ("lost tasks", "task_lost"),
            ("windows without a reply when one was due", "no_reply"),
            ("empty windows when content was due", "empty"),
            ("invalid windows", "invalid"),
            ("windows over budget", "over_budget"),
            ("windows without the system prompt", "system_lost"),
        ):
            count = sum(getattr(s, attribute) for s in rows)
            checks.append((f"{name}: {count} {label} (target 0)", count == 0))
        for kind, target in (("chat", CHAT_TARGET), ("agent", AGENT_TARGET)):
            use = _use(summaries, name, kind)
            checks.append(
                (
                    f"{name}: mean budget use on {kind} {use:.1%} (target >= {target:.0%})",
                    use >= target,
                )
            )
        for c in (c for c in comparisons if c.component == name):
            fair = c.sound
            if not fair.cases:
                continue  # no sound incumbent window to compare with
            checks.append(
                (
                    f"{name}: budget use on {c.category} {fair.use:.1%} >= {c.incumbent}'s "
                    f"{fair.incumbent_use:.1%} on its {fair.cases} sound windows "
                    f"(fewer tokens in {fair.fewer_tokens})",
                    fair.use >= fair.incumbent_use,
                )
            )
    return checks


def _due(count: int, due: int) -> str:
    return f"{count} / {due}"


def table(summaries: Sequence[Summary]) -> str:
    """The results as a Markdown table (one row per component and category)."""
    header = (
        "| framework | component | category | windows | holes | task lost | "
        "no reply / due | empty / due | invalid | over budget | system lost | budget use |"
    )
    lines = [header, "|" + "---|" * 12]
    for s in summaries:
        errors = f" ({s.errors} errors)" if s.errors else ""
        name = f"**{s.component}**" if s.cupel else s.component
        lines.append(
            f"| {s.framework} | {name} | {s.category} | {s.windows}{errors} | {s.holes} | "
            f"{s.task_lost} | {_due(s.no_reply, s.reply_due)} | "
            f"{_due(s.empty, s.content_due)} | {s.invalid} | {s.over_budget} | "
            f"{s.system_lost} | {s.budget_use:.1%} |"
        )
    return "\n".join(lines)


def command(cases: int, seed: int) -> str:
    """The command reproducing a run."""
    parts = ["python -m benchmarks.window_quality"]
    if cases != CASES:
        parts.append(f"--cases {cases}")
    if seed != SEED:
        parts.append(f"--seed {seed}")
    return " ".join(parts)


def comparison_table(comparisons: Sequence[Comparison]) -> str:
    """Budget use against the incumbents, as a Markdown table: for each subset of the
    cases, how many, the mean use of cupel / of the incumbent, and in how many cupel's
    window holds fewer tokens."""
    lines = [
        "| cupel component | incumbent | category | all cases | use: cupel / incumbent | "
        "cupel fewer | incumbent usable | use | cupel fewer | incumbent sound | use | "
        "cupel fewer |",
        "|" + "---|" * 12,
    ]
    for c in comparisons:
        lines.append(
            f"| {c.component} | {c.incumbent} | {c.category} | {c.all.cells()} | "
            f"{c.usable.cells()} | {c.sound.cells()} |"
        )
    return "\n".join(lines)


def table_block(
    summaries: Sequence[Summary], comparisons: Sequence[Comparison], cases: int, seed: int
) -> str:
    """The tables with the command that produced them, between the doc's markers."""
    return (
        f"{TABLE_START}\n"
        f"{cases} cases per category, seed {seed}: `{command(cases, seed)}`\n\n"
        f"{table(summaries)}\n\n"
        f"Budget use against the incumbents, on the same cases:\n\n"
        f"{comparison_table(comparisons)}\n"
        f"{TABLE_END}"
    )


def update_docs(path: Path, block: str) -> None:
    """Replace the table block of the doc at ``path`` (``block`` as :func:`table_block`
    gives it, between the markers)."""
    inner = block.removeprefix(f"{TABLE_START}\n").removesuffix(f"\n{TABLE_END}")
    replace_block(path, TABLE_START, TABLE_END, inner)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.window_quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", type=int, default=None, help=f"per category (default {CASES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CASES} cases per category")
    parser.add_argument("--json", type=Path, help="write the summary and every outcome here")
    parser.add_argument("--docs", type=Path, help="rewrite the table block of this Markdown file")
    args = parser.parse_args(argv)
    cases = args.cases if args.cases is not None else (QUICK_CASES if args.quick else CASES)
    if cases < 1:
        parser.error(f"--cases must be >= 1, got {cases}")
    started = time.perf_counter()
    generated = generate_cases(cases, seed=args.seed)
    outcomes = run(generated)
    summaries = summarize(outcomes)
    comparisons = compare(outcomes)
    checks = targets(summaries, comparisons)
    print(f"Window quality: {cases} cases per category, seed {args.seed}")
    print(f"reproduce: {command(cases, args.seed)}\n")
    print(table(summaries))
    print("\nBudget use against the incumbents, on the same cases:\n")
    print(comparison_table(comparisons))
    print("\nTargets (cupel components):")
    for label, met in checks:
        print(f"  [{'met' if met else 'NOT MET'}] {label}")
    elapsed = time.perf_counter() - started
    print(f"\n{len(generated)} cases, {len(outcomes)} windows in {elapsed:.1f} s")
    if args.json is not None:
        payload = {
            "cases": cases,
            "seed": args.seed,
            "summary": [asdict(s) for s in summaries],
            "comparisons": [asdict(c) for c in comparisons],
            "targets": [{"check": label, "met": met} for label, met in checks],
            "outcomes": [asdict(o) for o in outcomes],
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if args.docs is not None:
        update_docs(args.docs, table_block(summaries, comparisons, cases, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
