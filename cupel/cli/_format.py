"""Every text the command line prints (private): the ``select`` report, the demo summary,
the ``explain`` account, the ``compare`` table and the warnings, in one place."""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from cupel._errors import PinnedBudgetError, TableTooLargeError
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import ContextResult, Pipeline
from cupel.cli._config import DEMO_DATA, PROG
from cupel.cli._explain import CompareRow, Decision, Explanation
from cupel.cli._io import terminal_safe
from cupel.cli._wording import ReasonWording, clip, considered, count, shortfall_text, undated_note
from cupel.diagnostics import (
    ExcludedItem,
    InclusionReason,
    OverflowEvent,
    SelectionReport,
)
from cupel.scorers import DecayScorer, ExponentialDecay, Scorer

_T = TypeVar("_T")


def _decision_line(d: Decision, width: int) -> str:
    if d.score is not None:
        score = f"{d.score:6.3f}"
    else:
        score = "pinned" if d.reason == InclusionReason.PINNED.value else "   n/a"
    mark = "+" if d.included else "-"
    preview = '"' + clip(d.item.content, 44) + '"'
    verdict = "included" if d.included else "excluded"
    head = (
        f"  {mark} {score} {d.item.tokens:>6} tok {clip(str(d.item.kind), 12):<12} {preview:<46} "
    )
    line = f"{head}{verdict}: {d.detail}"
    if len(line) > width and "; " in d.detail:
        # The reason's numbers on the line, the why on the next one.
        first, rest = d.detail.split("; ", 1)
        line = f"{head}{verdict}: {first};\n{' ' * 11}{rest}"
    return "\n".join(
        part if len(part) <= width else part[: width - 1] + "…" for part in line.split("\n")
    )


def format_explanation(explanation: Explanation, header: Sequence[str], width: int = 160) -> str:
    """The readable account: header lines, each stage with its decisions, the window
    in placed order, and a summary."""
    lines = [*header]
    for account in explanation.stages:
        lines += ["", f"{account.stage}: {account.summary}"]
        lines += [_decision_line(d, width) for d in account.decisions]
        if account.stage == "Place":
            lines.append("  window (placed order):")
            for i, entry in enumerate(explanation.report.included, start=1):
                lines.append(
                    f"  {i:>6}. {entry.item.tokens:>6} tok {clip(str(entry.item.kind), 12):<12} "
                    f"{clip(entry.item.content, 60)}"
                )
    s = explanation.summary()
    budget, report = explanation.budget, explanation.report
    by_reason = ", ".join(f"{k} {n}" for k, n in s["excluded_by_reason"].items())
    shortfalls = [f"  {shortfall_text(sf)}" for sf in report.count_requirement_shortfalls]
    lines += [
        "",
        "Summary:",
        f"  included {s['included']} of {s['candidates']} items, "
        f"{s['included_tokens']:,} of {considered(report)}",
        f"  budget use: {_pct(s['target_utilization'])} of target {budget.target_tokens:,}, "
        f"{_pct(s['budget_utilization'])} of max {budget.max_tokens:,}"
        + (f" (output reserve {budget.output_reserve:,})" if budget.output_reserve else ""),
        f"  window mix: {count(s['kind_diversity'], 'kind')}, "
        f"{_pct(s['timestamp_coverage'])} of items timestamped",
        f"  excluded {s['excluded']}" + (f" ({by_reason})" if by_reason else ""),
        *(shortfalls or ["  shortfalls: none"]),
        f"  overflow: window exceeds target by {report.overflow.tokens_over_budget:,} tokens"
        if report.overflow is not None
        else "  overflow: none",
    ]
    return "\n".join(lines)


def explain_header(
    report: SelectionReport, budget: ContextBudget, source: str, config: str
) -> list[str]:
    """The two lines above an ``explain`` account: the candidates, the budget, the
    configuration."""
    return [
        f"{PROG} explain: {report.total_candidates} candidates "
        f"({considered(report)}) from {source}",
        f"  budget max {budget.max_tokens:,} / target {budget.target_tokens:,}"
        + (f" / output reserve {budget.output_reserve:,}" if budget.output_reserve else "")
        + f"; {config}",
    ]


def compare_header(
    items: Sequence[ContextItem], source: str, budget: ContextBudget, changed: int
) -> list[str]:
    """The line above a ``compare`` table."""
    return [
        f"{PROG} compare: {len(items)} candidates "
        f"({sum(i.tokens for i in items):,} tokens) from {source}, "
        f"budget max {budget.max_tokens:,} / target {budget.target_tokens:,}; "
        f"{changed} item{'' if changed == 1 else 's'} change status"
    ]


def format_min_budget(
    target: ContextItem, minimum: int | None, ceiling: int, why: str, config: str
) -> str:
    """The ``min-budget`` answer; ``why`` says (after ``; ``) why the item stays out at
    the ceiling when no budget includes it."""
    shown = f'"{clip(target.content, 60)}" ({target.tokens:,} tokens, {target.kind})'
    answer = (
        f"not included at any budget up to the search ceiling {ceiling:,}{why}"
        if minimum is None
        else f"included at max tokens = target tokens = {minimum:,} (add any output reserve on top)"
    )
    return (
        f"{PROG} min-budget: {minimum if minimum is not None else 'not reachable'}\n"
        f"  item:     {shown}\n"
        f"  answer:   {answer}\n"
        f"  searched: {target.tokens:,}..{ceiling:,} tokens; {config}"
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100.0 * value:.1f}%"


def _cell(included: bool, reason: str | None) -> str:
    if included:
        return "included"
    return f"excluded ({reason})" if reason else "excluded"


def format_compare(
    header: Sequence[str],
    labels: Sequence[str],
    rows: Sequence[CompareRow],
    totals: Sequence[tuple[int, int]],
) -> str:
    """An aligned table: one row per swinging item, one column per policy, then totals."""
    body = [
        [f'"{clip(row.content, 48)}"', *(_cell(inc, reason) for _, inc, reason in row.cells)]
        for row in rows
    ]
    feet = [
        ["included items", *(f"{n:,}" for n, _ in totals)],
        ["included tokens", *(f"{t:,}" for _, t in totals)],
    ]
    head = ["item", *labels]
    widths = [max(map(len, column)) for column in zip(head, *body, *feet, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()

    rule = line(["-" * w for w in widths])
    listed = [line(cells) for cells in body] or ["(no item changes status between these policies)"]
    return "\n".join([*header, "", line(head), rule, *listed, rule, *map(line, feet)])


SUMMARY_HEAD, SUMMARY_TAIL = 8, 12  # window lines a summary shows (all with --all)
SUMMARY_EXCLUDED = 12  # excluded lines a summary shows (all with --all)
DEMO_HEAD, DEMO_TAIL = 8, 12  # window lines the demo shows (all with --all)


def totals(report: SelectionReport, result: ContextResult, budget: ContextBudget) -> str:
    used = result.total_tokens
    target_pct = 100.0 * used / budget.target_tokens if budget.target_tokens else math.nan
    max_pct = 100.0 * used / budget.max_tokens if budget.max_tokens else math.nan
    return (
        f"{len(report.included)} of {report.total_candidates} items selected, "
        f"{used:,} of {considered(report)} "
        f"({target_pct:.1f}% of target {budget.target_tokens:,}, "
        f"{max_pct:.1f}% of max {budget.max_tokens:,})"
    )


def _elided(entries: Sequence[_T], head: int, tail: int, show_all: bool) -> list[_T | None]:
    """``entries``, or (unless ``show_all`` or there are few) the first ``head`` and the
    last ``tail`` of them with one ``None`` standing for the rest."""
    if show_all or len(entries) <= head + tail + 1:
        return list(entries)
    return [*entries[:head], None, *entries[-tail:]]


def _wording(report: SelectionReport, pipeline: Pipeline | None, bucket_flag: str) -> Any:
    if pipeline is None:
        return lambda entry: terminal_safe(entry.reason.describe())
    return ReasonWording(report, pipeline, bucket_flag=bucket_flag)


def format_report(
    report: SelectionReport,
    result: ContextResult,
    budget: ContextBudget,
    *,
    pipeline: Pipeline | None = None,
    show_all: bool = False,
    bucket_flag: str = "--bucket-size",
    config: str | None = None,
) -> str:
    """The ``select`` report: totals, how the items were chosen (``config``), the window
    in placed order, the exclusions (best score first) with their reasons in words, each
    list under a line naming its columns.

    Long lists are summarised unless ``show_all``: the window's first and last items,
    the best-scored exclusions and a count of the rest by reason. ``pipeline`` (the one
    that ran) lets the wording explain knapsack bucket rounding.
    """
    wording = _wording(report, pipeline, bucket_flag)
    lines = [f"{PROG}: {totals(report, result, budget)}"]
    if config is not None:
        lines.append(f"chosen by: {config}")
    lines += [
        "included (placed order):",
        f"  {'#':>4}  {'score':>6} {'tokens':>10} {'kind':<12} {'content':<50}  (why)",
    ]
    window = report.included
    recalled = {id(item): unit for unit in report.recalled for item in unit.items}
    numbered = list(enumerate(window, start=1))
    for entry in _elided(numbered, SUMMARY_HEAD, SUMMARY_TAIL, show_all):
        if entry is None:
            hidden = len(window) - SUMMARY_HEAD - SUMMARY_TAIL
            lines.append(f"        … {hidden:,} more items (--all lists every item) …")
            continue
        i, inc = entry
        item = inc.item
        unit = recalled.get(id(item))
        why = inc.reason.value
        if unit is not None:  # the unit's score, the query words it matched, its similarity
            why = f"Recalled: unit score {unit.score:.3f}{unit.why(3)}"
        lines.append(
            f"  {i:>4}. {inc.score:6.3f} {item.tokens:>6} tok {clip(str(item.kind), 12):<12} "
            f"{clip(item.content, 50)}  ({why})"
        )
    excluded = report.excluded
    lines.append("excluded (score descending):")
    if excluded:
        lines.append(f"        {'score':>6} {'tokens':>10} {'kind':<12} {'content':<40}  <- reason")
    short = show_all or len(excluded) <= SUMMARY_EXCLUDED + 1
    listed = excluded if short else excluded[:SUMMARY_EXCLUDED]
    for exc in listed:
        item = exc.item
        lines.append(
            f"        {exc.score:6.3f} {item.tokens:>6} tok {clip(str(item.kind), 12):<12} "
            f"{clip(item.content, 40)}  <- {wording(exc)}"
        )
    if len(listed) < len(excluded):
        rest = Counter(e.reason.name for e in excluded[len(listed) :]).most_common()
        by_reason = ", ".join(f"{name} {n:,}" for name, n in rest)
        lines.append(
            f"        … {len(excluded) - len(listed):,} more excluded ({by_reason}; "
            "--all lists every item) …"
        )
    lines += map(shortfall_text, report.count_requirement_shortfalls)
    note = undated_note(pipeline, report) if pipeline is not None else None
    if note is not None:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def format_demo(
    report: SelectionReport,
    result: ContextResult,
    budget: ContextBudget,
    config: str,
    *,
    pipeline: Pipeline | None = None,
    show_all: bool = False,
    bucket_flag: str = "--bucket-size",
    messages: tuple[int, int] | None = None,
) -> str:
    """The concise demo summary: how the items were chosen (``config``), the window, then
    exclusions grouped by reason. ``messages``: for a transcript, the messages of the
    window and of the transcript (its items are units: a message, or a tool call with its
    results)."""
    wording = _wording(report, pipeline, bucket_flag)
    what = f"{report.total_candidates} candidate items"
    sent = ""
    if messages is not None:
        what = (
            f"{messages[1]:,} messages in {report.total_candidates} units (a message, or a "
            "tool call with its results)"
        )
        sent = f", {messages[0]} messages"
    lines = [
        f"cupel demo: {what}, {considered(report)}, from {DEMO_DATA}",
        f"  budget max {budget.max_tokens:,} / target {budget.target_tokens:,}",
        f"  chosen by: {config}",
        "",
        f"Window ({len(report.included)} items{sent}, {result.total_tokens:,} tokens, "
        "placed order):",
        f"  {'score':>4} {'why':<6} {'kind':<12} content",
    ]
    window = report.included
    for inc in _elided(window, DEMO_HEAD, DEMO_TAIL, show_all):
        if inc is None:
            hidden = len(window) - DEMO_HEAD - DEMO_TAIL
            lines.append(f"  … {hidden} more items (--all lists every item) …")
            continue
        head = f"  {inc.score:4.2f} {inc.reason.value:<6} {clip(str(inc.item.kind), 12):<12} "
        lines.append(head + clip(inc.item.content, 80 - len(head)))
    by_kind = Counter(str(inc.item.kind) for inc in report.included).most_common()
    lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in by_kind))
    note = undated_note(pipeline, report) if pipeline is not None else None
    if note is not None:
        lines.append(f"  note: {note}")
    groups: dict[str, list[ExcludedItem]] = {}
    for exc in report.excluded:
        groups.setdefault(exc.reason.name, []).append(exc)
    lines += ["", f"Excluded ({len(report.excluded)} items):"]
    for name, entries in groups.items():
        tokens = sum(e.item.tokens for e in entries)
        kinds = Counter(str(e.item.kind) for e in entries).most_common()
        kind_text = ", ".join(f"{k} {n}" for k, n in kinds)
        lines.append(f"  {name}: {len(entries)} items, {tokens:,} tokens ({kind_text})")
        for e in entries[:3]:
            head = f"    {e.score:4.2f} {clip(e.item.content, 40)}  <- "
            lines.append(head + wording(e))
    lines += ["", totals(report, result, budget)]
    return "\n".join(lines)


def _scorers(scorer: Scorer) -> Iterable[Scorer]:
    yield scorer
    children = getattr(scorer, "children", None)
    if callable(children):
        for child in children():
            yield from _scorers(child)


def decay_warnings(pipeline: Pipeline, items: Sequence[ContextItem]) -> list[str]:
    """A decay scorer under which every dated item scores 0 ranks nothing (and puts any
    undated item, scored ``null_timestamp_score``, above them all): say so on stderr."""
    warnings: list[str] = []
    decays = {id(s): s for s in _scorers(pipeline.scorer) if isinstance(s, DecayScorer)}
    if not decays:
        return warnings
    scored = [i for i in items if not i.pinned and i.tokens >= 0]
    dated = [i for i in scored if i.timestamp is not None]
    for decay in decays.values():
        if not dated or any(decay.score_all(dated)):
            continue
        newest = max(i.timestamp for i in dated if i.timestamp is not None)  # UTC, aware
        age = datetime.now(timezone.utc) - newest
        why = f"the newest is {_age(age)} old"
        if isinstance(decay.curve, ExponentialDecay) and age > timedelta(0):
            half_life = decay.curve.half_life
            why += f", {age / half_life:,.0f} half-lives of {_age(half_life)}"
        undated = len(scored) - len(dated)
        if undated:
            score = f"{decay.null_timestamp_score:g}"
            why += (
                f"; the undated item scores {score} and outranks them all"
                if undated == 1
                else f"; the {undated:,} undated items score {score} and outrank them all"
            )
        warnings.append(
            f"{PROG}: warning: every dated item scores 0 under the decay scorer ({why}), "
            "so it does not rank them: use a longer --half-life"
        )
    return warnings


def _age(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if abs(seconds) >= size:
            n = seconds / size
            return f"{n:,.0f} {unit}{'' if round(n) == 1 else 's'}"
    return f"{seconds:g} seconds"


def overflow_lines(events: list[OverflowEvent]) -> list[str]:
    return [
        f"{PROG}: warning: window exceeds target_tokens by {e.tokens_over_budget} tokens "
        f"(overflow proceed)"
        for e in events
    ]


def table_message(exc: TableTooLargeError, args: argparse.Namespace | None) -> str:
    """TableTooLargeError in the words of the command line (its flags, not parameters)."""
    if args is None or getattr(args, "policy", None) or not hasattr(args, "bucket_size"):
        return str(exc)
    size = args.bucket_size if args.bucket_size is not None else 100
    return (
        f"KnapsackSlice DP table too large: {exc.candidates:,} candidates x "
        f"({exc.capacity:,} + 1) capacity = {exc.cells:,} cells exceeds the limit of "
        f"{exc.limit:,} cells; increase --bucket-size (now {size}) or lower "
        "--target-tokens / --max-tokens"
    )


def pinned_message(exc: PinnedBudgetError, args: argparse.Namespace | None) -> str:
    """PinnedBudgetError with the flag that fixes it, when a budget flag set the budget."""
    if args is None or not hasattr(args, "max_tokens"):
        return str(exc)
    reserve = args.output_reserve or 0
    fix = f"raise --max-tokens to at least {exc.pinned_tokens + reserve:,}" + (
        f" (pinned tokens + --output-reserve {reserve:,})" if reserve else ""
    )
    text = str(exc)
    if "; raise the budget or " in text:  # a transcript's pinned messages: the remedies listed
        return text.replace("; raise the budget or ", f"; {fix} or ")
    return f"{text}: {fix}"
