"""Every conformance vector of the repository passes, and the suite is what the issue asks."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import tomli

from cupel.conformance import run_vector

ROOT = Path(__file__).resolve().parents[3] / "conformance"
VECTORS = sorted(ROOT.rglob("*.toml"))


def _load(path: Path) -> dict[str, object]:
    with open(path, "rb") as fh:
        return tomli.load(fh)


def test_the_suite_is_found() -> None:
    assert VECTORS, f"no vectors under {ROOT}"


@pytest.mark.parametrize("path", VECTORS, ids=[p.relative_to(ROOT).as_posix() for p in VECTORS])
def test_vector_passes(path: Path) -> None:
    result = run_vector(path)
    assert result.passed, "\n".join(result.messages)


@pytest.mark.parametrize("path", VECTORS, ids=[p.relative_to(ROOT).as_posix() for p in VECTORS])
def test_vector_derives_its_expectations_in_a_comment(path: Path) -> None:
    comments = [line for line in path.read_text("utf-8").splitlines() if line.startswith("#")]
    assert len(comments) >= 2, f"{path.name}: no comment block deriving the expected values"


def test_the_suite_is_large_and_split_into_required_optional_and_extensions() -> None:
    tiers = Counter(path.relative_to(ROOT).parts[0] for path in VECTORS)
    assert set(tiers) == {"required", "optional", "extensions"}
    assert tiers["required"] + tiers["optional"] >= 70


def test_extension_vectors_use_only_extension_components_and_spec_ones_none() -> None:
    """cupel's extensions (the recency window, its OutsideWindow reason, the history
    windows, the relevance scorer) are tested in conformance/extensions only; the spec
    tiers never use them."""
    for path in VECTORS:
        text = path.read_text("utf-8")
        uses_extension = (
            "recency_window" in text
            or "OutsideWindow" in text
            or 'stage = "history"' in text
            or re.search(r'(scorer|type) = "relevance"', text) is not None
        )
        tier = path.relative_to(ROOT).parts[0]
        assert uses_extension == (tier == "extensions"), path.name


def test_the_recency_window_has_slicing_and_pipeline_vectors() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in VECTORS}
    slicing = {n for n in names if n.startswith("extensions/slicing/recency-window")}
    pipeline = {n for n in names if n.startswith("extensions/pipeline/recency-window")}
    assert len(slicing) >= 10 and len(pipeline) >= 3


def test_the_cache_stable_history_rule_has_vectors() -> None:
    """The replayed cut: appending between cuts, the newest unit kept, a pinned-only window
    that grows again, an earlier turn widened whole."""
    history = [p for p in VECTORS if p.relative_to(ROOT).parts[:2] == ("extensions", "history")]
    assert len(history) >= 4
    for path in history:
        assert _load(path)["test"]["stage"] == "history", path.name


def test_the_relevance_scorer_has_scoring_and_pipeline_vectors() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in VECTORS}
    scoring = {n for n in names if n.startswith("extensions/scoring/relevance-")}
    pipeline = {n for n in names if n.startswith("extensions/pipeline/relevance-")}
    assert len(scoring) >= 6 and len(pipeline) >= 1
    assert all(_load(ROOT / n)["test"]["scorer"] == "relevance" for n in scoring)


def test_every_scorer_slicer_and_placer_has_vectors() -> None:
    tested: Counter[str] = Counter()
    for path in VECTORS:
        data = _load(path)
        test = data["test"]
        assert isinstance(test, dict)
        for key in ("scorer", "slicer", "placer"):
            if key in test:
                tested[f"{key}:{str(test[key]).replace('-', '_')}"] += 1
        config = data.get("config")
        if test["stage"] == "pipeline" and isinstance(config, dict):
            tested[f"pipeline-slicer:{config['slicer']}"] += 1
            tested[f"pipeline-placer:{str(config['placer']).replace('-', '_')}"] += 1
            tested[f"overflow:{config.get('overflow_strategy', 'throw')}"] += 1
    scorers = [
        "recency",
        "priority",
        "kind",
        "tag",
        "frequency",
        "reflexive",
        "composite",
        "scaled",
        "decay",
        "metadata_trust",
        "metadata_key",
        "relevance",
    ]
    slicers = ["greedy", "knapsack", "quota", "count_quota", "count_constrained_knapsack"]
    placers = ("chronological", "u_shaped")
    expected = (
        [f"scorer:{s}" for s in scorers]
        + [f"slicer:{s}" for s in slicers]
        + [f"placer:{p}" for p in placers]
        + [f"pipeline-slicer:{s}" for s in slicers]
        + [f"pipeline-placer:{p}" for p in placers]
        + [f"overflow:{o}" for o in ("throw", "truncate", "proceed")]
    )
    assert [name for name in expected if not tested[name]] == []


def test_the_spec_outlines_have_their_vectors() -> None:
    names = {path.stem for path in VECTORS}
    outlines = ["baseline", "cap-exclusion", "scarcity-degrade", "tag-nonexclusive"]
    for slicer in ("count-constrained-knapsack", "count-quota"):
        assert {f"{slicer}-{o}" for o in outlines} <= names
    assert "count-constrained-knapsack-require-and-cap" in names
    assert "count-quota-require-and-cap" in names
    decay = {
        "decay-exponential-one-half-life",
        "decay-exponential-future-dated",
        "decay-null-timestamp",
        "decay-step-second-window",
        "decay-window-at-max-age",
    }
    trust = {
        "metadata-trust-valid",
        "metadata-trust-key-absent",
        "metadata-trust-unparseable",
        "metadata-trust-clamped-high",
        "metadata-trust-non-finite",
    }
    key = {
        "metadata-key-match",
        "metadata-key-no-match",
        "metadata-key-missing-key",
        "metadata-key-zero-boost-error",
        "metadata-key-negative-boost-error",
    }
    assert decay | trust | key <= names
