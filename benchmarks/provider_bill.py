"""The provider-bill benchmark: are the windows within budget as the provider bills them?

    python -m benchmarks.provider_bill                  # 20 cases per flavor, seed 20261230
    python -m benchmarks.provider_bill --cases 40 --seed 3 --json results.json
    python -m benchmarks.provider_bill --quick          # 2 cases per flavor (tests)

Every history component is given a budget and a generated history
(:mod:`benchmarks.bill_cases`: prose, CJK, images, many short messages, JSON and code
tool outputs, long single messages, a mix with invalid tool calls); the window it returns
is billed by :mod:`benchmarks.bill` — cl100k text, per-message and reply overheads,
tool calls, images by their dimensions — which knows nothing of cupel's counting. Rows:

- LangChain: ``select_messages``, ``CupelMessageSelector``, ``CupelContextMiddleware``
  (through ``wrap_model_call`` with a real ``ModelRequest``), each with its ``default``
  counter (no ``token_counter`` given) and a real ``text`` counter (``token_counter=``
  cl100k on text, ``token_counter_input="text"``); the incumbent ``trim_messages``
  (``strategy="last"``, ``include_system=True``, ``start_on="human"``) with
  ``count_tokens_approximately``, plain and with ``use_usage_metadata_scaling=True``
  (the AI messages carry the usage their provider reported);
- LlamaIndex: ``CupelChatMemory``, ``CupelMemory`` and the incumbents
  ``ChatMemoryBuffer`` and ``Memory`` (messages put one by one), with LlamaIndex's default
  tokenizer;
- documents: ``CupelDocumentCompressor`` and ``CupelRetriever`` (``default`` and
  ``text`` counters) on LangChain ``Document`` s, ``CupelNodePostprocessor`` on
  ``NodeWithScore`` s, billed as the cl100k tokens of the text the model receives.

Per row: windows, the share over budget, the worst overshoot (bill / budget), the mean
budget use by the bill, and what cupel counted for the window (its ``SelectionReport``'s
``included_tokens``) over what was billed. Targets: the default counter <= 2% of windows
over budget and none beyond 1.10x; a real text counter 0% over; mean use >= 75%.
Deterministic: the same seed gives the same table on any machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: python benchmarks/provider_bill.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bill import Bill
from benchmarks.bill_cases import (
    DOCUMENT_FLAVORS,
    FLAVORS,
    Case,
    DocumentCase,
    generate_case,
    generate_documents,
    to_documents,
    to_langchain,
    to_llamaindex,
    to_nodes,
)
from benchmarks.window_components import COMPONENTS, fill_memory, middleware_window

__all__ = [
    "DOCUMENT_ROWS",
    "HISTORY_ROWS",
    "Outcome",
    "Row",
    "Summary",
    "main",
    "run",
    "run_documents",
    "summarize",
    "table",
    "targets",
]

SEED = 20261230
CASES = 20
QUICK_CASES = 2
OVER_SHARE = 0.02
WORST = 1.10
USE = 0.75


# -- the counters ----------------------------------------------------------------------------
_ENCODE: Callable[[str], Sequence[Any]] | None = None


def text_tokens(text: str) -> int:
    """A real text counter: cl100k tokens of ``text``."""
    global _ENCODE
    if _ENCODE is None:
        from llama_index.core.utils import get_tokenizer

        _ENCODE = get_tokenizer()
    return len(_ENCODE(text))


TEXT_COUNTER: dict[str, Any] = {"token_counter": text_tokens, "token_counter_input": "text"}
"""The ``text`` counter dimension of the LangChain history components."""


# -- the rows ----------------------------------------------------------------------------------
Selected = tuple[Sequence[Any], "int | None"]
"""A window and what cupel counted for it (``None``: unknown)."""


@dataclass(frozen=True)
class Row:
    """One component with one counter: ``select(items, budget)`` returns the window and
    what the component counted for it. ``counter`` is ``default``, ``text`` or the
    incumbent's counter; ``target`` names the targets that apply (``default`` or
    ``text``)."""

    component: str
    framework: str
    cupel: bool
    counter: str
    target: str
    select: Callable[[list[Any], int], Selected]
    setup: str


def _counted(component: Any) -> int | None:
    try:
        report = component.last_report
    except Exception:  # the report is a bonus: never fail the window for it
        return None
    return None if report is None else report.included_tokens


def _select_messages(history: list[Any], budget: int, **options: Any) -> Selected:
    from cupel_langchain import select_messages, select_messages_with_report

    window = select_messages(history, max_tokens=budget, **options)
    try:
        _, report = select_messages_with_report(history, max_tokens=budget, **options)
        counted: int | None = report.included_tokens
    except Exception:
        counted = None
    return window, counted


def _selector(history: list[Any], budget: int, **options: Any) -> Selected:
    from cupel_langchain import CupelMessageSelector

    selector = CupelMessageSelector(max_tokens=budget, **options)
    return selector.invoke(history), _counted(selector)


def _middleware(history: list[Any], budget: int, **options: Any) -> Selected:
    from cupel_langchain import CupelContextMiddleware

    middleware = CupelContextMiddleware(max_tokens=budget, **options)
    return middleware_window(middleware, history), _counted(middleware)


def _trim_scaled(history: list[Any], budget: int) -> Selected:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    window = trim_messages(
        history,
        max_tokens=budget,
        strategy="last",
        token_counter=partial(count_tokens_approximately, use_usage_metadata_scaling=True),
        include_system=True,
        start_on="human",
    )
    return window, None


def _chat_memory(history: list[Any], budget: int) -> Selected:
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(chat_history=history, token_limit=budget)
    return memory.get(), _counted(memory)


def _cupel_memory(history: list[Any], budget: int) -> Selected:
    from cupel_llamaindex import CupelMemory

    memory = CupelMemory.from_defaults(token_limit=budget)
    return fill_memory(memory, history), _counted(memory)


def _incumbent(name: str) -> Callable[[list[Any], int], Selected]:
    component = next(c for c in COMPONENTS if c.name == name)

    def select(history: list[Any], budget: int) -> Selected:
        return component.select(history, budget), None

    return select


def _history_rows() -> tuple[Row, ...]:
    rows: list[Row] = []
    for name, driver, setup in (
        ("select_messages", _select_messages, "select_messages(history, max_tokens=B{})"),
        (
            "CupelMessageSelector",
            _selector,
            "CupelMessageSelector(max_tokens=B{}).invoke(history)",
        ),
        (
            "CupelContextMiddleware",
            _middleware,
            "CupelContextMiddleware(max_tokens=B{}).wrap_model_call(ModelRequest(...), h)",
        ),
    ):
        rows.append(Row(name, "langchain", True, "default", "default", driver, setup.format("")))
        text = ", token_counter=cl100k, token_counter_input='text'"
        rows.append(
            Row(
                name,
                "langchain",
                True,
                "text",
                "text",
                partial(driver, **TEXT_COUNTER),
                setup.format(text),
            )
        )
    trim = next(c for c in COMPONENTS if c.name == "trim_messages")
    rows.append(
        Row(
            "trim_messages",
            "langchain",
            False,
            "approximate",
            "default",
            _incumbent("trim_messages"),
            trim.setup,
        )
    )
    rows.append(
        Row(
            "trim_messages",
            "langchain",
            False,
            "approx+usage",
            "default",
            _trim_scaled,
            trim.setup.replace(
                "token_counter=count_tokens_approximately",
                "token_counter=partial(count_tokens_approximately, "
                "use_usage_metadata_scaling=True)",
            ),
        )
    )
    rows.append(
        Row(
            "CupelChatMemory",
            "llamaindex",
            True,
            "default",
            "default",
            _chat_memory,
            "CupelChatMemory.from_defaults(chat_history=history, token_limit=B).get()",
        )
    )
    rows.append(
        Row(
            "CupelMemory",
            "llamaindex",
            True,
            "default",
            "default",
            _cupel_memory,
            "CupelMemory.from_defaults(token_limit=B); put(m) for each message; get()",
        )
    )
    for name in ("ChatMemoryBuffer", "Memory"):
        component = next(c for c in COMPONENTS if c.name == name)
        rows.append(
            Row(name, "llamaindex", False, "default", "default", _incumbent(name), component.setup)
        )
    return tuple(rows)


HISTORY_ROWS: tuple[Row, ...] = _history_rows()
"""Every history component and counter, LangChain first, cupel's before the incumbents."""


def _compressor(documents: list[Any], budget: int, **options: Any) -> Selected:
    from cupel_langchain import CupelDocumentCompressor

    compressor = CupelDocumentCompressor(max_tokens=budget, **options)
    return compressor.compress_documents(documents, "query"), _counted(compressor)


def _retriever(documents: list[Any], budget: int, **options: Any) -> Selected:
    from langchain_core.runnables import RunnableLambda

    from cupel_langchain import CupelRetriever

    retriever = CupelRetriever(
        base_retriever=RunnableLambda(lambda query: documents), max_tokens=budget, **options
    )
    return retriever.invoke("query"), _counted(retriever)


def _postprocessor(nodes: list[Any], budget: int) -> Selected:
    from cupel_llamaindex import CupelNodePostprocessor

    postprocessor = CupelNodePostprocessor(max_tokens=budget)
    return postprocessor.postprocess_nodes(nodes, query_str="query"), _counted(postprocessor)


def _document_rows() -> tuple[Row, ...]:
    rows: list[Row] = []
    for name, driver, setup in (
        (
            "CupelDocumentCompressor",
            _compressor,
            "CupelDocumentCompressor(max_tokens=B{}).compress_documents(docs, q)",
        ),
        (
            "CupelRetriever",
            _retriever,
            "CupelRetriever(base_retriever=..., max_tokens=B{}).invoke(q)",
        ),
    ):
        rows.append(Row(name, "langchain", True, "default", "default", driver, setup.format("")))
        rows.append(
            Row(
                name,
                "langchain",
                True,
                "text",
                "text",
                partial(driver, token_counter=text_tokens),
                setup.format(", token_counter=cl100k"),
            )
        )
    rows.append(
        Row(
            "CupelNodePostprocessor",
            "llamaindex",
            True,
            "default",
            "default",
            _postprocessor,
            "CupelNodePostprocessor(max_tokens=B).postprocess_nodes(nodes, query_str=q)",
        )
    )
    return tuple(rows)


DOCUMENT_ROWS: tuple[Row, ...] = _document_rows()
"""Every document / node component and counter."""


# -- running -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """One row on one case: the window's bill, or the error the component raised."""

    component: str
    counter: str
    case: str
    flavor: str
    budget: int
    bill: int = 0
    counted: int | None = None
    size: int = 0
    """Messages (documents, nodes) in the window."""
    error: str | None = None

    @property
    def ratio(self) -> float:
        """Bill / budget."""
        return self.bill / self.budget

    @property
    def over(self) -> bool:
        return self.error is None and self.bill > self.budget


def _outcome(
    row: Row, name: str, flavor: str, budget: int, items: list[Any], price: Any
) -> Outcome:
    try:
        window, counted = row.select(items, budget)
        window = list(window)
        billed = price(window)
    except Exception as exc:  # a component may fail: counted, not fatal
        error = f"{type(exc).__name__}: {exc}"[:300]
        return Outcome(row.component, row.counter, name, flavor, budget, error=error)
    return Outcome(row.component, row.counter, name, flavor, budget, billed, counted, len(window))


def run_case(case: Case, rows: Sequence[Row], bill: Bill) -> list[Outcome]:
    """Every history row on ``case`` (converted once per framework; components get a
    copy of the list and do not modify the messages)."""
    bill.add_images(case.images)
    histories: dict[str, list[Any]] = {}
    out: list[Outcome] = []
    for row in rows:
        if row.framework not in histories:
            histories[row.framework] = (
                to_langchain(case, bill) if row.framework == "langchain" else to_llamaindex(case)
            )
        price = bill.langchain if row.framework == "langchain" else bill.llamaindex
        out.append(
            _outcome(
                row, case.name, case.flavor, case.budget, list(histories[row.framework]), price
            )
        )
    return out


def run(
    cases: Sequence[Case], rows: Sequence[Row] = HISTORY_ROWS, bill: Bill | None = None
) -> list[Outcome]:
    """Every history row on every case."""
    bill = bill or Bill()
    return [outcome for case in cases for outcome in run_case(case, rows, bill)]


def run_documents(
    cases: Sequence[DocumentCase], rows: Sequence[Row] = DOCUMENT_ROWS, bill: Bill | None = None
) -> list[Outcome]:
    """Every document row on every document set."""
    bill = bill or Bill()
    out: list[Outcome] = []
    for case in cases:
        documents, nodes = to_documents(case), to_nodes(case)
        for row in rows:
            if row.framework == "langchain":
                items, price = documents, bill.documents
            else:
                items, price = nodes, bill.nodes
            out.append(_outcome(row, case.name, case.flavor, case.budget, list(items), price))
    return out


# -- summary -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One row on one flavor."""

    windows: int
    over: int
    worst: float
    counted_share: float | None = None
    """Mean of what cupel counted / the bill (``None``: not reported)."""

    def text(self) -> str:
        if not self.windows:
            return "–"
        return f"{self.over / self.windows:.0%} ({self.worst:.2f}x)"


@dataclass(frozen=True)
class Summary:
    """One row over every case."""

    component: str
    framework: str
    cupel: bool
    counter: str
    target: str
    windows: int
    errors: int
    over: int
    worst: float
    """The largest bill / budget."""
    use: float
    """Mean bill / budget over the windows."""
    use_within: float
    """Mean bill / budget over the windows within budget (the use target's figure: an
    over-budget window earns no use)."""
    counted_share: float | None
    """Mean of what cupel counted / the bill, over the windows it reported."""
    flavors: dict[str, Cell] = field(default_factory=dict)
    error_sample: str | None = None

    @property
    def over_share(self) -> float:
        return self.over / self.windows if self.windows else 0.0


def summarize(
    outcomes: Sequence[Outcome], rows: Sequence[Row], flavors: Sequence[str]
) -> list[Summary]:
    """One :class:`Summary` per row (in order), with its cell per flavor."""
    out: list[Summary] = []
    for row in rows:
        mine = [o for o in outcomes if (o.component, o.counter) == (row.component, row.counter)]
        done = [o for o in mine if o.error is None]
        errors = [o for o in mine if o.error is not None]
        counted = [o.counted / o.bill for o in done if o.counted is not None and o.bill]
        within = [o.ratio for o in done if not o.over]
        cells: dict[str, Cell] = {}
        for flavor in flavors:
            these = [o for o in done if o.flavor == flavor]
            shares = [o.counted / o.bill for o in these if o.counted is not None and o.bill]
            cells[flavor] = Cell(
                len(these),
                sum(o.over for o in these),
                max((o.ratio for o in these), default=0),
                statistics.fmean(shares) if shares else None,
            )
        out.append(
            Summary(
                component=row.component,
                framework=row.framework,
                cupel=row.cupel,
                counter=row.counter,
                target=row.target,
                windows=len(done),
                errors=len(errors),
                over=sum(o.over for o in done),
                worst=max((o.ratio for o in done), default=0.0),
                use=statistics.fmean(o.ratio for o in done) if done else 0.0,
                use_within=statistics.fmean(within) if within else 0.0,
                counted_share=statistics.fmean(counted) if counted else None,
                flavors=cells,
                error_sample=errors[0].error if errors else None,
            )
        )
    return out


def targets(summary: Summary) -> list[tuple[str, bool]]:
    """The row's targets, each as (what, met): default counter <= 2% over and none beyond
    1.10x; a real text counter none over; mean use >= 75% (over the windows within
    budget); no errors."""
    checks: list[tuple[str, bool]] = []
    share = summary.over_share
    if summary.target == "text":
        checks.append((f"{share:.0%} over (0%)", summary.over == 0))
    else:
        checks.append((f"{share:.0%} over (<= {OVER_SHARE:.0%})", share <= OVER_SHARE))
        checks.append((f"worst {summary.worst:.2f}x (<= {WORST:.2f}x)", summary.worst <= WORST))
    use = summary.use_within
    checks.append((f"use within budget {use:.0%} (>= {USE:.0%})", use >= USE))
    if summary.errors:
        checks.append((f"{summary.errors} errors (0)", False))
    return checks


def table(summaries: Sequence[Summary]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| framework | component | counter | windows | over budget | worst | mean use | "
        "use within budget | counted / billed | targets |",
        "|" + "---|" * 10,
    ]
    for s in summaries:
        errors = f" ({s.errors} errors)" if s.errors else ""
        name = f"**{s.component}**" if s.cupel else s.component
        counted = f"{s.counted_share:.2f}" if s.counted_share is not None else "–"
        checks = targets(s)
        met = "met" if all(ok for _, ok in checks) else "NOT MET"
        lines.append(
            f"| {s.framework} | {name} | {s.counter} | {s.windows}{errors} | "
            f"{s.over_share:.0%} | {s.worst:.2f}x | {s.use:.0%} | {s.use_within:.0%} | "
            f"{counted} | {met} |"
        )
    return "\n".join(lines)


def flavor_table(summaries: Sequence[Summary], flavors: Sequence[str]) -> str:
    """Per row and flavor: the share of windows over budget (the worst bill / budget)."""
    lines = [
        "| component | counter | " + " | ".join(flavors) + " |",
        "|" + "---|" * (2 + len(flavors)),
    ]
    for s in summaries:
        cells = " | ".join(s.flavors[f].text() for f in flavors)
        lines.append(f"| {s.component} | {s.counter} | {cells} |")
    return "\n".join(lines)


def counted_table(summaries: Sequence[Summary], flavors: Sequence[str]) -> str:
    """Per row reporting its counts and flavor: what cupel counted / what was billed."""
    lines = [
        "| component | counter | " + " | ".join(flavors) + " |",
        "|" + "---|" * (2 + len(flavors)),
    ]
    for s in summaries:
        if s.counted_share is None:
            continue
        shares = [s.flavors[f].counted_share for f in flavors]
        cells = " | ".join("–" if x is None else f"{x:.2f}" for x in shares)
        lines.append(f"| {s.component} | {s.counter} | {cells} |")
    return "\n".join(lines)


def target_lines(summaries: Sequence[Summary]) -> list[str]:
    """One line per row: its targets, met or not."""
    out: list[str] = []
    for s in summaries:
        checks = targets(s)
        met = all(ok for _, ok in checks)
        detail = "; ".join(f"{label}{'' if ok else ' ✗'}" for label, ok in checks)
        out.append(f"  [{'met' if met else 'NOT MET'}] {s.component} / {s.counter}: {detail}")
    return out


# -- the command -------------------------------------------------------------------------------
def command(cases: int, seed: int) -> str:
    """The command reproducing a run."""
    parts = ["python -m benchmarks.provider_bill"]
    if cases != CASES:
        parts.append(f"--cases {cases}")
    if seed != SEED:
        parts.append(f"--seed {seed}")
    return " ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.provider_bill", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--cases", type=int, default=None, help=f"per flavor (default {CASES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CASES} cases per flavor")
    parser.add_argument("--json", type=Path, help="write the summaries and every outcome here")
    args = parser.parse_args(argv)
    cases = args.cases if args.cases is not None else (QUICK_CASES if args.quick else CASES)
    if cases < 1:
        parser.error(f"--cases must be >= 1, got {cases}")
    started = time.perf_counter()
    bill = Bill()
    histories = [
        generate_case(flavor, n, seed=args.seed, bill=bill)
        for flavor in FLAVORS
        for n in range(cases)
    ]
    documents = [
        generate_documents(flavor, n, seed=args.seed, bill=bill)
        for flavor in DOCUMENT_FLAVORS
        for n in range(cases)
    ]
    outcomes = run(histories, HISTORY_ROWS, bill)
    document_outcomes = run_documents(documents, DOCUMENT_ROWS, bill)
    summaries = summarize(outcomes, HISTORY_ROWS, FLAVORS)
    document_summaries = summarize(document_outcomes, DOCUMENT_ROWS, DOCUMENT_FLAVORS)
    print(f"Provider bill: {cases} cases per flavor, seed {args.seed}")
    print(f"reproduce: {command(cases, args.seed)}\n")
    print("Chat and agent histories (bill: cl100k text + 3 per message + tool calls + images")
    print("by dimensions + 3 for the reply):\n")
    print(table(summaries))
    print("\nOver budget per flavor (worst bill / budget):\n")
    print(flavor_table(summaries, FLAVORS))
    print("\nWhat cupel counted for the window / what the provider billed, per flavor:\n")
    print(counted_table(summaries, FLAVORS))
    print("\nDocuments and nodes (bill: cl100k of the text the model receives):\n")
    print(table(document_summaries))
    print("\nOver budget per flavor (worst bill / budget):\n")
    print(flavor_table(document_summaries, DOCUMENT_FLAVORS))
    print("\nCounted / billed, per flavor:\n")
    print(counted_table(document_summaries, DOCUMENT_FLAVORS))
    print(
        f"\nTargets: default counter <= {OVER_SHARE:.0%} of windows over budget and none "
        f"beyond {WORST:.2f}x; text counter 0% over; mean use >= {USE:.0%} (windows "
        "within budget):"
    )
    for line in target_lines([*summaries, *document_summaries]):
        print(line)
    failing = [s for s in (*summaries, *document_summaries) if s.error_sample]
    if failing:
        print("\nErrors (first of each row):")
        for s in failing:
            print(f"  {s.component} / {s.counter}: {s.error_sample}")
    elapsed = time.perf_counter() - started
    windows = len(outcomes) + len(document_outcomes)
    print(
        f"\n{len(histories)} histories, {len(documents)} document sets, {windows} windows "
        f"in {elapsed:.1f} s"
    )
    if args.json is not None:
        payload = {
            "cases": cases,
            "seed": args.seed,
            "setups": {
                f"{r.component} / {r.counter}": r.setup for r in (*HISTORY_ROWS, *DOCUMENT_ROWS)
            },
            "summary": [asdict(s) for s in summaries],
            "document_summary": [asdict(s) for s in document_summaries],
            "targets": {
                f"{s.component} / {s.counter}": [
                    {"check": label, "met": ok} for label, ok in targets(s)
                ]
                for s in (*summaries, *document_summaries)
            },
            "outcomes": [asdict(o) for o in outcomes],
            "document_outcomes": [asdict(o) for o in document_outcomes],
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
