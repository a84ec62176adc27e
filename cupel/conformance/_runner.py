"""Run conformance vectors: find the files, read each, and run it by its stage (scoring,
slicing and placing here, the pipeline in ``_pipeline_vectors``), each stage returning
its failure messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli

from cupel._errors import ConfigurationError, VectorError
from cupel._model import ScoredItem
from cupel.conformance._builders import (
    build_budget,
    build_placer,
    build_scored_item,
    build_scorer,
    build_slicer,
    number,
)
from cupel.conformance._history_vectors import History, run_history
from cupel.conformance._keys import MAX_VECTOR_DEPTH, check_depth, check_keys
from cupel.conformance._pipeline_vectors import build_vector_pipeline, run_pipeline
from cupel.conformance._results import ConformanceResult, VectorResult
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
    set_diff,
    tables,
    test_of,
    with_expect_error,
)
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
    problem = None
    try:
        with open(path, "rb") as fh:
            data = tomli.load(fh)
    except tomli.TOMLDecodeError as exc:
        problem = f"invalid TOML: {exc}"
    except UnicodeDecodeError as exc:
        problem = f"not valid UTF-8 text (TOML is UTF-8): {exc}"
    except RecursionError:
        problem = f"nested too deeply to parse (vectors may nest at most {MAX_VECTOR_DEPTH} levels)"
    except OSError as exc:
        problem = f"cannot read vector: {exc}"
    if problem is not None:
        return VectorResult(shown, None, None, (problem,))
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


def _construct(stage: str, data: Mapping[str, Any]) -> object:
    """Build what a vector of ``stage`` configures (for ``expect_construction_error``)."""
    test, config = test_of(data), config_of(data)
    if stage == "scoring":
        return build_scorer({**config, "type": require_str(test, "scorer", "test")})
    if stage == "slicing":
        return build_slicer(require_str(test, "slicer", "test"), config)
    if stage == "placing":
        return build_placer(require_str(test, "placer", "test"))
    if stage == "history":
        return History(data).pipeline
    return build_vector_pipeline(data)[0]


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


# -- scoring -------------------------------------------------------------------------------
def run_scoring(data: Mapping[str, Any]) -> list[str]:
    """``stage = "scoring"``: per-item scores through ``score`` and ``score_all``."""
    test, config = test_of(data), config_of(data)
    scorer = build_scorer({**config, "type": require_str(test, "scorer", "test")})
    items = items_of(data)
    expected = tables(data, "expected")
    if not expected and "expect_error" not in test:
        raise VectorError("scoring vector makes no assertion (no [[expected]])")
    eps = epsilon(data)

    def run() -> list[str]:
        batch = getattr(scorer, "score_all", None)
        batch_scores = list(batch(items)) if batch is not None else None
        messages = []
        for i, entry in enumerate(expected):
            content = require_str(entry, "content", f"expected[{i}]")
            want = number(entry.get("score_approx"), f"expected[{i}].score_approx")
            index = next((k for k, it in enumerate(items) if it.content == content), None)
            if index is None:
                messages.append(f"expected[{i}]: no item with content {content!r}")
                continue
            got = scorer.score(items[index], items)
            if not close(got, want, eps):
                messages.append(
                    f"score of {content!r}: expected {want!r}, got {got!r} (epsilon={eps})"
                )
            if batch_scores is not None and not close(batch_scores[index], want, eps):
                messages.append(
                    f"score_all() score of {content!r}: expected {want!r}, "
                    f"got {batch_scores[index]!r} (epsilon={eps})"
                )
        return messages

    return with_expect_error(data, run)


# -- slicing -------------------------------------------------------------------------------
def run_slicing(data: Mapping[str, Any]) -> list[str]:
    """``stage = "slicing"``: the selected set, shortfalls and cap exclusions."""
    test, config, expected = test_of(data), config_of(data), expected_of(data)
    slicer = build_slicer(require_str(test, "slicer", "test"), config)
    budget_table = data.get("budget")
    if not isinstance(budget_table, Mapping):
        raise VectorError("slicing vector has no [budget] table")
    budget = build_budget(budget_table, max_defaults_to_target=True)
    scored = [
        build_scored_item(t, where=f"scored_items[{i}]")
        for i, t in enumerate(tables(data, "scored_items"))
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
            messages += set_diff("selected", [str(w) for w in want], contents(outcome.selected))
        messages += count_diff("shortfall_count", expected, len(outcome.shortfalls))
        messages += count_diff("cap_excluded_count", expected, len(outcome.cap_exclusions))
        return messages

    return with_expect_error(data, run)


# -- placing -------------------------------------------------------------------------------
def run_placing(data: Mapping[str, Any]) -> list[str]:
    """``stage = "placing"``: the exact output order."""
    test, expected = test_of(data), expected_of(data)
    placer = build_placer(require_str(test, "placer", "test"))
    scored: list[ScoredItem] = [
        build_scored_item(t, where=f"items[{i}]") for i, t in enumerate(tables(data, "items"))
    ]
    if "ordered_contents" not in expected and "expect_error" not in test:
        raise VectorError("placing vector makes no assertion (no expected.ordered_contents)")

    def run() -> list[str]:
        placed = placer.place(scored)
        want = expected.get("ordered_contents", [])
        if not isinstance(want, list):
            raise VectorError("expected.ordered_contents must be an array")
        return order_diff("order", [str(w) for w in want], contents(placed))

    return with_expect_error(data, run)


STAGES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "scoring": run_scoring,
    "slicing": run_slicing,
    "placing": run_placing,
    "pipeline": run_pipeline,
    "history": run_history,
}
"""The stage runners, by ``test.stage``."""
