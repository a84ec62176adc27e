"""The benchmark harness: every workload in docs/performance.md, one table.

    python -m benchmarks                 # from the repository root; or: python benchmarks/run.py
    python -m benchmarks --quick         # small N, 3 runs: a smoke test of the harness
    python -m benchmarks --only W1,W3 --runs 11 --json results.json
    python -m benchmarks --only W11 --million   # W11: a million items (several minutes)

For each case the inputs, budget and pipeline (or adapter) are built before timing; the
timed call runs after warm-ups, ``--runs`` times (median, min and max reported), then once
more under tracemalloc for the peak memory (an untimed pass). Its floor or incumbent is
timed in the same rounds, one sample of each in turn (the order reversed every other
round), so both medians come from the same stretch of time. Per row:

- ``÷floor``: median ÷ the workload's floor (core workloads: one pass reading every item's
  tokens plus one ``sorted()`` of N distinct floats, timed in the same process);
- ``÷incumbent``: median ÷ the incumbent's median, both measured in this run (W5-W7);
- ``×10 N``: median ÷ the median of the same workload at a tenth of the items.

The core rows time one items list again and again ("repeated run over the same items");
the *cold* rows (W1 and W3 at 10k and 100k, W11's run) time a first run over fresh items
instead: new item objects, content strings, tags and timestamps per sample, made in an
untimed setup, as for callers that build their items per request.

W9 (the report's price) times ``dry_run`` against ``run`` (the ``÷incumbent`` column, both
measured in this run) for W1 and W3, and once more with every report entry read. W11 (a
million items) runs W3's items with Greedy and Chronological, ``run`` and ``dry_run``; it is
left out unless ``--million`` is given (building the items alone takes about a minute).

A summary checks the targets (docs/performance.md) against this run. Incumbent calls slower
than 2 s (``ChatMemoryBuffer.get()`` at 10,000 messages) get 3 runs, no warm-up and no
traced pass. W5-W7 need the LangChain / LlamaIndex extras; without them they are skipped
with a note.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import bench_core
from benchmarks.goals import targets
from benchmarks.harness import Case, Plan, Row, Timed, measure_together

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


def w5_cases(sizes: list[int]) -> Iterator[Case]:
    """W5: see benchmarks/bench_langchain.py (imported here: it needs the LangChain extra)."""
    from benchmarks import bench_langchain

    yield from bench_langchain.w5_cases(sizes)


def w6_cases(sizes: list[int]) -> Iterator[Case]:
    """W6: see benchmarks/bench_llamaindex.py (it needs the LlamaIndex extra)."""
    from benchmarks import bench_llamaindex

    yield from bench_llamaindex.w6_cases(sizes)


def w7_cases(sizes: list[int]) -> Iterator[Case]:
    """W7: see benchmarks/bench_llamaindex.py."""
    from benchmarks import bench_llamaindex

    yield from bench_llamaindex.w7_cases(sizes)


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
    "W9": bench_core.w9_cases,
    "W10": w10_cases,
    "W11": bench_core.w11_cases,
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
        cases = bench_core.core_cases(workload, sizes)
    rows = []
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
        # The floor's and the incumbent's samples interleaved with the call's.
        calls = [Timed(case.call, case.setup)]
        if case.floor is not None:
            calls.append(Timed(case.floor, trace=False))
        if case.incumbent is not None:
            calls.append(Timed(case.incumbent))
        timing, *others = measure_together(calls, plan.runs, plan.warmups)
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
            row.floor_ms = others.pop(0).median_ms
        if case.incumbent is not None:
            row.incumbent_label = case.incumbent_label
            row.incumbent = others.pop(0)
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
        parser.error("--runs must be >= 7 (docs/performance.md); use --quick for a smoke run")
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
        print("\ntargets (docs/performance.md):")
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
