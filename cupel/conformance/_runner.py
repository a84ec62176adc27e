"""Run conformance vectors: one function per stage, each returning its failure messages."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import tomli

from cupel._errors import ConfigurationError, CupelError, VectorError
from cupel._model import ContextBudget, ContextItem, OverflowStrategy, ScoredItem, ascii_fold
from cupel._pipeline import Pipeline
from cupel.conformance._builders import (
    Table,
    build_budget,
    build_item,
    build_placer,
    build_scored_item,
    build_scorer,
    build_slicer,
    scorer_entries,
)
from cupel.conformance._keys import MAX_VECTOR_DEPTH, PAYLOAD_KEYS, check_depth, check_keys
from cupel.diagnostics import OverflowEvent, SelectionReport
from cupel.slicers import slice_detailed

__all__ = [
    "STAGES",
    "ConformanceResult",
    "VectorResult",
    "check_vector",
    "discover",
    "run_paths",
    "run_vector",
]

DEFAULT_EPSILON = 1e-9

# A vector entry naming one of the payload keys asserts it; anything else is checked by
# cupel.conformance._keys (near misses fail, other unknown keys warn).
_PAYLOAD_KEYS = PAYLOAD_KEYS
_KIND_KEYS = frozenset({"kind", "displaced_by_kind"})

_Entry = tuple[str, float, str, dict[str, Any]]
"""A report entry as compared: content, score, reason name, reason payload."""


@dataclass(frozen=True)
class VectorResult:
    """The outcome of one vector file: no ``messages`` means it passed. ``warnings``
    (unknown keys that were ignored) do not fail it."""

    path: str
    name: str | None
    stage: str | None
    messages: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when every assertion held."""
        return not self.messages

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "path": self.path,
            "name": self.name,
            "stage": self.stage,
            "status": "passed" if self.passed else "failed",
            "messages": list(self.messages),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ConformanceResult:
    """The outcome of a suite run."""

    vectors: tuple[VectorResult, ...] = field(default=())

    @property
    def passed(self) -> int:
        """Number of passing vectors."""
        return sum(1 for v in self.vectors if v.passed)

    @property
    def failed(self) -> int:
        """Number of failing vectors."""
        return len(self.vectors) - self.passed

    @property
    def ok(self) -> bool:
        """True when no vector failed."""
        return self.failed == 0

    def summary(self) -> str:
        """The closing line: ``N passed, N failed``."""
        return f"{self.passed} passed, {self.failed} failed"

    def failure_lines(self) -> list[str]:
        """One ``FAIL <path>: <difference>`` line per failed assertion."""
        return [f"FAIL {v.path}: {m}" for v in self.vectors for m in v.messages]

    def warning_lines(self) -> list[str]:
        """One ``WARN <path>: <what was ignored>`` line per warning."""
        return [f"WARN {v.path}: {w}" for v in self.vectors for w in v.warnings]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: every vector plus the totals."""
        return {
            "vectors": [v.to_dict() for v in self.vectors],
            "passed": self.passed,
            "failed": self.failed,
            "total": len(self.vectors),
        }


# -- discovery and files -------------------------------------------------------------------
def discover(paths: Iterable[str | Path]) -> list[tuple[Path, str]]:
    """Vector files under ``paths`` (files as given, directories ``**/*.toml`` sorted),
    each with its display path. Raises ``FileNotFoundError`` for a missing path."""
    found: list[tuple[Path, str]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in sorted(path.rglob("*.toml")):
                found.append((file, _display(file)))
        elif path.is_file():
            found.append((path, _display(path)))
        else:
            raise FileNotFoundError(f"no such file or directory: {raw}")
    return found


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run_paths(paths: Iterable[str | Path]) -> ConformanceResult:
    """Run every vector found under ``paths``."""
    return ConformanceResult(tuple(run_vector(f, display=d) for f, d in discover(paths)))


def run_vector(path: str | Path, *, display: str | None = None) -> VectorResult:
    """Parse and run one vector file. A file that cannot be read or parsed (not UTF-8,
    invalid or too deeply nested TOML) fails, named; it never stops the run."""
    shown = display if display is not None else str(path)
    try:
        with open(path, "rb") as fh:
            data = tomli.load(fh)
    except tomli.TOMLDecodeError as exc:
        return VectorResult(shown, None, None, (f"invalid TOML: {exc}",))
    except UnicodeDecodeError as exc:
        return VectorResult(shown, None, None, (f"not valid UTF-8 text (TOML is UTF-8): {exc}",))
    except RecursionError:
        return VectorResult(
            shown,
            None,
            None,
            (f"nested too deeply to parse (vectors may nest at most {MAX_VECTOR_DEPTH} levels)",),
        )
    except OSError as exc:
        return VectorResult(shown, None, None, (f"cannot read vector: {exc}",))
    test = data.get("test")
    name = test.get("name") if isinstance(test, Mapping) else None
    stage = test.get("stage") if isinstance(test, Mapping) else None
    keys = [] if check_depth(data) is not None else check_keys(data)
    failures = [f"vector error: {k.message()}" for k in keys if k.fatal]
    return VectorResult(
        shown,
        name if isinstance(name, str) else None,
        stage if isinstance(stage, str) else None,
        tuple(failures + check_vector(data)),
        tuple(k.message() for k in keys if not k.fatal),
    )


# -- the vector itself ---------------------------------------------------------------------
def check_vector(data: Mapping[str, Any]) -> list[str]:
    """Run a parsed vector; return its failure messages (empty when it passes).
    Unknown keys are not judged here (see :func:`run_vector`)."""
    try:
        too_deep = check_depth(data)
        if too_deep is not None:
            raise VectorError(
                f"{too_deep}: nested deeper than {MAX_VECTOR_DEPTH} tables/arrays "
                f"(the limit for vectors)"
            )
        test = data.get("test")
        if not isinstance(test, Mapping):
            raise VectorError("vector has no [test] table")
        stage = test.get("stage")
        if not isinstance(stage, str) or stage not in STAGES:
            raise VectorError(f"unknown stage {stage!r}")
        runner = STAGES[stage]
        if test.get("expect_construction_error", False) is True:
            return _expect_construction_error(stage, data)
        return runner(data)
    except VectorError as exc:
        return [f"vector error: {exc}"]
    except Exception as exc:  # an error or crash of the code under test is a failure
        return [f"unexpected {type(exc).__name__}: {exc}"]


def _test(data: Mapping[str, Any]) -> Mapping[str, Any]:
    test: Mapping[str, Any] = data["test"]
    return test


def _config(data: Mapping[str, Any]) -> Table:
    config = data.get("config", {})
    if not isinstance(config, Mapping):
        raise VectorError("[config] must be a table")
    return config


def _expected(data: Mapping[str, Any]) -> Table:
    expected = data.get("expected", {})
    if not isinstance(expected, Mapping):
        raise VectorError("[expected] must be a table")
    return expected


def _list(data: Mapping[str, Any], key: str) -> list[Table]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise VectorError(f"[[{key}]] must be an array of tables")
    return value


def _epsilon(data: Mapping[str, Any]) -> float:
    tolerance = data.get("tolerance", {})
    eps = (
        tolerance.get("score_epsilon", DEFAULT_EPSILON) if isinstance(tolerance, Mapping) else None
    )
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise VectorError(f"tolerance.score_epsilon must be a number, got {eps!r}")
    return float(eps)


def _items(data: Mapping[str, Any], key: str = "items") -> list[ContextItem]:
    return [build_item(t, where=f"{key}[{i}]") for i, t in enumerate(_list(data, key))]


def _expected_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise VectorError(f"{where} must be a number, got {value!r}")
    return float(value)


def _close(actual: float, expected: float, eps: float) -> bool:
    if math.isnan(expected):
        return math.isnan(actual)
    if math.isinf(expected):
        return actual == expected
    return abs(actual - expected) < eps


def _contents(items: Iterable[ContextItem]) -> list[str]:
    return [i.content for i in items]


def _with_expect_error(data: Mapping[str, Any], run: Callable[[], list[str]]) -> list[str]:
    """Run ``run``; when ``test.expect_error`` is set, require a cupel error instead."""
    expect = _test(data).get("expect_error")
    if expect is None:
        return run()
    if not isinstance(expect, str):
        raise VectorError(f"test.expect_error must be a string, got {expect!r}")
    try:
        run()
    except VectorError:
        raise
    except CupelError as exc:
        if expect in str(exc):
            return []
        return [f"expected an error containing {expect!r}, got {type(exc).__name__}: {exc}"]
    except Exception as exc:
        return [f"expected a cupel error containing {expect!r}, got {type(exc).__name__}: {exc}"]
    return [f"expected an error containing {expect!r}, but the run succeeded"]


def _construct(stage: str, data: Mapping[str, Any]) -> object:
    """Build what a vector of ``stage`` configures (for ``expect_construction_error``)."""
    test, config = _test(data), _config(data)
    if stage == "scoring":
        return build_scorer({**config, "type": _require_str(test, "scorer", "test")})
    if stage == "slicing":
        return build_slicer(_require_str(test, "slicer", "test"), config)
    if stage == "placing":
        return build_placer(_require_str(test, "placer", "test"))
    return _build_pipeline(data)[0]


def _expect_construction_error(stage: str, data: Mapping[str, Any]) -> list[str]:
    try:
        built = _construct(stage, data)
    except VectorError:
        raise
    except ConfigurationError:
        return []
    except Exception as exc:
        return [f"expected a cupel configuration error, got {type(exc).__name__}: {exc}"]
    return [f"expected a construction error, but {type(built).__name__} was built"]


def _require_str(table: Mapping[str, Any], key: str, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str):
        raise VectorError(f"{where}.{key} must be a string, got {value!r}")
    return value


# -- scoring -------------------------------------------------------------------------------
def run_scoring(data: Mapping[str, Any]) -> list[str]:
    """``stage = "scoring"``: per-item scores through ``score`` and ``score_all``."""
    test, config = _test(data), _config(data)
    scorer = build_scorer({**config, "type": _require_str(test, "scorer", "test")})
    items = _items(data)
    expected = _list(data, "expected")
    if not expected and "expect_error" not in test:
        raise VectorError("scoring vector makes no assertion (no [[expected]])")
    eps = _epsilon(data)

    def run() -> list[str]:
        batch = getattr(scorer, "score_all", None)
        batch_scores = list(batch(items)) if batch is not None else None
        messages = []
        for i, entry in enumerate(expected):
            content = _require_str(entry, "content", f"expected[{i}]")
            want = _expected_number(entry.get("score_approx"), f"expected[{i}].score_approx")
            index = next((k for k, it in enumerate(items) if it.content == content), None)
            if index is None:
                messages.append(f"expected[{i}]: no item with content {content!r}")
                continue
            got = scorer.score(items[index], items)
            if not _close(got, want, eps):
                messages.append(
                    f"score of {content!r}: expected {want!r}, got {got!r} (epsilon={eps})"
                )
            if batch_scores is not None and not _close(batch_scores[index], want, eps):
                messages.append(
                    f"score_all() score of {content!r}: expected {want!r}, "
                    f"got {batch_scores[index]!r} (epsilon={eps})"
                )
        return messages

    return _with_expect_error(data, run)


# -- slicing -------------------------------------------------------------------------------
def run_slicing(data: Mapping[str, Any]) -> list[str]:
    """``stage = "slicing"``: the selected set, shortfalls and cap exclusions."""
    test, config, expected = _test(data), _config(data), _expected(data)
    slicer = build_slicer(_require_str(test, "slicer", "test"), config)
    budget_table = data.get("budget")
    if not isinstance(budget_table, Mapping):
        raise VectorError("slicing vector has no [budget] table")
    budget = build_budget(budget_table, max_defaults_to_target=True)
    scored = [
        build_scored_item(t, where=f"scored_items[{i}]")
        for i, t in enumerate(_list(data, "scored_items"))
    ]
    asserted = {"selected_contents", "shortfall_count", "cap_excluded_count"} & set(expected)
    if not asserted and "expect_error" not in test:
        raise VectorError("slicing vector makes no assertion (no expected.selected_contents)")

    def run() -> list[str]:
        outcome = slice_detailed(slicer, scored, budget)
        messages = []
        if "selected_contents" in expected:
            want = expected["selected_contents"]
            if not isinstance(want, list):
                raise VectorError("expected.selected_contents must be an array")
            messages += _set_diff("selected", [str(w) for w in want], _contents(outcome.selected))
        messages += _count("shortfall_count", expected, len(outcome.shortfalls))
        messages += _count("cap_excluded_count", expected, len(outcome.cap_exclusions))
        return messages

    return _with_expect_error(data, run)


def _set_diff(what: str, want: Sequence[str], got: Sequence[str]) -> list[str]:
    if set(want) == set(got):
        return []
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    return [
        f"{what}: expected {sorted(set(want))}, got {sorted(set(got))} "
        f"(missing {missing}, unexpected {extra})"
    ]


def _count(key: str, expected: Table, actual: int) -> list[str]:
    if key not in expected:
        return []
    want = expected[key]
    if want != actual:
        return [f"{key}: expected {want!r}, got {actual}"]
    return []


# -- placing -------------------------------------------------------------------------------
def run_placing(data: Mapping[str, Any]) -> list[str]:
    """``stage = "placing"``: the exact output order."""
    test, expected = _test(data), _expected(data)
    placer = build_placer(_require_str(test, "placer", "test"))
    scored: list[ScoredItem] = [
        build_scored_item(t, where=f"items[{i}]") for i, t in enumerate(_list(data, "items"))
    ]
    if "ordered_contents" not in expected and "expect_error" not in test:
        raise VectorError("placing vector makes no assertion (no expected.ordered_contents)")

    def run() -> list[str]:
        placed = placer.place(scored)
        want = expected.get("ordered_contents", [])
        if not isinstance(want, list):
            raise VectorError("expected.ordered_contents must be an array")
        return _order_diff("order", [str(w) for w in want], _contents(placed))

    return _with_expect_error(data, run)


def _order_diff(what: str, want: list[str], got: list[str]) -> list[str]:
    return [] if want == got else [f"{what}: expected {want}, got {got}"]


# -- pipeline ------------------------------------------------------------------------------
def _build_pipeline(data: Mapping[str, Any]) -> tuple[Pipeline, ContextBudget]:
    config = _config(data)
    reference_time = config.get("reference_time")
    scorer = scorer_entries(
        _list(config, "scorers"),
        reference_time=reference_time if isinstance(reference_time, datetime) else None,
    )
    slicer = build_slicer(_require_str(config, "slicer", "config"), config)
    placer = build_placer(_require_str(config, "placer", "config"))
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
    expected = _expected(data)
    pipeline, budget = _build_pipeline(data)
    items = _items(data)
    eps = _epsilon(data)

    def run_plain() -> list[str]:
        pipeline.run(items, budget)
        return []

    def run() -> list[str]:
        events: list[OverflowEvent] = []
        result = pipeline.dry_run(items, budget, on_overflow=events.append)
        want = [
            _require_str(e, "content", f"expected_output[{i}]")
            for i, e in enumerate(_list(data, "expected_output"))
        ]
        messages = _order_diff("output", want, _contents(result.items))
        plain_events: list[OverflowEvent] = []
        plain = pipeline.run(items, budget, on_overflow=plain_events.append)
        messages += _order_diff(
            "output without diagnostics", _contents(result.items), _contents(plain.items)
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
        messages += _report_invariants(report, result.items)
        diagnostics = expected.get("diagnostics")
        if diagnostics is not None:
            if not isinstance(diagnostics, Mapping):
                raise VectorError("expected.diagnostics must be a table")
            messages += _check_diagnostics(diagnostics, report, eps)
        messages += _count("shortfall_count", expected, len(report.count_requirement_shortfalls))
        cap_excluded = sum(1 for e in report.excluded if e.reason.name == "CountCapExceeded")
        messages += _count("cap_excluded_count", expected, cap_excluded)
        if "overflow_tokens_over_budget" in expected:
            want_over = expected["overflow_tokens_over_budget"]
            got_over = [e.tokens_over_budget for e in events]
            if got_over != [want_over]:
                messages.append(
                    f"overflow events: expected one with tokens_over_budget={want_over!r}, "
                    f"got {len(events)} {got_over}"
                )
        return messages

    if "expect_error" in _test(data):
        plain = [f"without diagnostics: {m}" for m in _with_expect_error(data, run_plain)]
        return [*_with_expect_error(data, run), *plain]
    return _with_expect_error(data, run)


def _report_invariants(report: SelectionReport, window: Sequence[ContextItem]) -> list[str]:
    """What every report must satisfy whatever the vector asserts: ``included`` is the
    window (same objects, placed order), and the totals count every candidate."""
    messages: list[str] = []
    if [id(e.item) for e in report.included] != [id(i) for i in window]:
        messages.append(
            f"report.included {_contents(e.item for e in report.included)} is not the "
            f"window {_contents(window)}"
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
        want = _list(diag, "included")
        got: list[_Entry] = [(e.item.content, e.score, e.reason.value, {}) for e in report.included]
        messages += _entries("included", want, got, "inclusion_reason", eps)
    if "excluded" in diag:
        want = _list(diag, "excluded")
        got_ex: list[_Entry] = []
        for e in report.excluded:
            payload = {k: v for k, v in e.reason.to_dict().items() if k != "reason"}
            got_ex.append((e.item.content, e.score, e.reason.name, payload))
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
    want_contents = [_require_str(w, "content", f"{where}[{i}]") for i, w in enumerate(want)]
    got_contents = [g[0] for g in got]
    messages = _order_diff(f"{where} contents", want_contents, got_contents)
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
            want_score = _expected_number(entry["score_approx"], f"{label}.score_approx")
            if not _close(score, want_score, eps):
                messages.append(
                    f"{label} score: expected {want_score!r}, got {score!r} (epsilon={eps})"
                )
        if reason_key in entry and entry[reason_key] != reason:
            messages.append(f"{label} {reason_key}: expected {entry[reason_key]!r}, got {reason!r}")
            continue
        for key in sorted(_PAYLOAD_KEYS & set(entry)):
            if key not in payload:
                messages.append(f"{label} {key}: expected {entry[key]!r}, {reason} has no {key}")
            elif not _same(key, entry[key], payload[key], eps):
                messages.append(f"{label} {key}: expected {entry[key]!r}, got {payload[key]!r}")
    return messages


def _same(key: str, want: Any, got: Any, eps: float) -> bool:
    if key in _KIND_KEYS and isinstance(want, str) and isinstance(got, str):
        return ascii_fold(want) == ascii_fold(got)
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return _close(float(got), want, eps)
    return bool(want == got)


STAGES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "scoring": run_scoring,
    "slicing": run_slicing,
    "placing": run_placing,
    "pipeline": run_pipeline,
}
"""The stage runners, by ``test.stage``."""
