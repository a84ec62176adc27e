"""The commands (private): each reads its input, runs, and prints through ``_format``."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from importlib import resources
from math import isfinite
from operator import attrgetter
from typing import Any

from cupel._errors import CliError, CupelError
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import ContextResult, Pipeline
from cupel.analytics import find_min_budget_for
from cupel.cli._config import (
    DEMO_DATA,
    PROG,
    bucket_flag,
    budget_from_flags,
    build_pipeline,
    describe_config,
    load_policy,
    with_query,
)
from cupel.cli._explain import CompareRow, explain
from cupel.cli._format import (
    compare_header,
    decay_warnings,
    explain_header,
    format_compare,
    format_demo,
    format_explanation,
    format_min_budget,
    format_report,
    overflow_lines,
)
from cupel.cli._html import render_html
from cupel.cli._io import Lines, dump_json, parse_input, read_items, terminal_safe, write_json
from cupel.cli._progress import Progress, track
from cupel.cli._transcript import ROLE_KINDS, Transcript
from cupel.cli._wording import ReasonWording, clip, count
from cupel.conversation import HistoryItems, PinnedOptions
from cupel.diagnostics import (
    ExcludedItem,
    IncludedItem,
    OverflowEvent,
    PipelineStage,
    SelectionReport,
)
from cupel.diagnostics._report import require_report
from cupel.policy import ItemStatus, policy_sensitivity, resolve_pipeline

__all__ = ["COMMANDS", "Loaded", "load_input", "load_items", "role_kind_warnings"]


# -- reading items --------------------------------------------------------------------------
@dataclass
class Loaded:
    """What an input file holds: ``items`` (the candidates), and for a chat transcript
    the ``transcript`` and its ``history`` (the items are then the history's units)."""

    items: list[ContextItem]
    transcript: Transcript | None = None
    history: HistoryItems | None = None


def load_input(path: str) -> Loaded:
    """Read items or a chat transcript from ``path`` (``-`` for stdin): a JSON array or
    JSON Lines (or a request body ``{"messages": [...]}``).

    A progress bar shows on a terminal while a large file is read; an empty input is
    reported on stderr (``cupel: warning: ...``) and selects nothing, as are item kinds
    that are chat roles (``"kind": "user"``).
    """
    source = _source_name(path)
    read = read_items(path, progress=partial(track, desc=f"reading {source}"))
    # The input lives until the command ends: later garbage collections need not walk it
    # again (on a million items they would take a third of the run).
    gc.freeze()
    if isinstance(read, Transcript):
        return _transcript_input(read)
    if not read:
        _warn(f"{source} holds no items: there is nothing to select")
    for line in role_kind_warnings(read, source):
        _warn(line)
    return Loaded(read)


def _transcript_input(transcript: Transcript) -> Loaded:
    history = transcript.history()
    return Loaded(history.items, transcript, history)


def load_items(path: str) -> list[ContextItem]:
    """The candidate items of ``path`` (a chat transcript's: one per unit), see
    :func:`load_input`."""
    return load_input(path).items


def role_kind_warnings(items: Sequence[ContextItem], source: str) -> list[str]:
    """One line per item kind that is a chat role (``"user"``, ``"system"``, ...): such
    an item scores like any unknown kind and is never pinned; name the kind it needs."""
    found: dict[str, tuple[str, int]] = {}  # folded kind -> (first spelling, items)
    for name, n in Counter(map(str, map(attrgetter("kind"), items))).items():
        folded = name.lower()
        if folded in ROLE_KINDS:
            first, before = found.get(folded, (name, 0))
            found[folded] = (first, before + n)
    return [
        f'{source}: {count(n, "item")} with kind "{name}", a chat role rather than a kind: '
        f"use {ROLE_KINDS[folded]}, or give the messages as a chat transcript "
        '({"role": ..., "content": ...} a line)'
        for folded, (name, n) in found.items()
    ]


def _warn(message: str) -> None:
    print(terminal_safe(f"{PROG}: warning: {message}"), file=sys.stderr)


def _demo_input() -> Loaded:
    text = (resources.files("cupel.data") / DEMO_DATA).read_text(encoding="utf-8")
    read = parse_input(text, DEMO_DATA)
    if not isinstance(read, Transcript):  # the shipped demo is a transcript
        raise CupelError(f"{DEMO_DATA} is not a chat transcript")
    return _transcript_input(read)


_PINNED = PinnedOptions(system=None, budget="--max-tokens - --output-reserve")


def _select(
    pipeline: Pipeline, loaded: Loaded, budget: ContextBudget
) -> tuple[ContextResult, SelectionReport, list[OverflowEvent], list[Any]]:
    """Run the selection: the pipeline over items, or a transcript's conversation window
    (mapped back to its messages). Returns the result, its report, the overflow events
    and the window as written to stdout (item dicts, or the messages as given)."""
    if loaded.history is None or loaded.transcript is None:
        result, report, overflows = _run(pipeline, loaded.items, budget)
        return result, report, overflows, [i.to_dict() for i in result.items]
    events: list[OverflowEvent] = []
    window = loaded.history.select(
        pipeline, budget, with_report=True, options=_PINNED, on_overflow=events.append
    )
    report = window.explain()
    result = ContextResult([e.item for e in report.included], window.tokens, report)
    messages = loaded.transcript.messages
    return result, report, events, [messages[i] for i in window.messages]


def _run(
    pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget
) -> tuple[ContextResult, SelectionReport, list[OverflowEvent]]:
    events: list[OverflowEvent] = []
    result = pipeline.dry_run(items, budget, on_overflow=events.append)
    return result, require_report(result.report), events


def _streamed(report: SelectionReport, item_texts: Sequence[str] | None = None) -> dict[str, Any]:
    """``report.to_dict()`` with its entries as :class:`Lines`: each entry's wire form is
    made as it is written, so a long report is never held whole as dicts or text.
    ``item_texts``: the included items' JSON, already made (the window's)."""
    out = replace(report, included=(), excluded=()).to_dict()
    out["included"] = Lines(_entry_texts(report.included, item_texts), encoded=True)
    out["excluded"] = Lines(_entry_texts(report.excluded), encoded=True)
    return out


def _entry_texts(
    entries: Sequence[IncludedItem | ExcludedItem], item_texts: Sequence[str] | None = None
) -> Iterator[str]:
    """Each entry's compact JSON, as ``dump_json(entry.to_dict(), indent=None)`` gives it:
    its item's text (``item_texts[k]`` when given), score and reason, the reason's text
    made once per distinct reason (equal reasons are shared values)."""
    said: dict[Any, str] = {}
    for k, entry in enumerate(entries):
        reason = entry.reason
        text = said.get(reason)
        if text is None:
            text = said[reason] = dump_json(reason.to_dict(), indent=None)
        item = dump_json(entry.item.to_dict(), indent=None) if item_texts is None else item_texts[k]
        score = entry.score  # a finite float is its repr in JSON
        score_text = repr(score) if type(score) is float and isfinite(score) else dump_json(score)
        yield f'{{"item": {item}, "score": {score_text}, "reason": {text}}}'


def _print(text: str, *, err: bool = False) -> None:
    """Text output: control characters in user content are shown, not executed."""
    print(terminal_safe(text), file=sys.stderr if err else sys.stdout)


def _write_html(
    args: argparse.Namespace,
    title: str,
    config: str,
    report: SelectionReport,
    budget: ContextBudget,
    pipeline: Pipeline,
    stage_of: dict[int, PipelineStage] | None = None,
) -> None:
    """With ``--html FILE``, the page of ``report`` (reasons worded as the text says them)."""
    path = args.html
    if path is None:
        return
    wording = ReasonWording(report, pipeline, bucket_flag=bucket_flag(args))
    page = render_html(
        report, budget, title=title, subtitle=config, stage_of=stage_of, describe=wording
    )
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    _print(f"{PROG}: wrote {path}", err=True)


def _check_html_target(args: argparse.Namespace) -> None:
    """Fail before the run when ``--html`` names a directory or a missing directory."""
    path = getattr(args, "html", None)
    if path is None:
        return
    if os.path.isdir(path):
        raise CliError(f"--html {path}: is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise CliError(f"--html {path}: no such directory {parent}")


def _source_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _configured(
    args: argparse.Namespace, path: str | None
) -> tuple[ContextBudget, Pipeline, Loaded, str]:
    """The budget, the input (``path``; ``None``: the demo's), the pipeline for it and the
    line saying how items are chosen; the flags and ``--html`` are checked before the
    input is read."""
    budget = budget_from_flags(args)
    build_pipeline(args)
    _check_html_target(args)
    loaded = _demo_input() if path is None else load_input(path)
    transcript = loaded.transcript is not None
    pipeline, query = _bound(build_pipeline(args, transcript=transcript), args, loaded)
    return (
        budget,
        pipeline,
        loaded,
        _with_query_words(describe_config(args, transcript=transcript), args, query),
    )


def _bound(
    pipeline: Pipeline, args: argparse.Namespace, loaded: Loaded
) -> tuple[Pipeline, str | None]:
    """The pipeline with its relevance query bound (see :func:`with_query`)."""
    latest = None if loaded.transcript is None else loaded.transcript.latest_user_text
    return with_query(pipeline, args, latest, loaded.transcript is not None)


def _with_query_words(config: str, args: argparse.Namespace, query: str | None) -> str:
    """The configuration line with the relevance query, and where it came from."""
    if query is None:
        return config
    source = "--query" if getattr(args, "query", None) is not None else "the latest user message"
    return f"{config}; relevance to {clip(query, 60)!r} ({source})"


# -- commands -------------------------------------------------------------------------------
def _cmd_select(args: argparse.Namespace) -> int:
    budget, pipeline, loaded, config = _configured(args, args.items)
    result, report, events, window = _select(pipeline, loaded, budget)
    warnings = [*overflow_lines(events), *decay_warnings(pipeline, loaded.items)]
    if args.report == "json":
        texts = [dump_json(element, indent=None) for element in window]
        # items (not a transcript's messages): the included entries are the window's items
        item_texts = texts if loaded.transcript is None else None
        write_json({"window": Lines(texts, encoded=True), "report": _streamed(report, item_texts)})
        for line in warnings:
            _print(line, err=True)
    else:
        write_json(window)
        text = format_report(
            report,
            result,
            budget,
            pipeline=pipeline,
            show_all=args.all,
            bucket_flag=bucket_flag(args),
            config=config,
        )
        _print("\n".join([*warnings, text]), err=True)
    _write_html(args, f"cupel select: {_source_name(args.items)}", config, report, budget, pipeline)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    budget, pipeline, loaded, config = _configured(args, None)
    result, report, events, window = _select(pipeline, loaded, budget)
    for line in [*overflow_lines(events), *decay_warnings(pipeline, loaded.items)]:
        _print(line, err=True)
    if args.report == "json":
        write_json(
            {
                "command": "demo",
                "source": DEMO_DATA,
                "config": config,
                "budget": budget.to_dict(),
                "window": Lines(window),
                "report": _streamed(report),
            }
        )
    else:
        _print(
            format_demo(
                report,
                result,
                budget,
                config,
                pipeline=pipeline,
                show_all=args.all,
                bucket_flag=bucket_flag(args),
                messages=None
                if loaded.transcript is None
                else (len(window), len(loaded.transcript.messages)),
            )
        )
    _write_html(args, f"cupel demo: {DEMO_DATA}", config, report, budget, pipeline)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    budget, pipeline, loaded, config = _configured(args, args.items)
    items = loaded.items
    if loaded.history is not None:  # the units a selection may send (as select offers)
        loaded.history.check_pinned(budget, _PINNED)
    explanation = explain(pipeline, items, budget, bucket_flag=bucket_flag(args))
    source = _source_name(args.items)
    report = explanation.report
    for line in decay_warnings(pipeline, items):
        _print(line, err=True)
    if args.report == "json":
        write_json(
            {"command": "explain", "source": source, "config": config} | explanation.to_dict()
        )
    else:
        header = explain_header(report, budget, source, config)
        if loaded.history is not None and loaded.history.invalid:
            header.append(
                f"  left out before the run: {count(len(loaded.history.invalid), 'unit')} "
                "breaking the providers' tool-call rule (see cupel select)"
            )
        _print(format_explanation(explanation, header))
    title = f"cupel explain: {source}"
    _write_html(args, title, config, report, budget, pipeline, explanation.stage_of)
    return 0


def _policy_labels(specs: Sequence[str]) -> list[str]:
    """Column labels: preset names as given, policy files by their stem (the path as
    given when two stems collide)."""
    stems = [
        os.path.splitext(os.path.basename(spec))[0]
        if spec.lower().endswith((".json", ".toml"))
        else spec
        for spec in specs
    ]
    labels = [
        spec if stems.count(stem) > 1 else stem for spec, stem in zip(specs, stems, strict=True)
    ]
    for label in labels:
        if labels.count(label) > 1:
            raise CliError(f"--policy {label} is given more than once")
    return labels


def _reason_for(report: SelectionReport, content: str) -> str | None:
    """Why ``report`` left out ``content``: the first reason other than Deduplicated
    (a removed copy says less than the kept copy's fate), else Deduplicated."""
    names = [e.reason.name for e in report.excluded if e.item.content == content]
    return next((n for n in names if n != "Deduplicated"), names[0] if names else None)


def _cmd_compare(args: argparse.Namespace) -> int:
    specs: list[str] = args.policy or []
    if len(specs) < 2:
        raise CliError(
            f"compare needs at least two --policy options, got {len(specs)} "
            "(e.g. --policy chat --policy rag)"
        )
    labels = _policy_labels(specs)
    budget = budget_from_flags(args)
    policies = [resolve_pipeline(load_policy(spec)) for spec in specs]
    loaded = load_input(args.items)  # a transcript: its units, mapped as select maps them
    items = loaded.items
    if args.query is not None and not any(p.needs_query for p in policies):
        raise CliError("--query applies only when a policy has a relevance scorer without a query")
    pipelines = [_bound(p, args, loaded)[0] if p.needs_query else p for p in policies]
    variants: list[tuple[str, Pipeline | str]] = list(zip(labels, pipelines, strict=True))
    sensitivity = policy_sensitivity(items, budget, variants)
    reports = dict(sensitivity.variants)
    rows = []
    for diff in sensitivity.diffs:  # in first-seen order of the items
        cells = []
        for label, status in diff.statuses:
            included = status is ItemStatus.INCLUDED
            reason = None if included else _reason_for(reports[label], diff.content)
            cells.append((label, included, reason))
        rows.append(CompareRow(diff.content, tuple(cells)))
    totals = [(len(r.included), r.included_tokens) for _, r in sensitivity.variants]
    source = _source_name(args.items)
    if args.report == "json":
        write_json(
            {
                "command": "compare",
                "source": source,
                "budget": budget.to_dict(),
                "variants": [
                    {
                        "label": label,
                        "policy": spec,
                        "included_items": len(report.included),
                        "included_tokens": report.included_tokens,
                        "report": report.to_dict(),
                    }
                    for (label, report), spec in zip(sensitivity.variants, specs, strict=True)
                ],
                "diffs": [row.to_dict() for row in rows],
            }
        )
        return 0
    header = compare_header(items, source, budget, len(rows))
    _print(format_compare(header, labels, rows, totals))
    return 0


def _find_target(items: Sequence[ContextItem], content: str) -> ContextItem:
    """The one item whose content is ``content``, or else uniquely starts with it."""
    if not content:
        raise CliError("--item must not be empty: give the item's content or its beginning")
    exact = [i for i, item in enumerate(items) if item.content == content]
    matches = exact or [i for i, item in enumerate(items) if item.content.startswith(content)]
    if not matches:
        raise CliError(f"--item {clip(content, 60)!r}: no item's content is or starts with it")
    if len(matches) > 1:
        where = ", ".join(str(i) for i in matches[:5]) + (", ..." if len(matches) > 5 else "")
        where = f"(items {where}, counting from 0)"
        if len({items[i].content for i in matches}) == 1:
            raise CliError(
                f"--item {clip(content, 60)!r} is ambiguous: {len(matches)} items have the "
                f"same content {where}; duplicates cannot be told apart by content"
            )
        raise CliError(
            f"--item {clip(content, 60)!r} is ambiguous: {len(matches)} items have content "
            f"starting with it {where}; give more of the content"
        )
    return items[matches[0]]


def _cmd_min_budget(args: argparse.Namespace) -> int:
    pipeline = build_pipeline(args)
    loaded = load_input(args.items)
    items = loaded.items
    pipeline, query = _bound(pipeline, args, loaded)
    target = _find_target(items, args.item)
    ceiling = args.search_ceiling
    if ceiling is None:
        ceiling = sum(max(item.tokens, 0) for item in items)
    for line in decay_warnings(pipeline, items):
        _print(line, err=True)
    pinned = sum(i.tokens for i in items if i.pinned and i.tokens >= 0)
    # The probes of a binary search over [low, ceiling]: the ceiling, then halving.
    probes = 1 + max(ceiling - max(target.tokens, pinned) + 1, 1).bit_length()
    with Progress(total=probes, desc="min-budget: trying budgets", unit="run") as progress:
        minimum = find_min_budget_for(
            pipeline,
            items,
            target,
            ceiling,
            on_probe=lambda tokens: progress.step(f"budget {tokens:,}"),
        )
    config = _with_query_words(describe_config(args), args, query)
    # The run at the answer (or at the ceiling): the report the decision rests on. At the
    # ceiling the run itself may be refused (pinned items alone over it): say so instead.
    at = minimum if minimum is not None else ceiling
    report: SelectionReport | None = None
    refusal = ""
    try:
        report = _run(pipeline, items, ContextBudget(max_tokens=at, target_tokens=at))[1]
    except CupelError as exc:
        if minimum is not None:
            raise
        refusal = str(exc)
    if args.report == "json":
        write_json(
            {
                "command": "min-budget",
                "source": _source_name(args.items),
                "config": config,
                "item": target.to_dict(),
                "search_ceiling": ceiling,
                "min_budget": minimum,
                "report_budget": at,
                "report": _streamed(report) if report is not None else None,
            }
        )
        return 0
    why = f"; at {ceiling:,}: {refusal}" if refusal else ""
    if minimum is None and report is not None:
        entry = next((e for e in report.excluded if e.item is target), None)
        if entry is not None:
            wording = ReasonWording(report, pipeline, bucket_flag=bucket_flag(args))
            why = f"; at {ceiling:,}: {wording(entry)}"
    _print(format_min_budget(target, minimum, ceiling, why, config))
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    from cupel.conformance import report

    return report(args.paths, as_json=args.json or args.report == "json", prog=PROG)


COMMANDS = {
    "select": _cmd_select,
    "explain": _cmd_explain,
    "compare": _cmd_compare,
    "min-budget": _cmd_min_budget,
    "demo": _cmd_demo,
    "conformance": _cmd_conformance,
}
"""The handler of each command."""
