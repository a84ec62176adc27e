"""Workload W5 (docs/performance.md): LangChain chat history, cupel vs trim_messages.

N messages alternate HumanMessage / AIMessage (~50 words each, all distinct); every 10th
AI turn carries a tool call answered by a ToolMessage. Budget B = 25% of the
``count_tokens_approximately`` total. In the same process, after warm-ups, the median of
>= 7 runs of:

- incumbent: ``trim_messages(history, strategy="last", max_tokens=B,
  token_counter=count_tokens_approximately)``
- cupel:     ``select_messages(history, max_tokens=B,
  token_counter=count_tokens_approximately)`` (chat preset), and the Runnable
  ``CupelMessageSelector(...).invoke(history)`` (its report is built when read, or
  at once when a callback listens for it).

Both outputs are checked: within budget, and a valid tool-call sequence (no tool result
without its call, no call without its results).

    python benchmarks/bench_langchain.py                      # N = 1,000 and 10,000
    python benchmarks/bench_langchain.py --sizes 10000 --runs 11
    python benchmarks/bench_langchain.py --sizes 10000 --breakdown   # where cupel's time goes
    python benchmarks/bench_langchain.py --small     # W8: 10 ... 10,000 messages, in µs

"Report read" rows (W8) build the :class:`~cupel.SelectionReport` and read it as a caller
does (:func:`read_report`: every included and excluded entry's item, score and reason):
``select_messages_with_report(history, max_tokens=B, start_on="human")`` against
``trim_messages(history, strategy="last", max_tokens=B, include_system=True,
start_on="human", token_counter=count_tokens_approximately)``, and the selector's
``last_report`` read after ``invoke`` against the ``trim_messages`` Runnable.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

if __package__ in (None, ""):  # run as a script: the repository root holds the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import Case, traced_build, yes
from benchmarks.timing import per_call_us
from cupel import SelectionReport
from cupel.counting import REPLY_TOKENS
from cupel_langchain import (
    CupelMessageSelector,
    approximate_message_tokens,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)

SEED = 20261122
WORDS_PER_TURN = 50


def make_history(n: int, seed: int = SEED) -> list[BaseMessage]:
    """The W5 conversation: ``n`` messages, fixed seed, distinct contents."""
    rng = random.Random(seed)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]

    def text(i: int) -> str:
        return f"#{i} " + " ".join(rng.choice(vocabulary) for _ in range(WORDS_PER_TURN - 1))

    history: list[BaseMessage] = []
    ai_turns = 0
    while len(history) < n:
        history.append(HumanMessage(text(len(history)), id=f"m{len(history)}"))
        if len(history) >= n:
            break
        ai_turns += 1
        if ai_turns % 10 == 0 and len(history) + 2 <= n:
            call_id = f"call_{len(history)}"
            history.append(
                AIMessage(
                    text(len(history)),
                    tool_calls=[
                        {"name": "search", "args": {"query": f"q{ai_turns}"}, "id": call_id}
                    ],
                    id=f"m{len(history)}",
                )
            )
            history.append(
                ToolMessage(text(len(history)), tool_call_id=call_id, id=f"m{len(history)}")
            )
        else:
            history.append(AIMessage(text(len(history)), id=f"m{len(history)}"))
    return history


def read_report(report: SelectionReport | None) -> int:
    """Read ``report`` as a caller does: every included and excluded entry's item (its
    tokens), score and reason (its name); the number of entries read."""
    assert report is not None
    read = 0
    for entry in report.included:
        read += entry.item.tokens >= 0 and entry.score >= 0.0 and bool(entry.reason.value)
    for entry in report.excluded:
        read += entry.item.tokens >= 0 and entry.score >= 0.0 and bool(entry.reason.name)
    return read


def trim_chat(history: list[BaseMessage], budget: int) -> list[BaseMessage]:
    """The incumbent of the report rows: ``trim_messages`` as its documentation sets it up
    for chat history (keep the system message, start on a human message)."""
    return trim_messages(
        history,
        strategy="last",
        max_tokens=budget,
        include_system=True,
        start_on="human",
        token_counter=count_tokens_approximately,
    )


def report_read(history: list[BaseMessage], budget: int) -> int:
    """``select_messages_with_report`` (same budget and ``start_on``) and its report read."""
    return read_report(select_messages_with_report(history, max_tokens=budget, start_on="human")[1])


def _median_ms(func: Callable[[], Any], runs: int, warmups: int) -> tuple[float, float, float]:
    for _ in range(warmups):
        func()
    times = []
    gc.collect()
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times), min(times), max(times)


@dataclass
class Row:
    n: int
    budget: int
    trim_ms: float
    cupel_ms: float
    runnable_ms: float
    trim_valid: bool
    cupel_valid: bool
    trim_tokens: int
    cupel_tokens: int
    trim_count: int
    cupel_count: int


def run(n: int, runs: int = 7, warmups: int = 2) -> Row:
    """Measure W5 at size ``n``."""
    history = make_history(n)
    budget = count_tokens_approximately(history) // 4

    def incumbent() -> list[BaseMessage]:
        return trim_messages(
            history, strategy="last", max_tokens=budget, token_counter=count_tokens_approximately
        )

    def cupel() -> list[BaseMessage]:
        return select_messages(history, max_tokens=budget, token_counter=count_tokens_approximately)

    selector = CupelMessageSelector(max_tokens=budget, token_counter=count_tokens_approximately)

    def runnable() -> list[BaseMessage]:
        return selector.invoke(history)

    trimmed, selected = incumbent(), cupel()
    assert [m.id for m in runnable()] == [m.id for m in selected]
    trim_ms = _median_ms(incumbent, runs, warmups)[0]
    cupel_ms = _median_ms(cupel, runs, warmups)[0]
    runnable_ms = _median_ms(runnable, runs, warmups)[0]
    return Row(
        n=n,
        budget=budget,
        trim_ms=trim_ms,
        cupel_ms=cupel_ms,
        runnable_ms=runnable_ms,
        trim_valid=not tool_call_problems(trimmed),
        cupel_valid=not tool_call_problems(selected),
        trim_tokens=count_tokens_approximately(trimmed),
        # cupel's own count (count_tokens_approximately is read as cupel's "approximate")
        cupel_tokens=sum(map(approximate_message_tokens, selected)) + REPLY_TOKENS,
        trim_count=len(trimmed),
        cupel_count=len(selected),
    )


def breakdown(n: int, runs: int = 11) -> dict[str, float]:
    """Median ms of each phase of one ``select_messages`` call on the W5 data: checking
    the settings, mapping the messages to the conversation's columns, selecting the
    window, mapping back; and, for comparison, building the report as the Runnable does
    when someone listens (the same selection with a trace)."""
    from cupel_langchain._selection import MessageSelection

    history = make_history(n)
    budget = count_tokens_approximately(history) // 4
    settings = {"max_tokens": budget, "token_counter": count_tokens_approximately}
    phases: dict[str, list[float]] = {
        "settings": [],
        "map": [],
        "select": [],
        "map back": [],
        "select with report": [],
    }
    for _ in range(runs + 2):
        gc.collect()
        start = time.perf_counter()
        selection = MessageSelection(settings)
        checked = time.perf_counter()
        mapping = selection.map(history)
        mapped = time.perf_counter()
        window = mapping.history.select(selection.pipeline, selection.budget, with_report=False)
        selected_at = time.perf_counter()
        selected = [mapping.messages[i] for i in window.messages]
        back = time.perf_counter()
        traced = selection.map(history).history.select(
            selection.pipeline, selection.budget, with_report=True
        )
        reported = time.perf_counter()
        assert selected and traced.messages == window.messages
        bounds = ((start, checked), (checked, mapped), (mapped, selected_at), (selected_at, back))
        for name, (a, b) in zip(phases, bounds, strict=False):
            phases[name].append((b - a) * 1000.0)
        phases["select with report"].append((reported - back) * 1000.0)
    return {name: statistics.median(times[2:]) for name, times in phases.items()}


@dataclass
class SmallRow:
    n: int
    trim_runnable_us: float
    runnable_us: float
    runnable_report_us: float
    trim_function_us: float
    function_us: float
    trim_chat_us: float
    report_read_us: float


def small(n: int, runs: int = 51, warmups: int = 5) -> SmallRow:
    """W8 (small histories): the W5 conversation at ``n`` messages, budget B = 25% of its
    approximate total. ``CupelMessageSelector(max_tokens=B)`` with its defaults invoked,
    alone and followed by reading ``last_report`` and its entries (:func:`read_report`;
    the report is built when read if no callback listens), against ``trim_messages(...)``
    built as a Runnable and invoked; ``select_messages`` against the ``trim_messages``
    function; and :func:`report_read` against :func:`trim_chat`."""
    history = make_history(n)
    budget = count_tokens_approximately(history) // 4
    trimmer = trim_messages(
        strategy="last", max_tokens=budget, token_counter=count_tokens_approximately
    )
    selector = CupelMessageSelector(max_tokens=budget)

    def with_report() -> Any:
        selector.invoke(history)
        return read_report(selector.last_report)

    def trim_function() -> Any:
        return trim_messages(
            history, strategy="last", max_tokens=budget, token_counter=count_tokens_approximately
        )

    def function() -> Any:
        return select_messages(history, max_tokens=budget)

    assert [m.id for m in selector.invoke(history)] == [m.id for m in function()]
    report = selector.last_report
    assert report is not None and report.included_tokens <= budget
    assert report_read(history, budget) == len(history) - sum(
        isinstance(m, ToolMessage) for m in history
    )  # one entry per unit: a tool call's group is one

    def us(func: Callable[[], Any]) -> float:
        return per_call_us(func, runs)

    return SmallRow(
        n=n,
        trim_runnable_us=us(lambda: trimmer.invoke(history)),
        runnable_us=us(lambda: selector.invoke(history)),
        runnable_report_us=us(with_report),
        trim_function_us=us(trim_function),
        function_us=us(function),
        trim_chat_us=us(lambda: trim_chat(history, budget)),
        report_read_us=us(lambda: report_read(history, budget)),
    )


def batched(fn: Callable[[], Any], calls: int) -> Callable[[], Any]:
    """``fn`` called ``calls`` times (small cases are timed in batches: one call of tens
    of µs is below the timer's resolution and the machine's noise)."""

    def batch() -> Any:
        for _ in range(calls):
            fn()

    return batch


def w5_cases(sizes: list[int]) -> Iterator[Case]:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    from cupel_langchain import select_messages, tool_call_problems

    for size in sizes:
        history, input_mib = traced_build(lambda size=size: make_history(size))  # type: ignore[misc]
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
            note=", ".join(f"{name}: {yes(ok)}" for name, ok in checks.items()),
            checks=checks,
        )


def w8_cases(sizes: list[int]) -> Iterator[Any]:
    """W8 rows for ``python -m benchmarks``: the selector (defaults: report on, built when
    read unless a callback listens) against ``trim_messages`` used as a Runnable; the same
    followed by reading ``last_report``'s entries (:func:`read_report`); ``select_messages``
    against the ``trim_messages`` function; and ``select_messages_with_report`` with its
    report read against :func:`trim_chat` (:func:`report_read`). Each call is repeated
    ``2000 // n`` times per timed sample (at least once), the incumbent likewise."""
    for n in sizes:
        history = make_history(n)
        budget = count_tokens_approximately(history) // 4
        calls = max(1, 2000 // n)
        trimmer = trim_messages(
            strategy="last", max_tokens=budget, token_counter=count_tokens_approximately
        )
        selector = CupelMessageSelector(max_tokens=budget)

        def read(selector: CupelMessageSelector = selector, history: Any = history) -> Any:
            selector.invoke(history)
            return read_report(selector.last_report)

        def trim_function(history: Any = history, budget: int = budget) -> Any:
            return trim_messages(
                history,
                strategy="last",
                max_tokens=budget,
                token_counter=count_tokens_approximately,
            )

        def function(history: Any = history, budget: int = budget) -> Any:
            return select_messages(history, max_tokens=budget)

        assert not tool_call_problems(function())
        runnable = batched(lambda trimmer=trimmer, history=history: trimmer.invoke(history), calls)
        note = f"{calls} calls per sample" if calls > 1 else ""
        yield Case(
            "W8",
            "W8 selector",
            n,
            batched(lambda selector=selector, history=history: selector.invoke(history), calls),
            incumbent=runnable,
            incumbent_label="trim_messages Runnable",
            note=note,
        )
        yield Case(
            "W8",
            "W8 selector, report read",
            n,
            batched(read, calls),
            incumbent=runnable,
            incumbent_label="trim_messages Runnable",
            note=f"{note}; every entry's item, score and reason read".lstrip("; "),
        )
        yield Case(
            "W8",
            "W8 select_messages_with_report, report read",
            n,
            batched(lambda history=history, budget=budget: report_read(history, budget), calls),
            incumbent=batched(
                lambda history=history, budget=budget: trim_chat(history, budget), calls
            ),
            incumbent_label="trim_messages (include_system, start_on='human')",
            note=f"{note}; start_on='human'; every entry's item, score and reason read".lstrip(
                "; "
            ),
        )
        yield Case(
            "W8",
            "W8 select_messages",
            n,
            batched(function, calls),
            incumbent=batched(trim_function, calls),
            incumbent_label="trim_messages",
            note=note,
        )


def print_small(sizes: list[int], runs: int) -> None:
    print(
        f"{'N':>6} {'trim Runnable':>14} {'selector':>10} {'ratio':>6} {'+report read':>13} "
        f"{'ratio':>6} {'trim fn':>10} {'select_messages':>16} {'ratio':>6} "
        f"{'trim chat':>10} {'with_report+read':>17} {'ratio':>6}"
    )
    for n in sizes:
        row = small(n, max(runs, 21))
        t = row.trim_runnable_us
        print(
            f"{n:>6} {t:>11.0f} us {row.runnable_us:>7.0f} us {row.runnable_us / t:>6.2f} "
            f"{row.runnable_report_us:>10.0f} us {row.runnable_report_us / t:>6.2f} "
            f"{row.trim_function_us:>7.0f} us {row.function_us:>13.0f} us "
            f"{row.function_us / row.trim_function_us:>6.2f} "
            f"{row.trim_chat_us:>7.0f} us {row.report_read_us:>14.0f} us "
            f"{row.report_read_us / row.trim_chat_us:>6.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated N values")
    parser.add_argument("--runs", type=int, default=7, help="timed runs (median reported)")
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument(
        "--breakdown", action="store_true", help="time the phases of cupel's selection instead"
    )
    parser.add_argument(
        "--small",
        action="store_true",
        help="W8: the Runnable and the function against trim_messages at small sizes "
        "(default sizes 10,50,200,1000,10000)",
    )
    args = parser.parse_args(argv)
    if args.small:
        sizes = args.sizes if args.sizes != "1000,10000" else "10,50,200,1000,10000"
        print_small([int(s) for s in sizes.split(",")], args.runs)
        return
    if args.breakdown:
        for n in (int(s) for s in args.sizes.split(",")):
            phases = breakdown(n, args.runs)
            print(f"N={n}: " + ", ".join(f"{k} {v:.2f} ms" for k, v in phases.items()))
        return
    print(
        f"{'N':>7} {'budget':>8} {'trim_messages':>14} {'cupel':>9} {'ratio':>6} "
        f"{'runnable+report':>16} {'ratio':>6}  valid tool calls (trim / cupel)  "
        f"messages (trim / cupel)"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        row = run(n, args.runs, args.warmups)
        print(
            f"{row.n:>7} {row.budget:>8} {row.trim_ms:>11.2f} ms {row.cupel_ms:>6.2f} ms "
            f"{row.cupel_ms / row.trim_ms:>6.2f} {row.runnable_ms:>13.2f} ms "
            f"{row.runnable_ms / row.trim_ms:>6.2f}  {row.trim_valid!s:>5} / "
            f"{row.cupel_valid!s:<5}                      {row.trim_count} / {row.cupel_count}"
        )
        assert row.cupel_valid, "cupel returned an invalid tool-call sequence"
        assert row.cupel_tokens <= row.budget, "cupel exceeded the budget"


if __name__ == "__main__":
    main()
