"""The ``cupel`` command line.

::

    cupel select ITEMS --max-tokens N [options]    select a window from JSON / JSONL items
    cupel explain ITEMS --max-tokens N [options]   every decision, grouped by stage
    cupel compare ITEMS --max-tokens N --policy A --policy B [...]
                                                   which items swing between policies
    cupel min-budget ITEMS --item CONTENT [options]
                                                   the smallest budget that includes an item
    cupel demo [options]                           run a pipeline on a shipped example
    cupel conformance [PATH ...] [--json]          run the conformance vectors

The pipeline comes from ``--policy NAME|FILE`` (a preset name or a ``.json`` / ``.toml``
policy file) or from the individual ``--scorer`` / ``--slicer`` / ``--placer`` / ...
flags, not both. ``select`` writes the selected window (item wire format, placed order)
as a JSON array to stdout and a readable report to stderr (summarised when long; ``--all``
lists every item); with ``--report json`` it writes ``{"window": [...], "report": {...}}``
to stdout instead. ``--report json`` makes every command print one strict JSON document
(the ``SelectionReport`` wire form plus the command's own fields) on stdout; ``--html
FILE`` (select, explain, demo) writes a self-contained HTML page of the selection.
``python -m cupel`` is the same program; ``cupel --version`` prints the version.

Exit status: 0 on success; 1 when a conformance vector fails; 2 on input errors
(unreadable file, bad JSON, invalid item, policy, budget or flag) and on a selection the
configuration refuses (pinned items or overflow under ``--overflow throw``), each
reported as one ``cupel: error: ...`` line; 130 after Ctrl-C (one ``cupel: interrupted``
line). Degenerate input (no items, a decay
half-life that scores every dated item 0) gets a ``cupel: warning: ...`` line on stderr.
Options are never abbreviated; progress bars appear on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any, NoReturn

from cupel import __version__
from cupel._cli_io import parse_items, read_items, terminal_safe, write_json
from cupel._cli_progress import Progress, track
from cupel._cli_render import (
    CompareRow,
    ReasonWording,
    explain,
    format_compare,
    format_explanation,
    undated_note,
)
from cupel._cli_render import clip as _clip
from cupel._errors import CliError, CupelError, PinnedBudgetError, TableTooLargeError
from cupel._html import render_html
from cupel._model import ContextBudget, ContextItem, OverflowStrategy
from cupel._pipeline import ContextResult, Pipeline
from cupel.analytics import find_min_budget_for
from cupel.diagnostics import (
    ExcludedItem,
    IncludedItem,
    OverflowEvent,
    PipelineStage,
    SelectionReport,
)
from cupel.placers import ChronologicalPlacer, Placer, UShapedPlacer
from cupel.policy import ItemStatus, Policy, PolicyError, policy_sensitivity
from cupel.presets import PRESET_NAMES, preset
from cupel.scorers import (
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    FrequencyScorer,
    KindScorer,
    MetadataTrustScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    Scorer,
    SystemTimeProvider,
    TagScorer,
)
from cupel.slicers import GreedySlice, KnapsackSlice, RecencyWindowSlice, Slicer

__all__ = [
    "DEMO_DATA",
    "CliError",
    "build_pipeline",
    "format_demo",
    "format_report",
    "load_items",
    "load_policy",
    "main",
    "parse_items",
]

PROG = "cupel"
DEMO_DATA = "demo_conversation.jsonl"
"""The example shipped in ``cupel/data`` (an agent debugging a failed deployment)."""
SCORERS = (
    "recency",
    "priority",
    "kind",
    "tag",
    "frequency",
    "reflexive",
    "metadata-trust",
    "decay",
)
DEFAULT_SCORERS = ("recency:3", "kind:1")
DEMO_MAX_TOKENS = 8000
DEMO_TARGET_TOKENS = 6000
DEMO_HEAD, DEMO_TAIL = 8, 12  # window lines the demo shows (all with --all)


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells and other tools use."""
SUMMARY_HEAD, SUMMARY_TAIL = 8, 12  # window lines a summary shows (all with --all)
SUMMARY_EXCLUDED = 12  # excluded lines a summary shows (all with --all)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors become :class:`CliError` (one line, no usage)
    and that takes no abbreviated options (``--max-token`` is not ``--max-tokens``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")


# -- reading items --------------------------------------------------------------------------
def _reading(source: str) -> Any:
    def progress(entries: Iterable[Any], total: int) -> Iterable[Any]:
        return track(entries, total, desc=f"reading {source}")

    return progress


def load_items(path: str) -> list[ContextItem]:
    """Read items from ``path`` (``-`` for stdin): a JSON array or JSON Lines.

    A progress bar shows on a terminal while a large file is read; an empty input is
    reported on stderr (``cupel: warning: ...``) and selects nothing.
    """
    items = read_items(path, progress=_reading(_source_name(path)))
    if not items:
        _warn(f"{_source_name(path)} holds no items: there is nothing to select")
    return items


def _warn(message: str) -> None:
    print(terminal_safe(f"{PROG}: warning: {message}"), file=sys.stderr)


def _demo_items() -> list[ContextItem]:
    text = (resources.files("cupel.data") / DEMO_DATA).read_text(encoding="utf-8")
    return parse_items(text, DEMO_DATA)


# -- configuration --------------------------------------------------------------------------
def _scorer_spec(spec: str) -> tuple[str, float]:
    name, sep, weight = spec.partition(":")
    name = name.strip().lower().replace("_", "-")
    if name not in SCORERS:
        raise CliError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
    if not sep:
        return name, 1.0
    try:
        value = float(weight)
    except ValueError:
        raise CliError(f"--scorer {spec}: weight {weight!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise CliError(f"--scorer {spec}: weight must be a positive number")
    return name, value


def _tag_weights(specs: Sequence[str]) -> dict[str, float]:
    weights = {}
    for spec in specs:
        tag, sep, weight = spec.partition("=")
        try:
            if not sep or not tag:
                raise ValueError
            weights[tag] = float(weight)
        except ValueError:
            raise CliError(f"--tag-weight {spec!r}: expected TAG=WEIGHT") from None
    return weights


def _build_one(name: str, args: argparse.Namespace) -> Scorer:
    if name == "recency":
        return RecencyScorer()
    if name == "priority":
        return PriorityScorer()
    if name == "kind":
        return KindScorer()
    if name == "frequency":
        return FrequencyScorer()
    if name == "reflexive":
        return ReflexiveScorer()
    if name == "metadata-trust":
        return MetadataTrustScorer()
    if name == "tag":
        if not args.tag_weight:
            raise CliError("--scorer tag needs at least one --tag-weight TAG=WEIGHT")
        return TagScorer(_tag_weights(args.tag_weight))
    if args.half_life is None:
        raise CliError("--scorer decay needs --half-life SECONDS")
    seconds = args.half_life
    if not (math.isfinite(seconds) and seconds > 0):
        raise CliError(f"--half-life must be a positive number of seconds, got {seconds:g}")
    try:
        half_life = timedelta(seconds=seconds)
    except OverflowError:
        raise CliError(f"--half-life {seconds:g}: too large for a duration") from None
    if half_life <= timedelta(0):
        raise CliError(f"--half-life {seconds:g}: rounds to zero (the unit is a microsecond)")
    return DecayScorer(SystemTimeProvider(), ExponentialDecay(half_life))


_CONFIG_FLAGS = (
    ("scorer", "--scorer"),
    ("tag_weight", "--tag-weight"),
    ("half_life", "--half-life"),
    ("slicer", "--slicer"),
    ("bucket_size", "--bucket-size"),
    ("placer", "--placer"),
    ("no_dedup", "--no-dedup"),
    ("overflow", "--overflow"),
)


def _flag_pipeline(args: argparse.Namespace) -> Pipeline:
    specs = [_scorer_spec(s) for s in (args.scorer or DEFAULT_SCORERS)]
    names = {name for name, _ in specs}
    if args.tag_weight and "tag" not in names:
        raise CliError("--tag-weight applies only with --scorer tag")
    if args.half_life is not None and "decay" not in names:
        raise CliError("--half-life applies only with --scorer decay")
    entries = [(_build_one(name, args), weight) for name, weight in specs]
    scorer: Scorer = entries[0][0] if len(entries) == 1 else CompositeScorer(entries)
    slicer: Slicer
    if args.slicer == "knapsack":
        bucket_size = 100 if args.bucket_size is None else args.bucket_size
        if bucket_size <= 0:
            raise CliError(f"--bucket-size must be a positive integer, got {bucket_size}")
        slicer = KnapsackSlice(bucket_size=bucket_size)
    elif args.bucket_size is not None:
        raise CliError("--bucket-size applies only with --slicer knapsack")
    elif args.slicer == "recency-window":
        slicer = RecencyWindowSlice()
    else:
        slicer = GreedySlice()
    placer: Placer = UShapedPlacer() if args.placer == "u-shaped" else ChronologicalPlacer()
    return Pipeline(
        scorer,
        slicer,
        placer,
        deduplication=not args.no_dedup,
        overflow_strategy=OverflowStrategy.parse(args.overflow or "throw"),
    )


def load_policy(spec: str) -> Policy:
    """The policy ``spec`` names: a preset name, or the path of a ``.json`` / ``.toml`` file."""

    if not spec.lower().endswith((".json", ".toml")):
        try:
            return preset(spec)
        except PolicyError:
            raise CliError(
                f"--policy {spec!r} is neither a preset ({', '.join(PRESET_NAMES)}) "
                "nor a .json / .toml policy file"
            ) from None
    try:
        return Policy.load(spec)
    except OSError as exc:
        raise CliError(f"--policy: cannot read {spec}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"--policy {spec}: not UTF-8 text ({exc.reason})") from None
    except PolicyError as exc:
        raise CliError(f"policy file {spec}: {exc}") from None


def _given(value: object) -> bool:
    """Whether a configuration flag was given (``0`` counts: ``--bucket-size 0`` was)."""
    return value is not None and value is not False and value != []


def build_pipeline(args: argparse.Namespace) -> Pipeline:
    """The pipeline the configuration flags (or ``--policy``) describe."""
    policy = getattr(args, "policy", None)
    if policy is None:
        return _flag_pipeline(args)
    given = [flag for dest, flag in _CONFIG_FLAGS if _given(getattr(args, dest))]
    if given:
        raise CliError(
            f"--policy cannot be combined with {', '.join(given)}: the policy sets the "
            "scorer, slicer, placer, deduplication and overflow strategy"
        )
    return load_policy(policy).build()


def _describe_config(args: argparse.Namespace) -> str:
    policy = getattr(args, "policy", None)
    if policy is not None:
        return f"policy {policy}"
    scorers = " + ".join(args.scorer or DEFAULT_SCORERS)
    slicer = (args.slicer or "greedy") + (
        f"(bucket {args.bucket_size})" if args.bucket_size else ""
    )
    dedup = "off" if args.no_dedup else "on"
    return (
        f"scorer {scorers}; slicer {slicer}; placer {args.placer or 'chronological'}; "
        f"dedup {dedup}; overflow {args.overflow or 'throw'}"
    )


_BUDGET_FLAGS = (
    ("max_tokens", "--max-tokens"),
    ("target_tokens", "--target-tokens"),
    ("output_reserve", "--output-reserve"),
)


def _budget(args: argparse.Namespace) -> ContextBudget:
    """The budget the flags give; defaults derive from what the user typed.

    ``select``, ``explain`` and ``compare``: ``--max-tokens`` is required and the target
    defaults to it. ``demo`` (which has no required flags): 8,000 / 6,000 when neither
    is given; ``--max-tokens N`` alone targets 3/4 of N (the demo's ratio); without
    ``--max-tokens``, the max grows past 8,000 to fit the target plus the output reserve.
    """
    max_tokens, target = args.max_tokens, args.target_tokens
    if getattr(args, "command", None) == "demo":
        if max_tokens is None:
            target = DEMO_TARGET_TOKENS if target is None else target
            max_tokens = max(DEMO_MAX_TOKENS, target + args.output_reserve)
        elif target is None:
            target = max_tokens * 3 // 4
    elif target is None:
        target = max_tokens
    try:
        return ContextBudget(
            max_tokens=max_tokens, target_tokens=target, output_reserve=args.output_reserve
        )
    except CupelError as exc:
        message = str(exc).removeprefix("ContextBudget.")
        for field, flag in _BUDGET_FLAGS:
            message = message.replace(field, flag)
        raise CliError(f"invalid budget: {message}") from None


# -- reports --------------------------------------------------------------------------------
def _totals(report: SelectionReport, result: ContextResult, budget: ContextBudget) -> str:
    used = result.total_tokens
    target_pct = 100.0 * used / budget.target_tokens if budget.target_tokens else math.nan
    max_pct = 100.0 * used / budget.max_tokens if budget.max_tokens else math.nan
    return (
        f"{len(report.included)} of {report.total_candidates} items selected, "
        f"{used:,} of {report.total_tokens_considered:,} tokens "
        f"({target_pct:.1f}% of target {budget.target_tokens:,}, "
        f"{max_pct:.1f}% of max {budget.max_tokens:,})"
    )


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
) -> str:
    """The ``select`` report: totals, the window in placed order, the exclusions (best
    score first) with their reasons in words.

    Long lists are summarised unless ``show_all``: the window's first and last items,
    the best-scored exclusions and a count of the rest by reason. ``pipeline`` (the one
    that ran) lets the wording explain knapsack bucket rounding.
    """
    wording = _wording(report, pipeline, bucket_flag)
    lines = [f"{PROG}: {_totals(report, result, budget)}", "included (placed order):"]
    window = report.included
    shown: list[tuple[int, IncludedItem] | None] = list(enumerate(window, start=1))
    if not show_all and len(window) > SUMMARY_HEAD + SUMMARY_TAIL + 1:
        shown = [*shown[:SUMMARY_HEAD], None, *shown[-SUMMARY_TAIL:]]
    for entry in shown:
        if entry is None:
            hidden = len(window) - SUMMARY_HEAD - SUMMARY_TAIL
            lines.append(f"        … {hidden:,} more items (--all lists every item) …")
            continue
        i, inc = entry
        item = inc.item
        lines.append(
            f"  {i:>4}. {inc.score:6.3f} {item.tokens:>6} tok {_clip(str(item.kind), 12):<12} "
            f"{_clip(item.content, 50)}  ({inc.reason.value})"
        )
    excluded = report.excluded
    lines.append("excluded (score descending):")
    short = show_all or len(excluded) <= SUMMARY_EXCLUDED + 1
    listed = excluded if short else excluded[:SUMMARY_EXCLUDED]
    for exc in listed:
        item = exc.item
        lines.append(
            f"        {exc.score:6.3f} {item.tokens:>6} tok {_clip(str(item.kind), 12):<12} "
            f"{_clip(item.content, 40)}  <- {wording(exc)}"
        )
    if len(listed) < len(excluded):
        rest = Counter(e.reason.name for e in excluded[len(listed) :]).most_common()
        by_reason = ", ".join(f"{name} {n:,}" for name, n in rest)
        lines.append(
            f"        … {len(excluded) - len(listed):,} more excluded ({by_reason}; "
            "--all lists every item) …"
        )
    for shortfall in report.count_requirement_shortfalls:
        lines.append(
            f"shortfall: kind {shortfall.kind} has {shortfall.satisfied_count} of "
            f"{shortfall.required_count} required items"
        )
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
) -> str:
    """The concise demo summary: the window, then exclusions grouped by reason."""
    wording = _wording(report, pipeline, bucket_flag)
    lines = [
        f"cupel demo: {report.total_candidates} candidate items "
        f"({report.total_tokens_considered:,} tokens) from {DEMO_DATA}",
        f"  budget max {budget.max_tokens:,} / target {budget.target_tokens:,}; {config}",
        "",
        f"Window ({len(report.included)} items, {result.total_tokens:,} tokens, placed order):",
    ]
    window = report.included
    shown: list[IncludedItem | None] = list(window)
    if not show_all and len(window) > DEMO_HEAD + DEMO_TAIL + 1:
        shown = [*window[:DEMO_HEAD], None, *window[-DEMO_TAIL:]]
    for inc in shown:
        if inc is None:
            hidden = len(window) - DEMO_HEAD - DEMO_TAIL
            lines.append(f"  … {hidden} more items (--all lists every item) …")
            continue
        head = f"  {inc.score:4.2f} {inc.reason.value:<6} {_clip(str(inc.item.kind), 12):<12} "
        lines.append(head + _clip(inc.item.content, 80 - len(head)))
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
            head = f"    {e.score:4.2f} {_clip(e.item.content, 40)}  <- "
            lines.append(head + wording(e))
    lines += ["", _totals(report, result, budget)]
    return "\n".join(lines)


def _scorers(scorer: Scorer) -> Iterable[Scorer]:
    yield scorer
    children = getattr(scorer, "children", None)
    if callable(children):
        for child in children():
            yield from _scorers(child)


def _decay_warnings(pipeline: Pipeline, items: Sequence[ContextItem]) -> list[str]:
    """A decay scorer under which every dated item scores 0 ranks nothing (and puts any
    undated item, scored ``null_timestamp_score``, above them all): say so on stderr."""
    warnings = []
    scored = [i for i in items if not i.pinned and i.tokens >= 0]
    dated = [i for i in scored if i.timestamp is not None]
    decays = {id(s): s for s in _scorers(pipeline.scorer) if isinstance(s, DecayScorer)}
    for decay in decays.values():
        if not dated or any(decay.score_all(dated)):
            continue
        stamps = [i.timestamp for i in dated if i.timestamp is not None]
        newest = max(s if s.tzinfo is not None else s.replace(tzinfo=timezone.utc) for s in stamps)
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


def _run(
    pipeline: Pipeline, items: list[ContextItem], budget: ContextBudget
) -> tuple[ContextResult, SelectionReport, list[OverflowEvent]]:
    events: list[OverflowEvent] = []
    result = pipeline.dry_run(items, budget, on_overflow=events.append)
    if result.report is None:  # dry_run always reports; guard against a broken pipeline
        raise CupelError("the pipeline returned no selection report")
    return result, result.report, events


def _overflow_lines(events: list[OverflowEvent]) -> list[str]:
    return [
        f"{PROG}: warning: window exceeds target_tokens by {e.tokens_over_budget} tokens "
        f"(overflow proceed)"
        for e in events
    ]


def _print_json(document: dict[str, Any]) -> None:
    write_json(document)


def _print(text: str, *, err: bool = False) -> None:
    """Text output: control characters in user content are shown, not executed."""
    print(terminal_safe(text), file=sys.stderr if err else sys.stdout)


def _write_html(
    path: str,
    report: SelectionReport,
    budget: ContextBudget,
    *,
    title: str,
    subtitle: str,
    wording: Any,
    stage_of: dict[int, PipelineStage] | None = None,
) -> None:
    page = render_html(
        report, budget, title=title, subtitle=subtitle, stage_of=stage_of, describe=wording
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


def _bucket_flag(args: argparse.Namespace) -> str:
    return "the policy's bucket_size" if getattr(args, "policy", None) else "--bucket-size"


# -- commands -------------------------------------------------------------------------------
def _cmd_select(args: argparse.Namespace) -> int:
    budget = _budget(args)
    pipeline = build_pipeline(args)
    _check_html_target(args)
    items = load_items(args.items)
    result, report, events = _run(pipeline, items, budget)
    wording = ReasonWording(report, pipeline, bucket_flag=_bucket_flag(args))
    warnings = [*_overflow_lines(events), *_decay_warnings(pipeline, items)]
    if args.report == "json":
        _print_json({"window": [i.to_dict() for i in result.items], "report": report.to_dict()})
        for line in warnings:
            _print(line, err=True)
    else:
        write_json([i.to_dict() for i in result.items])
        text = format_report(
            report,
            result,
            budget,
            pipeline=pipeline,
            show_all=args.all,
            bucket_flag=_bucket_flag(args),
        )
        _print("\n".join([*warnings, text]), err=True)
    if args.html is not None:
        _write_html(
            args.html,
            report,
            budget,
            title=f"cupel select: {_source_name(args.items)}",
            subtitle=_describe_config(args),
            wording=wording,
        )
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    budget = _budget(args)
    pipeline = build_pipeline(args)
    _check_html_target(args)
    items = _demo_items()
    result, report, events = _run(pipeline, items, budget)
    for line in _overflow_lines(events):
        _print(line, err=True)
    config = _describe_config(args)
    wording = ReasonWording(report, pipeline, bucket_flag=_bucket_flag(args))
    for line in _decay_warnings(pipeline, items):
        _print(line, err=True)
    if args.report == "json":
        _print_json(
            {
                "command": "demo",
                "source": DEMO_DATA,
                "config": config,
                "budget": budget.to_dict(),
                "window": [i.to_dict() for i in result.items],
                "report": report.to_dict(),
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
                bucket_flag=_bucket_flag(args),
            )
        )
    if args.html is not None:
        _write_html(
            args.html,
            report,
            budget,
            title=f"cupel demo: {DEMO_DATA}",
            subtitle=config,
            wording=wording,
        )
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    budget = _budget(args)
    pipeline = build_pipeline(args)
    _check_html_target(args)
    items = load_items(args.items)
    explanation = explain(pipeline, items, budget, bucket_flag=_bucket_flag(args))
    config = _describe_config(args)
    source = _source_name(args.items)
    report = explanation.report
    for line in _decay_warnings(pipeline, items):
        _print(line, err=True)
    if args.report == "json":
        _print_json(
            {"command": "explain", "source": source, "config": config} | explanation.to_dict()
        )
    else:
        header = [
            f"{PROG} explain: {report.total_candidates} candidates "
            f"({report.total_tokens_considered:,} tokens) from {source}",
            f"  budget max {budget.max_tokens:,} / target {budget.target_tokens:,}"
            + (f" / output reserve {budget.output_reserve:,}" if budget.output_reserve else "")
            + f"; {config}",
        ]
        _print(format_explanation(explanation, header))
    if args.html is not None:
        _write_html(
            args.html,
            report,
            budget,
            title=f"cupel explain: {source}",
            subtitle=config,
            stage_of=explanation.stage_of,
            wording=explanation.wording,
        )
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
    budget = _budget(args)
    variants = [(label, load_policy(spec)) for label, spec in zip(labels, specs, strict=True)]
    items = load_items(args.items)
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
        _print_json(
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
    candidates = len(items)
    header = [
        f"{PROG} compare: {candidates} candidates "
        f"({sum(i.tokens for i in items):,} tokens) from {source}, "
        f"budget max {budget.max_tokens:,} / target {budget.target_tokens:,}; "
        f"{len(rows)} item{'' if len(rows) == 1 else 's'} change status"
    ]
    _print(format_compare(header, labels, rows, totals))
    return 0


def _find_target(items: Sequence[ContextItem], content: str) -> ContextItem:
    """The one item whose content is ``content``, or else uniquely starts with it."""
    if not content:
        raise CliError("--item must not be empty: give the item's content or its beginning")
    exact = [i for i, item in enumerate(items) if item.content == content]
    matches = exact or [i for i, item in enumerate(items) if item.content.startswith(content)]
    if not matches:
        raise CliError(f"--item {_clip(content, 60)!r}: no item's content is or starts with it")
    if len(matches) > 1:
        where = ", ".join(str(i) for i in matches[:5]) + (", ..." if len(matches) > 5 else "")
        where = f"(items {where}, counting from 0)"
        if len({items[i].content for i in matches}) == 1:
            raise CliError(
                f"--item {_clip(content, 60)!r} is ambiguous: {len(matches)} items have the "
                f"same content {where}; duplicates cannot be told apart by content"
            )
        raise CliError(
            f"--item {_clip(content, 60)!r} is ambiguous: {len(matches)} items have content "
            f"starting with it {where}; give more of the content"
        )
    return items[matches[0]]


class _ProbingPipeline(Pipeline):
    """The same pipeline, counting each dry run (a budget probe) on a progress bar."""

    __slots__ = ("_progress",)

    def __init__(self, pipeline: Pipeline, progress: Progress) -> None:
        super().__init__(
            pipeline.scorer,
            pipeline.slicer,
            pipeline.placer,
            deduplication=pipeline.deduplication,
            overflow_strategy=pipeline.overflow_strategy,
            on_overflow=pipeline.on_overflow,
        )
        self._progress = progress

    def dry_run(
        self, items: Sequence[ContextItem], budget: ContextBudget, **kwargs: Any
    ) -> ContextResult:
        self._progress.step(f"budget {budget.max_tokens:,}")
        return super().dry_run(items, budget, **kwargs)


def _probes(low: int, high: int) -> int:
    """Dry runs a binary search over ``[low, high]`` makes (the ceiling, then halving)."""
    return 1 + max(high - low + 1, 1).bit_length()


def _cmd_min_budget(args: argparse.Namespace) -> int:
    pipeline = build_pipeline(args)
    items = load_items(args.items)
    target = _find_target(items, args.item)
    ceiling = args.search_ceiling
    if ceiling is None:
        ceiling = sum(max(item.tokens, 0) for item in items)
    for line in _decay_warnings(pipeline, items):
        _print(line, err=True)
    pinned = sum(i.tokens for i in items if i.pinned and i.tokens >= 0)
    low = max(target.tokens, pinned)
    with Progress(
        total=_probes(low, ceiling), desc="min-budget: trying budgets", unit="run"
    ) as progress:
        minimum = find_min_budget_for(_ProbingPipeline(pipeline, progress), items, target, ceiling)
    config = _describe_config(args)
    source = _source_name(args.items)
    shown = f'"{_clip(target.content, 60)}" ({target.tokens:,} tokens, {target.kind})'
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
        _print_json(
            {
                "command": "min-budget",
                "source": source,
                "config": config,
                "item": target.to_dict(),
                "search_ceiling": ceiling,
                "min_budget": minimum,
                "report_budget": at,
                "report": report.to_dict() if report is not None else None,
            }
        )
        return 0
    lines = [f"{PROG} min-budget: {minimum if minimum is not None else 'not reachable'}"]
    lines.append(f"  item:     {shown}")
    if minimum is not None:
        lines.append(
            f"  answer:   included at max tokens = target tokens = {minimum:,} "
            "(add any output reserve on top)"
        )
    else:
        why = f"; at {ceiling:,}: {refusal}" if refusal else ""
        if report is not None:
            entry = next((e for e in report.excluded if e.item is target), None)
            if entry is not None:
                wording = ReasonWording(report, pipeline, bucket_flag=_bucket_flag(args))
                why = f"; at {ceiling:,}: {wording(entry)}"
        lines.append(
            f"  answer:   not included at any budget up to the search ceiling {ceiling:,}{why}"
        )
    lines.append(f"  searched: {target.tokens:,}..{ceiling:,} tokens; {config}")
    _print("\n".join(lines))
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    from cupel.conformance import report

    return report(args.paths, as_json=args.json or args.report == "json", prog=PROG)


def _config_flags(*, policy: bool = True) -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group(
        "pipeline configuration",
        "either --policy or the individual flags (default: recency:3 + kind:1, greedy, "
        "chronological, dedup on, overflow throw)",
    )
    if policy:
        group.add_argument(
            "--policy",
            metavar="NAME|FILE",
            help="a preset (chat, code_review, rag, document_qa, tool_use, long_running, "
            "debugging) or a .json / .toml policy file",
        )
    group.add_argument(
        "--scorer",
        action="append",
        metavar="NAME[:WEIGHT]",
        help=f"repeatable; one of {', '.join(SCORERS)} (default: recency:3 + kind:1)",
    )
    group.add_argument(
        "--tag-weight", action="append", default=[], metavar="TAG=W", help="weights for tag"
    )
    group.add_argument(
        "--half-life", type=float, metavar="SECONDS", help="half-life for decay (system clock)"
    )
    group.add_argument(
        "--slicer",
        choices=("greedy", "knapsack", "recency-window"),
        help="default: greedy; recency-window keeps the newest items that fit, without holes "
        "(items sharing metadata cupel:turn whole)",
    )
    group.add_argument("--bucket-size", type=int, metavar="N", help="knapsack bucket size (100)")
    group.add_argument(
        "--placer", choices=("chronological", "u-shaped"), help="default: chronological"
    )
    group.add_argument("--no-dedup", action="store_true", help="keep duplicate contents")
    group.add_argument(
        "--overflow", choices=("throw", "truncate", "proceed"), help="default: throw"
    )
    return flags


def _output_flags(*, html: bool) -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group("output")
    group.add_argument(
        "--report",
        choices=("text", "json"),
        default="text",
        help="json: one machine-readable document on stdout (default: text)",
    )
    if html:
        group.add_argument(
            "--html", metavar="FILE", help="also write a self-contained HTML page of the selection"
        )
    return flags


def _budget_flags(*, demo: bool = False) -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group("budget")
    group.add_argument(
        "--max-tokens",
        type=int,
        required=not demo,
        metavar="N",
        help=f"hard token ceiling (default {DEMO_MAX_TOKENS}, or more to fit the other flags)"
        if demo
        else "hard token ceiling",
    )
    group.add_argument(
        "--target-tokens",
        type=int,
        metavar="N",
        help=f"selection target (default {DEMO_TARGET_TOKENS}, or 3/4 of --max-tokens when "
        "that is given)"
        if demo
        else "selection target (default: max tokens)",
    )
    group.add_argument(
        "--output-reserve", type=int, default=0, metavar="N", help="tokens kept for output"
    )
    return flags


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Deterministic, explainable context selection.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    config = _config_flags()
    budget = _budget_flags()
    with_html = _output_flags(html=True)
    select = commands.add_parser(
        "select",
        parents=[budget, config, with_html],
        help="select a context window from items (JSON array or JSON Lines)",
        description="Write the selected window (JSON) to stdout and a report to stderr; "
        'with --report json, write {"window": [...], "report": {...}} to stdout.',
    )
    select.add_argument("items", metavar="ITEMS", help="item file, or - for stdin")
    select.add_argument(
        "--all",
        action="store_true",
        help="list every item in the report (default: a summary when the lists are long)",
    )
    select.set_defaults(handler=_cmd_select)
    explain = commands.add_parser(
        "explain",
        parents=[budget, config, with_html],
        help="explain every decision of a selection, grouped by stage",
        description="A per-item account of a selection: for each stage (Classify, "
        "Score/Deduplicate, Slice, Place) the items it decided on, with score, decision, "
        "reason and its numbers, then a summary.",
    )
    explain.add_argument("items", metavar="ITEMS", help="item file, or - for stdin")
    explain.set_defaults(handler=_cmd_explain)
    compare = commands.add_parser(
        "compare",
        parents=[budget, _output_flags(html=False)],
        help="compare policies: which items each one includes or excludes",
        description="Run two or more policies over the same items and budget and show, "
        "for every item whose inclusion differs, what each policy decided.",
    )
    compare.add_argument("items", metavar="ITEMS", help="item file, or - for stdin")
    compare.add_argument(
        "--policy",
        action="append",
        metavar="NAME|FILE",
        help="repeat at least twice; a preset name or a .json / .toml policy file",
    )
    compare.set_defaults(handler=_cmd_compare)
    min_budget = commands.add_parser(
        "min-budget",
        parents=[config, _output_flags(html=False)],
        help="find the smallest budget at which an item is selected",
        description="Binary-search the smallest budget (max tokens = target tokens) at "
        "which the item is included. The item is the one whose content equals CONTENT, or "
        "else the only one whose content starts with it.",
    )
    min_budget.add_argument("items", metavar="ITEMS", help="item file, or - for stdin")
    min_budget.add_argument(
        "--item", required=True, metavar="CONTENT", help="the item's content (or a prefix)"
    )
    min_budget.add_argument(
        "--search-ceiling",
        type=int,
        metavar="N",
        help="largest budget to try (default: the total tokens of all items)",
    )
    min_budget.set_defaults(handler=_cmd_min_budget)
    demo = commands.add_parser(
        "demo",
        parents=[_budget_flags(demo=True), config, with_html],
        help="run the pipeline on a shipped agent conversation and explain the selection",
    )
    demo.add_argument("--all", action="store_true", help="list every item of the window")
    demo.set_defaults(handler=_cmd_demo)
    conformance = commands.add_parser("conformance", help="run conformance vectors (TOML)")
    conformance.add_argument("paths", nargs="*", metavar="PATH", help="default: conformance/")
    conformance.add_argument(
        "--report",
        choices=("text", "json"),
        default="text",
        help="json: a machine-readable summary on stdout (default: text)",
    )
    conformance.add_argument("--json", action="store_true", help="the same as --report json")
    conformance.set_defaults(handler=_cmd_conformance)
    return parser


def _table_message(exc: TableTooLargeError, args: argparse.Namespace | None) -> str:
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


def _pinned_message(exc: PinnedBudgetError, args: argparse.Namespace | None) -> str:
    """PinnedBudgetError with the flag that fixes it, when a budget flag set the budget."""
    if args is None or not hasattr(args, "max_tokens"):
        return str(exc)
    reserve = args.output_reserve or 0
    return f"{exc}: raise --max-tokens to at least {exc.pinned_tokens + reserve:,}" + (
        f" (pinned tokens + --output-reserve {reserve:,})" if reserve else ""
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``cupel`` command line; returns the exit status (0 success, 1 failing
    conformance vectors, 2 bad input, 130 interrupted)."""
    parser = _parser()
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise CliError(
                "a command is required: select, explain, compare, min-budget, demo or "
                "conformance (see 'cupel --help')"
            )
        status: int = args.handler(args)
        return status
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"\n{PROG}: interrupted\n")
            sys.stderr.flush()
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (``cupel demo | head``): not an error
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except CliError as exc:
        message = str(exc)
    except TableTooLargeError as exc:
        message = _table_message(exc, args)
    except PinnedBudgetError as exc:
        message = _pinned_message(exc, args)
    except CupelError as exc:
        message = str(exc)
    except (ValueError, OSError) as exc:
        message = f"{type(exc).__name__}: {exc}"
    print(terminal_safe(f"{PROG}: error: {message}"), file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
