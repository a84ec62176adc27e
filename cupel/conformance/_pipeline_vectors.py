"""Pipeline vectors (private): ``stage = "pipeline"`` runs a whole pipeline, with and
without diagnostics, and checks the window, the report and the overflow events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any

from cupel._errors import VectorError
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ascii_fold
from cupel._pipeline import Pipeline
from cupel.conformance._builders import (
    Table,
    build_budget,
    build_placer,
    build_slicer,
    number,
    scorer_entries,
)
from cupel.conformance._keys import PAYLOAD_KEYS
from cupel.conformance._vector import (
    close,
    config_of,
    contents,
    count_diff,
    epsilon,
    expected_of,
    items_of,
    order_diff,
    require_str,
    tables,
    test_of,
    with_expect_error,
)
from cupel.diagnostics import OverflowEvent, SelectionReport

__all__ = ["build_vector_pipeline", "report_invariants", "run_pipeline"]

_KIND_KEYS = frozenset({"kind", "displaced_by_kind"})

_Entry = tuple[str, float, str, dict[str, Any]]
"""A report entry as compared: content, score, reason name, reason payload."""


def build_vector_pipeline(data: Mapping[str, Any]) -> tuple[Pipeline, ContextBudget]:
    config = config_of(data)
    reference_time = config.get("reference_time")
    scorer = scorer_entries(
        tables(config, "scorers"),
        reference_time=reference_time if isinstance(reference_time, datetime) else None,
    )
    slicer = build_slicer(require_str(config, "slicer", "config"), config)
    placer = build_placer(require_str(config, "placer", "config"))
    dedup = config.get("deduplication", True)
    if not isinstance(dedup, bool):
        raise VectorError(f"config.deduplication must be a boolean, got {dedup!r}")
    strategy = OverflowStrategy.parse(config.get("overflow_strategy", "throw"))
    pipeline = Pipeline(scorer, slicer, placer, deduplication=dedup, overflow_strategy=strategy)
    budget_table = data.get("budget")
    if not isinstance(budget_table, Mapping):
        raise VectorError("pipeline vector has no [budget] table")
    return pipeline, build_budget(budget_table)


def run_pipeline(data: Mapping[str, Any]) -> list[str]:
    """``stage = "pipeline"``: output order, diagnostics, counts and overflow events.

    The vector runs twice: with a :class:`~cupel.DiagnosticTraceCollector` (``dry_run``,
    whose report the diagnostics assertions read) and with the default null collector
    (``run``). Both must give the same window, token total and overflow events (and, for
    ``test.expect_error``, the same error); the report must agree with the window.
    """
    expected = expected_of(data)
    pipeline, budget = build_vector_pipeline(data)
    items = items_of(data)
    eps = epsilon(data)

    def run_plain() -> list[str]:
        pipeline.run(items, budget)
        return []

    def run() -> list[str]:
        events: list[OverflowEvent] = []
        result = pipeline.dry_run(items, budget, on_overflow=events.append)
        want = [
            require_str(e, "content", f"expected_output[{i}]")
            for i, e in enumerate(tables(data, "expected_output"))
        ]
        messages = order_diff("output", want, contents(result.items))
        plain_events: list[OverflowEvent] = []
        plain = pipeline.run(items, budget, on_overflow=plain_events.append)
        messages += order_diff(
            "output without diagnostics", contents(result.items), contents(plain.items)
        )
        if plain.total_tokens != result.total_tokens:
            messages.append(
                f"total_tokens without diagnostics: expected {result.total_tokens}, "
                f"got {plain.total_tokens}"
            )
        over = [e.tokens_over_budget for e in events]
        plain_over = [e.tokens_over_budget for e in plain_events]
        if plain_over != over:
            messages.append(
                f"overflow events without diagnostics: expected {over}, got {plain_over}"
            )
        report = result.report
        if report is None:
            return [*messages, "dry_run returned no SelectionReport"]
        messages += report_invariants(report, result.items)
        diagnostics = expected.get("diagnostics")
        if diagnostics is not None:
            if not isinstance(diagnostics, Mapping):
                raise VectorError("expected.diagnostics must be a table")
            messages += _check_diagnostics(diagnostics, report, eps)
        messages += count_diff(
            "shortfall_count", expected, len(report.count_requirement_shortfalls)
        )
        cap_excluded = sum(1 for e in report.excluded if e.reason.name == "CountCapExceeded")
        messages += count_diff("cap_excluded_count", expected, cap_excluded)
        if "overflow_tokens_over_budget" in expected:
            want_over = expected["overflow_tokens_over_budget"]
            got_over = [e.tokens_over_budget for e in events]
            if got_over != [want_over]:
                messages.append(
                    f"overflow events: expected one with tokens_over_budget={want_over!r}, "
                    f"got {len(events)} {got_over}"
                )
        return messages

    if "expect_error" in test_of(data):
        plain = [f"without diagnostics: {m}" for m in with_expect_error(data, run_plain)]
        return [*with_expect_error(data, run), *plain]
    return with_expect_error(data, run)


def report_invariants(report: SelectionReport, window: Sequence[ContextItem]) -> list[str]:
    """What every report must satisfy whatever the vector asserts: ``included`` is the
    window (same objects, placed order), and the totals count every candidate."""
    messages: list[str] = []
    if [id(e.item) for e in report.included] != [id(i) for i in window]:
        messages.append(
            f"report.included {contents(e.item for e in report.included)} is not the "
            f"window {contents(window)}"
        )
    listed = len(report.included) + len(report.excluded)
    if report.total_candidates != listed:
        messages.append(
            f"report.total_candidates {report.total_candidates} != included + excluded {listed}"
        )
    tokens = sum(e.item.tokens for e in report.included)
    tokens += sum(e.item.tokens for e in report.excluded)
    if report.total_tokens_considered != tokens:
        messages.append(
            f"report.total_tokens_considered {report.total_tokens_considered} != "
            f"tokens of included + excluded {tokens}"
        )
    scores = [e.score for e in report.excluded]
    if any(a < b for a, b in pairwise(scores)):
        messages.append(f"report.excluded is not sorted by score descending: {scores}")
    return messages


def _check_diagnostics(diag: Table, report: SelectionReport, eps: float) -> list[str]:
    messages: list[str] = []
    if "included" in diag:
        want = tables(diag, "included")
        got: list[_Entry] = [(e.item.content, e.score, e.reason.value, {}) for e in report.included]
        messages += _entries("included", want, got, "inclusion_reason", eps)
    if "excluded" in diag:
        want = tables(diag, "excluded")
        got_ex: list[_Entry] = [  # the payload: the reason's wire form (its "reason" aside)
            (e.item.content, e.score, e.reason.name, e.reason.to_dict()) for e in report.excluded
        ]
        messages += _entries("excluded", want, got_ex, "exclusion_reason", eps)
    summary = diag.get("summary")
    if summary is not None:
        if not isinstance(summary, Mapping):
            raise VectorError("expected.diagnostics.summary must be a table")
        for key in ("total_candidates", "total_tokens_considered"):
            if key in summary and summary[key] != getattr(report, key):
                messages.append(
                    f"diagnostics.summary.{key}: expected {summary[key]!r}, "
                    f"got {getattr(report, key)!r}"
                )
    return messages


def _entries(
    what: str, want: list[Table], got: list[_Entry], reason_key: str, eps: float
) -> list[str]:
    """Compare report entries with expected ones: contents in order, then each field."""
    where = f"diagnostics.{what}"
    want_contents = [require_str(w, "content", f"{where}[{i}]") for i, w in enumerate(want)]
    got_contents = [g[0] for g in got]
    messages = order_diff(f"{where} contents", want_contents, got_contents)
    in_order = not messages
    # Pair entries by position when the order matches, else by first unused equal content.
    unused = list(range(len(got)))
    for i, (entry, content) in enumerate(zip(want, want_contents, strict=True)):
        j = i if in_order else next((k for k in unused if got[k][0] == content), None)
        if j is None:
            continue
        if j in unused:
            unused.remove(j)
        _, score, reason, payload = got[j]
        label = f"{where}[{i}] ({content!r})"
        if "score_approx" in entry:
            want_score = number(entry["score_approx"], f"{label}.score_approx")
            if not close(score, want_score, eps):
                messages.append(
                    f"{label} score: expected {want_score!r}, got {score!r} (epsilon={eps})"
                )
        if reason_key in entry and entry[reason_key] != reason:
            messages.append(f"{label} {reason_key}: expected {entry[reason_key]!r}, got {reason!r}")
            continue
        # an entry naming a payload key asserts it (cupel.conformance._keys checks the others)
        for key in sorted(PAYLOAD_KEYS & set(entry)):
            if key not in payload:
                messages.append(f"{label} {key}: expected {entry[key]!r}, {reason} has no {key}")
            elif not _same(key, entry[key], payload[key], eps):
                messages.append(f"{label} {key}: expected {entry[key]!r}, got {payload[key]!r}")
    return messages


def _same(key: str, want: Any, got: Any, eps: float) -> bool:
    if key in _KIND_KEYS and isinstance(want, str) and isinstance(got, str):
        return ascii_fold(want) == ascii_fold(got)
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return close(float(got), want, eps)
    return bool(want == got)
