"""The benchmark harness: every workload of ../shared/bench/WORKLOADS.md, one table.

    python -m benchmarks                 # from the repository root; or: python benchmarks/run.py
    python -m benchmarks --quick         # small N, 3 runs: a smoke test of the harness
    python -m benchmarks --only W1,W3 --runs 11 --json results.json
    python -m benchmarks --only W11 --million   # W11: a million items (several minutes)

For each case the inputs, budget and pipeline (or adapter) are built before timing; the
timed call runs after warm-ups, ``--runs`` times (median, min and max reported), then once
more under tracemalloc for the peak memory (an untimed pass). Per row:

- ``÷floor``: median ÷ the workload's floor (core workloads: one pass reading every item's
  tokens plus one ``sorted()`` of N distinct floats, timed in the same process);
- ``÷incumbent``: median ÷ the incumbent's median, both measured in this run (W5-W7);
- ``×10 N``: median ÷ the median of the same workload at a tenth of the items.

W9 (the report's price) times ``dry_run`` against ``run`` (the ``÷incumbent`` column, both
measured in this run) for W1 and W3, and once more with every report entry read. W11 (a
million items) runs W3's items with Greedy and Chronological, ``run`` and ``dry_run``; it is
left out unless ``--million`` is given (building the items alone takes about a minute).

A summary checks the targets of WORKLOADS.md against this run. Incumbent calls slower
than 2 s (``ChatMemoryBuffer.get()`` at 10,000 messages) get 3 runs, no warm-up and no
traced pass. W5-W7 need the LangChain / LlamaIndex extras; without them they are skipped
with a note.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import bench_core

SLOW_SECONDS = 2.0
SLOW_RUNS = 3


# -- measurement ----------------------------------------------------------------------------
@dataclass
class Timing:
    median_ms: float
    min_ms: float
    max_ms: float
    runs: int
    peak_mib: float | None


def measure(fn: Callable[[], object], runs: int, warmups: int, trace_memory: bool = True) -> Timing:
    """Time ``fn``: warm-ups, then ``runs`` timed calls (a slow first call cuts the runs to
    :data:`SLOW_RUNS` without warm-up or traced pass), then one traced call for the peak."""
    start = time.perf_counter()
    fn()
    if time.perf_counter() - start > SLOW_SECONDS:
        runs, warmups, trace_memory = min(runs, SLOW_RUNS), 0, False
    for _ in range(max(0, warmups - 1)):
        fn()
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000.0)
    peak = None
    if trace_memory:
        gc.collect()
        tracemalloc.start()
        try:
            fn()
            peak = tracemalloc.get_traced_memory()[1] / 2**20
        finally:
            tracemalloc.stop()
    return Timing(statistics.median(samples), min(samples), max(samples), runs, peak)


def traced_build(build: Callable[[], object]) -> tuple[object, float]:
    """Build a case under tracemalloc: (the case, MiB still allocated after building)."""
    gc.collect()
    tracemalloc.start()
    try:
        case = build()
        size = tracemalloc.get_traced_memory()[0] / 2**20
    finally:
        tracemalloc.stop()
    return case, size


# -- cases ----------------------------------------------------------------------------------
@dataclass
class Case:
    """One row: a timed cupel call, plus optionally a floor or an incumbent to compare."""

    workload: str
    label: str
    n: int
    call: Callable[[], object]
    input_mib: float | None = None
    floor: Callable[[], object] | None = None
    incumbent: Callable[[], object] | None = None
    incumbent_label: str = ""
    note: str = ""
    checks: dict[str, bool] = field(default_factory=dict)


@dataclass
class Row:
    workload: str
    label: str
    n: int
    timing: Timing
    input_mib: float | None
    floor_ms: float | None = None
    incumbent_label: str = ""
    incumbent: Timing | None = None
    scaling: float | None = None
    floor_scaling: float | None = None
    note: str = ""
    checks: dict[str, bool] = field(default_factory=dict)

    @property
    def floor_ratio(self) -> float | None:
        return None if self.floor_ms is None else self.timing.median_ms / self.floor_ms

    @property
    def incumbent_ratio(self) -> float | None:
        if self.incumbent is None:
            return None
        return self.timing.median_ms / self.incumbent.median_ms


@dataclass
class Plan:
    sizes: dict[str, list[int]]
    runs: int
    warmups: int
    skipped: list[str] = field(default_factory=list)


FULL_SIZES = {
    "W1": [1_000, 10_000, 100_000],
    "W2": [100, 1],  # bucket sizes; N = 200 documents
    "W3": [1_000, 10_000, 100_000],
    "W3f": [1_000, 10_000, 100_000],
    "W4": [1_000, 10_000],
    "W5": [1_000, 10_000],
    "W6": [1_000, 10_000],
    "W7": [200],
    "W8": [10, 50, 200, 1_000, 10_000],
    "W9": [10_000, 100_000],
    "W10": [100_000],
    "W11": [1_000_000],
}
QUICK_SIZES = {
    "W1": [100, 1_000],
    "W2": [100, 1],
    "W3": [100, 1_000],
    "W3f": [1_000],
    "W4": [1_000],
    "W5": [100, 1_000],
    "W6": [100, 1_000],
    "W7": [200],
    "W8": [10, 1_000],
    "W9": [1_000],
    "W10": [1_000],
    "W11": [100_000],
}
WORKLOADS = tuple(FULL_SIZES)
MILLION = "W11"
"""The workload that runs only with ``--million`` (or when named in ``--only``)."""
SPEC_SIZES = {"W3f": {10_000}, "W4": {10_000}}
"""Sizes WORKLOADS.md defines; the others listed above are extra points for the ×10 column."""


def core_cases(workload: str, sizes: list[int]) -> Iterator[Case]:
    builders = {
        "W1": ("W1 chat", bench_core.w1),
        "W2": ("W2 rag", bench_core.w2),
        "W3": ("W3 stress", bench_core.w3),
        "W3f": ("W3f frequency", bench_core.w3f),
        "W4": ("W4 quota", bench_core.w4),
    }
    title, build = builders[workload]
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: build(size))  # type: ignore[misc]
        case: bench_core.CoreCase = built  # type: ignore[assignment]
        label = f"{title} bucket {size}" if workload == "W2" else title
        extra = workload in SPEC_SIZES and size not in SPEC_SIZES[workload]
        yield Case(
            workload,
            label,
            len(case.items),
            case.run,
            input_mib=input_mib,
            floor=bench_core.floor(case.items),
            note="extra size (scaling)" if extra else "",
        )


def w9_cases(sizes: list[int]) -> Iterator[Case]:
    """W9: ``dry_run`` (the report included) against ``run`` on W1's and W3's items; and
    ``dry_run`` with every entry of the report read (``included`` and ``excluded``)."""
    builders = (("W1", bench_core.w1), ("W3", bench_core.w3))
    for size in sizes:
        for name, build in builders:
            built, input_mib = traced_build(lambda size=size, build=build: build(size))  # type: ignore[misc]
            case: bench_core.CoreCase = built  # type: ignore[assignment]
            yield Case(
                "W9",
                f"W9 report {name}",
                len(case.items),
                case.dry_run,
                input_mib=input_mib,
                incumbent=case.run,
                incumbent_label="run",
                note="dry_run ÷ run",
            )
            yield Case(
                "W9",
                f"W9 report {name}, entries read",
                len(case.items),
                case.dry_run_read,
                input_mib=input_mib,
                incumbent=case.run,
                incumbent_label="run",
                note="dry_run and every report entry read ÷ run (no target: the price of reading)",
            )
            del case, built


def w11_cases(sizes: list[int]) -> Iterator[Case]:
    """W11: W3's items at a million, Greedy and Chronological; ``run`` and ``dry_run``
    on one build of the items."""
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: bench_core.w11(size))  # type: ignore[misc]
        case: bench_core.CoreCase = built  # type: ignore[assignment]
        floor = bench_core.floor(case.items)
        n = len(case.items)
        yield Case("W11", "W11 million run", n, case.run, input_mib=input_mib, floor=floor)
        yield Case("W11", "W11 million dry_run", n, case.dry_run, input_mib=input_mib, floor=floor)
        del case, built


def w5_cases(sizes: list[int]) -> Iterator[Case]:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    from benchmarks import bench_langchain
    from cupel_langchain import select_messages, tool_call_problems

    for size in sizes:
        history, input_mib = traced_build(lambda size=size: bench_langchain.make_history(size))  # type: ignore[misc]
        messages: list = history  # type: ignore[type-arg, assignment]
        budget = count_tokens_approximately(messages) // 4

        def ours(messages: list = messages, budget: int = budget) -> object:  # type: ignore[type-arg]
            return select_messages(
                messages, max_tokens=budget, token_counter=count_tokens_approximately
            )

        def theirs(messages: list = messages, budget: int = budget) -> object:  # type: ignore[type-arg]
            return trim_messages(
                messages,
                strategy="last",
                max_tokens=budget,
                token_counter=count_tokens_approximately,
            )

        checks = {
            "cupel tool groups valid": not tool_call_problems(ours()),  # type: ignore[arg-type]
            "trim_messages tool groups valid": not tool_call_problems(theirs()),  # type: ignore[arg-type]
        }
        yield Case(
            "W5",
            "W5 langchain history",
            size,
            ours,
            input_mib=input_mib,
            incumbent=theirs,
            incumbent_label="trim_messages",
            note=", ".join(f"{name}: {_yes(ok)}" for name, ok in checks.items()),
            checks=checks,
        )


def w6_cases(sizes: list[int]) -> Iterator[Case]:
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.storage.chat_store import SimpleChatStore

    from benchmarks import bench_llamaindex
    from cupel_llamaindex import CupelChatMemory

    tokenizer = bench_llamaindex.quarter_tokenizer
    for size in sizes:
        history, input_mib = traced_build(lambda size=size: bench_llamaindex.conversation(size))  # type: ignore[misc]
        messages: list = history  # type: ignore[type-arg, assignment]
        total = len(tokenizer(" ".join(str(m.content) for m in messages)))
        budget = total // 4

        def store(messages: list = messages) -> SimpleChatStore:  # type: ignore[type-arg]
            chat_store = SimpleChatStore()
            chat_store.set_messages("chat_history", list(messages))
            return chat_store

        incumbent = ChatMemoryBuffer(token_limit=budget, tokenizer_fn=tokenizer, chat_store=store())
        shared = store()

        memory = CupelChatMemory(token_limit=budget, tokenizer_fn=tokenizer, chat_store=store())

        def fresh(budget: int = budget, shared: SimpleChatStore = shared) -> object:
            # A new memory per call: every message is mapped and counted again.
            return CupelChatMemory(
                token_limit=budget, tokenizer_fn=tokenizer, chat_store=shared
            ).get()

        yield Case(
            "W6",
            "W6 llamaindex memory",
            size,
            memory.get,
            input_mib=input_mib,
            incumbent=incumbent.get,
            incumbent_label="ChatMemoryBuffer.get",
            note="get() on one memory holding the history, like the incumbent",
        )
        yield Case(
            "W6",
            "W6 llamaindex memory, fresh",
            size,
            fresh,
            input_mib=input_mib,
            incumbent=incumbent.get,
            incumbent_label="ChatMemoryBuffer.get",
            note="a new CupelChatMemory per call (maps and counts every message)",
        )


def w7_cases(sizes: list[int]) -> Iterator[Case]:
    from llama_index.core.postprocessor import LongContextReorder

    from benchmarks import bench_llamaindex
    from cupel_llamaindex import CupelNodePostprocessor

    tokenizer = bench_llamaindex.quarter_tokenizer
    budget = bench_llamaindex.W7_BUDGET
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: bench_llamaindex.scored_nodes(size))  # type: ignore[misc]
        nodes: list = built  # type: ignore[type-arg, assignment]
        mean_tokens = statistics.mean(len(tokenizer(n.node.get_content())) for n in nodes)
        k = int(budget // mean_tokens)
        reorder = LongContextReorder()
        ours_post = CupelNodePostprocessor(max_tokens=budget, tokenizer_fn=tokenizer)

        def theirs(
            nodes: list = nodes,  # type: ignore[type-arg]
            k: int = k,
            reorder: LongContextReorder = reorder,
        ) -> object:
            top = sorted(nodes, key=_node_score, reverse=True)[:k]
            return reorder.postprocess_nodes(top)

        def ours(
            nodes: list = nodes,  # type: ignore[type-arg]
            post: CupelNodePostprocessor = ours_post,
        ) -> object:
            return post.postprocess_nodes(nodes)

        yield Case(
            "W7",
            "W7 llamaindex postprocess",
            size,
            ours,
            input_mib=input_mib,
            incumbent=theirs,
            incumbent_label=f"top-{k} + LongContextReorder",
        )


def _node_score(node: object) -> float:
    return getattr(node, "score", None) or 0.0


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def w8_cases(sizes: list[int]) -> Iterator[Case]:
    """W8 (small histories): the LangChain rows, then the LlamaIndex memory's."""
    from benchmarks import bench_langchain, bench_llamaindex

    yield from bench_langchain.w8_cases(sizes)
    yield from bench_llamaindex.w8_cases(sizes)


def w10_cases(sizes: list[int]) -> Iterator[Case]:
    """W10 (budget simulation): see benchmarks/bench_simulation.py."""
    from benchmarks import bench_simulation

    yield from bench_simulation.w10_cases(sizes)


ADAPTER_CASES: dict[str, Callable[[list[int]], Iterator[Case]]] = {
    "W5": w5_cases,
    "W6": w6_cases,
    "W7": w7_cases,
    "W8": w8_cases,
}
CORE_CASES: dict[str, Callable[[list[int]], Iterator[Case]]] = {
    "W9": w9_cases,
    "W10": w10_cases,
    "W11": w11_cases,
}
ADAPTER_HELPERS = {
    "W5": "benchmarks/bench_langchain.py: make_history(n); cupel_langchain: select_messages, "
    "tool_call_problems",
    "W6": "benchmarks/bench_llamaindex.py: conversation(n), quarter_tokenizer; "
    "cupel_llamaindex: CupelChatMemory",
    "W7": "benchmarks/bench_llamaindex.py: scored_nodes(n), quarter_tokenizer, W7_BUDGET; "
    "cupel_llamaindex: CupelNodePostprocessor",
    "W8": "benchmarks/bench_langchain.py: w8_cases; benchmarks/bench_llamaindex.py: w8_cases "
    "(both extras)",
}


def measure_workload(workload: str, plan: Plan) -> list[Row]:
    """Build and measure the workload's cases one at a time (so a large case's items are
    freed before the next is built)."""
    sizes = plan.sizes[workload]
    if workload in ADAPTER_CASES:
        cases = ADAPTER_CASES[workload](sizes)
    elif workload in CORE_CASES:
        cases = CORE_CASES[workload](sizes)
    else:
        cases = core_cases(workload, sizes)
    rows = []
    incumbents: dict[Callable[[], object], Timing] = {}
    while True:
        try:
            case = next(cases, None)
        except Exception as exc:  # missing extras or adapter helpers: skip, say why
            if workload not in ADAPTER_CASES:
                raise
            plan.skipped.append(
                f"{workload} skipped ({type(exc).__name__}: {exc}); it needs "
                f"{ADAPTER_HELPERS[workload]}"
            )
            return []
        if case is None:
            break
        timing = measure(case.call, plan.runs, plan.warmups)
        row = Row(
            case.workload,
            case.label,
            case.n,
            timing,
            case.input_mib,
            note=case.note,
            checks=case.checks,
        )
        if case.floor is not None:
            row.floor_ms = measure(case.floor, plan.runs, plan.warmups, False).median_ms
        if case.incumbent is not None:
            row.incumbent_label = case.incumbent_label
            if case.incumbent not in incumbents:  # measured once per workload and size
                incumbents[case.incumbent] = measure(case.incumbent, plan.runs, plan.warmups)
            row.incumbent = incumbents[case.incumbent]
        rows.append(row)
        del case
        print(f"  measured {row.label} N={row.n:,}", file=sys.stderr, flush=True)
    by_size = {(row.label, row.n): row for row in rows}
    for row in rows:
        smaller = by_size.get((row.label, row.n // 10))
        if smaller is not None and row.n % 10 == 0:
            row.scaling = row.timing.median_ms / smaller.timing.median_ms
            if row.floor_ms is not None and smaller.floor_ms:
                row.floor_scaling = row.floor_ms / smaller.floor_ms
    return rows


# -- output -----------------------------------------------------------------------------------
COLUMNS = (
    ("workload", 26, "<"),
    ("N", 8, ">"),
    ("median ms", 11, ">"),
    ("min–max ms", 17, ">"),
    ("peak MiB", 9, ">"),
    ("input MiB", 10, ">"),
    ("÷floor", 8, ">"),
    ("incumbent ms", 13, ">"),
    ("÷incumbent", 11, ">"),
    ("×10 N", 7, ">"),
)


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def table_lines(rows: list[Row]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "  ".join(
            f"{cell:{align}{width}}" for cell, (_, width, align) in zip(cells, COLUMNS, strict=True)
        )

    out = [line([name for name, _, _ in COLUMNS])]
    for row in rows:
        t = row.timing
        incumbent = row.incumbent
        out.append(
            line(
                [
                    row.label,
                    f"{row.n:,}",
                    f"{t.median_ms:.2f}",
                    f"{t.min_ms:.2f}–{t.max_ms:.2f}",
                    _fmt(t.peak_mib, ".1f"),
                    _fmt(row.input_mib, ".1f"),
                    _fmt(row.floor_ratio, ".1f"),
                    _fmt(None if incumbent is None else incumbent.median_ms, ".2f"),
                    _fmt(row.incumbent_ratio, ".3f"),
                    _fmt(row.scaling, ".1f"),
                ]
            )
        )
    return out


def note_lines(rows: list[Row]) -> list[str]:
    out = []
    for row in rows:
        parts = [row.note] if row.note else []
        if row.incumbent is not None:
            inc = row.incumbent
            peak = "n/a (slow)" if inc.peak_mib is None else f"{inc.peak_mib:.1f} MiB"
            parts.append(
                f"incumbent {row.incumbent_label}: {inc.min_ms:.2f}–{inc.max_ms:.2f} ms over "
                f"{inc.runs} runs, peak {peak}"
            )
        if parts:
            out.append(f"  {row.label} N={row.n:,}: " + "; ".join(parts))
    return out


@dataclass
class Target:
    text: str
    measured: str
    met: bool


Measure = Callable[[Row], "tuple[float, str] | None"]
"""A row's figure for a goal and how it is shown; ``None`` when the row has no figure."""


def _ms(digits: int) -> Measure:
    return lambda row: (row.timing.median_ms, f"{row.timing.median_ms:.{digits}f} ms")


def _memory(row: Row) -> tuple[float, str] | None:
    peak, data = row.timing.peak_mib, row.input_mib
    if peak is None or not data:
        return None
    return peak / data, f"{peak:.1f} / {data:.1f} MiB = {peak / data:.2f}×"


def _floor(row: Row) -> tuple[float, str] | None:
    ratio = row.floor_ratio
    return None if ratio is None else (ratio, f"{ratio:.1f}")


def _incumbent(digits: int) -> Measure:
    def measure(row: Row) -> tuple[float, str] | None:
        ratio = row.incumbent_ratio
        return None if ratio is None else (ratio, f"{ratio:.{digits}f}×")

    return measure


def _check(name: str) -> Measure:
    def measure(row: Row) -> tuple[float, str] | None:
        if row.incumbent_ratio is None:
            return None
        valid = row.checks.get(name, False)
        return (0.0 if valid else 1.0), _yes(valid)

    return measure


def _flag(name: str) -> Measure:
    """A check the case made (no incumbent needed): 0 when it holds, else 1."""

    def measure(row: Row) -> tuple[float, str] | None:
        if name not in row.checks:
            return None
        valid = row.checks[name]
        return (0.0 if valid else 1.0), _yes(valid)

    return measure


def _floor_growth(row: Row) -> tuple[float, str] | None:
    """How much the ÷floor ratio grew from a tenth of the items (``scaling ÷ floor
    scaling``: above 1 the pipeline grows faster than its floor)."""
    if row.scaling is None or not row.floor_scaling or row.floor_ratio is None:
        return None
    growth = row.scaling / row.floor_scaling
    before = row.floor_ratio / growth
    return growth, f"÷floor {before:.1f} → {row.floor_ratio:.1f} (×{growth:.2f})"


def _scaling(row: Row) -> tuple[float, str] | None:
    if row.scaling is None:
        return None
    context = "" if row.floor_scaling is None else f" (floor ×{row.floor_scaling:.1f})"
    return row.scaling, f"×{row.scaling:.1f}{context}"


@dataclass(frozen=True)
class Goal:
    """One target of WORKLOADS.md: the rows it judges (a label and size, or every row
    of ``workloads`` (``None``: every row) of size ``n`` when given), the figure, its
    limit, and the target's text (``{label}``, ``{n}`` and ``{tenth}`` fill in)."""

    text: str
    measure: Measure
    limit: float
    label: str | None = None
    n: int | None = None
    workloads: tuple[str, ...] | None = None
    n_for: tuple[str, int] | None = None  # (workload, n): that workload only at that size
    sizes: tuple[int, ...] | None = None  # only rows of these sizes


GOALS: tuple[Goal, ...] = (
    Goal("{label} {n:,} ≤ 30 ms", _ms(2), 30.0, "W1 chat", 10_000),
    Goal("{label} {n:,} ≤ 40 ms", _ms(2), 40.0, "W4 quota", 10_000),
    Goal("W3 stress 100,000 ≤ 1,500 ms", _ms(1), 1500.0, "W3 stress", 100_000),
    Goal("W3 stress 100,000 peak ≤ 3× input memory", _memory, 3.0, "W3 stress", 100_000),
    Goal("W2 rag bucket 1 ≤ 5 ms", _ms(2), 5.0, "W2 rag bucket 1", 200),
    Goal(
        "{label} {n:,} ÷ floor ≤ 8",
        _floor,
        8.0,
        workloads=("W1", "W3", "W4"),
        n_for=("W4", 10_000),
    ),
    Goal(
        "W5 10,000 cupel ≤ 0.7× trim_messages", _incumbent(3), 0.7, "W5 langchain history", 10_000
    ),
    Goal(
        "W5 10,000 cupel keeps tool-call groups valid",
        _check("cupel tool groups valid"),
        0.0,
        "W5 langchain history",
        10_000,
    ),
    Goal(
        "W6 10,000 cupel ≤ 0.01× ChatMemoryBuffer",
        _incumbent(4),
        0.01,
        "W6 llamaindex memory",
        10_000,
    ),
    Goal(
        "W6 10,000, fresh cupel ≤ 0.01× ChatMemoryBuffer",
        _incumbent(4),
        0.01,
        "W6 llamaindex memory, fresh",
        10_000,
    ),
    Goal(
        "{label} {n:,} ÷ floor ≤ 4 (issue 15)",
        _floor,
        4.0,
        workloads=("W1", "W3"),
        sizes=(10_000, 100_000),
    ),
    Goal(
        "{label} {tenth:,} → {n:,}: ÷ floor not growing",
        _floor_growth,
        1.0,
        workloads=("W1", "W3"),
        sizes=(100_000,),
    ),
    Goal("{label} {n:,}: dry_run ≤ 1.3× run", _incumbent(2), 1.3, "W9 report W1"),
    Goal("{label} {n:,}: dry_run ≤ 1.3× run", _incumbent(2), 1.3, "W9 report W3"),
    *(
        Goal(f"{label} {{n:,}}: ≤ {limit:.1f}× {baseline}", _incumbent(2), limit, label, n)
        for label, baseline in (
            ("W8 selector", "trim_messages Runnable"),
            ("W8 select_messages", "trim_messages"),
            ("W8 chat memory", "ChatMemoryBuffer.get"),
        )
        for n, limit in ((10, 1.0), (50, 1.0), (200, 1.0), (1_000, 1.0), (10_000, 0.6))
    ),
    Goal("W8 chat memory {n:,}: window valid", _flag("cupel window valid"), 0.0, "W8 chat memory"),
    Goal("W10 min budget {n:,} ≤ 1 s", _ms(0), 1000.0, "W10 min budget"),
    Goal(
        "W10 min budget {n:,}: same answer as full dry runs",
        _flag("same answer as full dry runs"),
        0.0,
        "W10 min budget",
    ),
    Goal("W11 run {n:,} ≤ 1 s", _ms(0), 1000.0, "W11 million run"),
    Goal("W11 dry_run {n:,} ≤ 1.5 s", _ms(0), 1500.0, "W11 million dry_run"),
    Goal("W11 run {n:,} peak ≤ 1× input memory", _memory, 1.0, "W11 million run"),
    Goal("W11 dry_run {n:,} peak ≤ 1× input memory", _memory, 1.0, "W11 million dry_run"),
    Goal(
        "{label} {tenth:,} → {n:,}: ×10 items ≤ ×12 time",
        _scaling,
        12.0,
        workloads=tuple(w for w in FULL_SIZES if w not in ("W8", "W9", "W10", "W11")),
    ),
)
"""The speed, memory and behaviour targets, in the order the report lists them."""


def _judged(goal: Goal, rows: list[Row]) -> list[Row]:
    if goal.label is not None:
        return [
            row for row in rows if row.label == goal.label and (goal.n is None or row.n == goal.n)
        ][: None if goal.n is None else 1]
    return [
        row
        for row in rows
        if (goal.workloads is None or row.workload in goal.workloads)
        and (goal.n_for is None or row.workload != goal.n_for[0] or row.n == goal.n_for[1])
        and (goal.sizes is None or row.n in goal.sizes)
    ]


def targets(rows: list[Row]) -> list[Target]:
    """The targets of :data:`GOALS` that this run's rows can judge."""
    out: list[Target] = []
    for goal in GOALS:
        for row in _judged(goal, rows):
            figure = goal.measure(row)
            if figure is None:
                continue
            value, measured = figure
            text = goal.text.format(label=row.label, n=row.n, tenth=row.n // 10)
            out.append(Target(text, measured, value <= goal.limit))
    return out


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                cpu = text.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return (
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"{os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--quick", action="store_true", help="small N and 3 runs (smoke test)")
    parser.add_argument(
        "--only",
        default=None,
        help=f"comma-separated subset of {','.join(WORKLOADS)} (default: all but {MILLION})",
    )
    parser.add_argument(
        "--runs", type=int, default=None, help="timed runs per case (default 7; 3 with --quick)"
    )
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    parser.add_argument(
        "--million",
        action="store_true",
        help=f"also run {MILLION} (a million items: building them takes about a minute)",
    )
    args = parser.parse_args(argv)
    only = args.only if args.only is not None else ",".join(w for w in WORKLOADS if w != MILLION)
    if args.million and MILLION.lower() not in only.lower().split(","):
        only += f",{MILLION}"
    wanted = []
    for name in only.split(","):
        match = [w for w in WORKLOADS if w.lower() == name.strip().lower()]
        if not match:
            parser.error(f"unknown workload {name!r} (choose from {', '.join(WORKLOADS)})")
        wanted.append(match[0])
    runs = args.runs if args.runs is not None else (3 if args.quick else 7)
    if not args.quick and runs < 7:
        parser.error("--runs must be >= 7 (WORKLOADS.md); use --quick for a smoke run")
    plan = Plan(QUICK_SIZES if args.quick else FULL_SIZES, runs, args.warmups)

    print(machine())
    print(
        f"median of {runs} runs after {args.warmups} warm-ups"
        + (" (--quick)" if args.quick else "")
    )
    if MILLION not in wanted:
        plan.skipped.append(f"{MILLION} (a million items) not run: add --million")
    rows: list[Row] = []
    for workload in wanted:
        rows.extend(measure_workload(workload, plan))
    print()
    for text in table_lines(rows):
        print(text)
    notes = note_lines(rows)
    if notes:
        print("\nnotes:")
        for text in notes:
            print(text)
    for text in plan.skipped:
        print(f"note: {text}")
    checked = targets(rows)
    if checked and not args.quick:
        print("\ntargets (WORKLOADS.md):")
        for target in checked:
            status = "met" if target.met else "NOT met"
            print(f"  {target.text:<62} {target.measured:<30} {status}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "machine": machine(),
                    "runs": runs,
                    "quick": args.quick,
                    "rows": [
                        {
                            **asdict(row),
                            "floor_ratio": row.floor_ratio,
                            "incumbent_ratio": row.incumbent_ratio,
                        }
                        for row in rows
                    ],
                    "targets": [asdict(target) for target in checked],
                    "skipped": plan.skipped,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
