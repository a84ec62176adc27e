"""Invalid policies fail at load time with a PolicyError naming the path of the mistake."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cupel import ConfigurationError
from cupel.policy import (
    CompositeEntrySpec,
    KindSpec,
    Policy,
    PolicyError,
    QuotaEntrySpec,
    QuotaSpec,
)

SCORER_TYPES = (
    "'recency', 'priority', 'kind', 'tag', 'frequency', 'reflexive', 'composite', 'scaled', "
    "'metadata_trust', 'metadata_key', 'decay', 'relevance', 'custom'"
)


def composite(*weights: Any) -> dict[str, Any]:
    return {"type": "composite", "scorers": [{"weight": w, "scorer": "kind"} for w in weights]}


# (data, path, exact message)
MISTAKES: list[tuple[dict[str, Any], str, str]] = [
    (
        {"scorer": composite(1, 2, -1)},
        "scorer.scorers[2].weight",
        "scorer.scorers[2].weight: must be > 0, got -1",
    ),
    (
        {"scorer": composite(1, 0)},
        "scorer.scorers[1].weight",
        "scorer.scorers[1].weight: must be > 0, got 0",
    ),
    (
        {"scorer": {"type": "kind", "weights": {"Document": -0.5}}},
        "scorer.weights['Document']",
        "scorer.weights['Document']: must be >= 0, got -0.5",
    ),
    (
        {"scorer": {"type": "decay", "curve": {"type": "exponential", "half_life_secs": 0}}},
        "scorer.curve.half_life_secs",
        "scorer.curve.half_life_secs: must be > 0, got 0",
    ),
    (
        {"scorer": {"type": "bogus"}},
        "scorer.type",
        f"scorer.type: unknown type 'bogus'; allowed types: {SCORER_TYPES}",
    ),
    (
        {"scorer": {"weights": {}}},
        "scorer",
        f"scorer: missing the 'type' key; allowed types: {SCORER_TYPES}",
    ),
    ({}, "scorer", "scorer: is required"),
    (
        {"scorer": "kind", "slicer": {"type": "knapsack", "bucket_size": 0}},
        "slicer.bucket_size",
        "slicer.bucket_size: must be > 0, got 0",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {"type": "quota", "quotas": [{"kind": "Document", "require": 70, "cap": 60}]},
        },
        "slicer.quotas[0].require",
        "slicer.quotas[0].require: require (70.0) must be <= cap (60.0) for kind 'Document'",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {
                "type": "quota",
                "quotas": [{"kind": "Document", "require": 70}, {"kind": "Memory", "require": 40}],
            },
        },
        "slicer.quotas",
        "slicer.quotas: the require percentages must sum to at most 100, got 110.0",
    ),
    (
        {"scorer": "kind", "slicer": {"type": "quota", "quotas": [{"kind": "Doc", "cap": 101}]}},
        "slicer.quotas[0].cap",
        "slicer.quotas[0].cap: must be <= 100, got 101",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {
                "type": "count_quota",
                "inner": "knapsack",
                "entries": [{"kind": "ToolOutput", "require_count": 1}],
            },
        },
        "slicer.inner",
        "slicer.inner: inner must not be a KnapsackSlice (its output is not score-ordered, so "
        "cap enforcement could drop better items); use GreedySlice, or "
        "CountConstrainedKnapsackSlice for knapsack selection with count quotas, got "
        "KnapsackSlice()",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {
                "type": "count_constrained_knapsack",
                "entries": [{"kind": "Tool", "require_count": 3, "cap_count": 1}],
            },
        },
        "slicer.entries[0].require_count",
        "slicer.entries[0].require_count: require_count (3) must be <= cap_count (1) "
        "for kind 'Tool'",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {"type": "count_quota", "entries": [{"kind": "Tool", "require_count": -1}]},
        },
        "slicer.entries[0].require_count",
        "slicer.entries[0].require_count: must be >= 0, got -1",
    ),
    (
        {
            "scorer": "kind",
            "slicer": {"type": "count_quota", "entries": [], "scarcity": "panic"},
        },
        "slicer.scarcity",
        "slicer.scarcity: must be 'degrade' or 'throw', got 'panic'",
    ),
    (
        {"scorer": "kind", "placer": "middle"},
        "placer",
        "placer: must be 'chronological' or 'u_shaped' (or 'u-shaped'), got 'middle'",
    ),
    (
        {"scorer": "kind", "overflow_strategy": "explode"},
        "overflow_strategy",
        "overflow_strategy: must be 'throw', 'truncate' or 'proceed', got 'explode'",
    ),
    (
        {"scorer": "kind", "dedup": False},
        "dedup",
        "dedup: unknown key; allowed keys here: name, description, scorer, slicer, placer, "
        "deduplication, overflow_strategy",
    ),
    (
        {"scorer": {"type": "recency", "half_life": 3}},
        "scorer.half_life",
        "scorer.half_life: unknown key; allowed keys here: type",
    ),
    (
        {"scorer": "kind", "deduplication": "yes"},
        "deduplication",
        "deduplication: must be a valid boolean, got 'yes'",
    ),
    (
        {"scorer": {"type": "kind", "weights": {"Document": 1, "DOCUMENT": 2}}},
        "scorer.weights",
        "scorer.weights: weights lists kinds 'Document' and 'DOCUMENT', which are the same "
        "kind (kinds compare case-insensitively)",
    ),
    (
        {"scorer": {"type": "scaled", "inner": {"type": "tag", "tag_weights": {"a": "x"}}}},
        "scorer.inner.tag_weights['a']",
        "scorer.inner.tag_weights['a']: must be a valid number, got 'x'",
    ),
    (
        {
            "scorer": {
                "type": "decay",
                "curve": {
                    "type": "step",
                    "windows": [
                        {"max_age_secs": 10, "score": 0.5},
                        {"max_age_secs": 5, "score": 0.1},
                    ],
                },
            }
        },
        "scorer.curve.windows[1].max_age_secs",
        "scorer.curve.windows[1].max_age_secs: must be greater than windows[0].max_age_secs "
        "(10.0) (windows ascend), got 5.0",
    ),
    (
        {"scorer": {"type": "decay", "curve": {"type": "step", "windows": []}}},
        "scorer.curve.windows",
        "scorer.curve.windows: must hold at least 1 entry, got []",
    ),
    (
        {"scorer": {"type": "decay", "null_timestamp_score": 1.5, "curve": "window"}},
        "scorer.curve.max_age_secs",
        "scorer.curve.max_age_secs: is required; scorer.null_timestamp_score: must be <= 1, "
        "got 1.5",
    ),
    (
        {"scorer": {"type": "metadata_key", "key": "k", "value": "v", "boost": float("inf")}},
        "scorer.boost",
        "scorer.boost: must be a finite number, got inf",
    ),
    (
        {"scorer": {"type": "metadata_trust", "default_score": True}},
        "scorer.default_score",
        "scorer.default_score: must be a valid number, got True",
    ),
    (
        {"scorer": {"type": "composite", "scorers": [{"weight": 1, "scorer": composite(2, -3)}]}},
        "scorer.scorers[0].scorer.scorers[1].weight",
        "scorer.scorers[0].scorer.scorers[1].weight: must be > 0, got -3",
    ),
    (
        {"scorer": 5},
        "scorer",
        "scorer: must be a table/object with a 'type' key (or a type name string), got int 5",
    ),
    (
        {"scorer": "kind", "slicer": {"type": "knapsack", "bucket_size": 2.5}},
        "slicer.bucket_size",
        "slicer.bucket_size: must be a positive integer or 'auto', got 2.5",
    ),
]


@pytest.mark.parametrize(("data", "path", "message"), MISTAKES, ids=[m[1] for m in MISTAKES])
def test_mistakes_raise_policy_errors_naming_the_path(
    data: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict(data)
    assert str(caught.value) == message
    assert caught.value.field == path
    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, ValueError)


def test_json_and_toml_loaders_report_the_same_paths() -> None:
    with pytest.raises(PolicyError, match=r"^scorer\.scorers\[1\]\.weight: must be > 0, got -2$"):
        Policy.from_json(
            '{"scorer": {"type": "composite", "scorers": ['
            '{"weight": 1, "scorer": "recency"}, {"weight": -2, "scorer": "kind"}]}}'
        )
    toml = """
[scorer]
type = "composite"

[[scorer.scorers]]
weight = 1
scorer = { type = "recency" }

[[scorer.scorers]]
weight = -2
scorer = { type = "kind" }
"""
    with pytest.raises(PolicyError, match=r"^scorer\.scorers\[1\]\.weight: must be > 0, got -2$"):
        Policy.from_toml(toml)


def test_every_problem_is_listed_with_its_path() -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict({"scorer": composite(-1, 1, -2), "placer": "left"})
    assert [path for path, _, _ in caught.value.problems] == [
        "scorer.scorers[0].weight",
        "scorer.scorers[2].weight",
        "placer",
    ]
    assert caught.value.value == -1


def test_syntax_errors_are_policy_errors() -> None:
    with pytest.raises(PolicyError, match=r"^policy: invalid JSON: Expecting"):
        Policy.from_json("{scorer: }")
    with pytest.raises(PolicyError, match=r"^policy: invalid TOML: "):
        Policy.from_toml("scorer = = 1")
    with pytest.raises(PolicyError, match=r"^policy: expected a table/object, got list \[1\]$"):
        Policy.from_dict([1])  # type: ignore[arg-type]


def test_python_construction_validates_the_same_way() -> None:
    with pytest.raises(PolicyError, match=r"^scorer\.scorers\[0\]\.weight: must be > 0, got 0$"):
        Policy(scorer={"type": "composite", "scorers": [{"weight": 0, "scorer": "kind"}]})
    # a spec built alone reports paths relative to itself ...
    with pytest.raises(PolicyError, match=r"^weight: must be > 0, got -1$"):
        CompositeEntrySpec(weight=-1, scorer=KindSpec())
    # ... and constructor checks run when the policy is assembled
    quota = QuotaSpec(quotas=[QuotaEntrySpec(kind="Document", require=90, cap=50)])
    with pytest.raises(PolicyError, match=r"^slicer\.quotas\[0\]\.require: require \(90\.0\)"):
        Policy(scorer=KindSpec(), slicer=quota)


# -- limits: nesting depth, durations, table size -------------------------------------------


def scaled_chain(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "recency"}
    for _ in range(depth):
        spec = {"type": "scaled", "inner": spec}
    return spec


def composite_chain(depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "recency"}
    for _ in range(depth):
        spec = {"type": "composite", "scorers": [{"weight": 1, "scorer": spec}]}
    return spec


@pytest.mark.parametrize("chain", [scaled_chain(400), composite_chain(130), scaled_chain(5000)])
def test_nesting_past_the_limit_is_a_policy_error_with_the_path(chain: dict[str, Any]) -> None:
    for load in (
        lambda: Policy.from_dict({"scorer": chain}),
        lambda: Policy(scorer=chain),
    ):
        with pytest.raises(PolicyError, match=r"nested deeper than 100 tables/arrays") as info:
            load()
        assert info.value.field is not None and info.value.field.startswith("scorer.")


def test_nesting_within_the_policy_limit_but_past_the_scorer_limit_names_both() -> None:
    with pytest.raises(
        PolicyError, match=r"scorers nest 65 levels deep, more than the limit of 64"
    ):
        Policy.from_dict({"scorer": scaled_chain(70)})
    assert Policy.from_dict({"scorer": scaled_chain(60)}).build().scorer is not None


def test_params_of_custom_scorers_count_towards_the_depth() -> None:
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    with pytest.raises(PolicyError, match=r"^scorer\.params\.x\[0\]\[0\].*nested deeper"):
        Policy.from_dict({"scorer": {"type": "custom", "name": "n", "params": {"x": deep}}})


def test_documents_too_deep_for_the_parsers_are_policy_errors() -> None:
    with pytest.raises(PolicyError, match=r"nested too deeply to parse"):
        Policy.from_json('{"scorer": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(PolicyError, match=r"nested too deeply to parse|nested deeper"):
        Policy.from_toml("x = " + "[" * 1000 + "]" * 1000)


@pytest.mark.parametrize(
    ("curve", "path"),
    [
        ({"type": "exponential", "half_life_secs": 1e300}, "scorer.curve.half_life_secs"),
        ({"type": "window", "max_age_secs": 1e18}, "scorer.curve.max_age_secs"),
        (
            {
                "type": "step",
                "windows": [{"max_age_secs": 60, "score": 1}, {"max_age_secs": 1e20, "score": 0}],
            },
            "scorer.curve.windows[1].max_age_secs",
        ),
    ],
)
def test_decay_durations_beyond_timedelta_are_policy_errors(
    curve: dict[str, Any], path: str
) -> None:
    with pytest.raises(
        PolicyError, match=rf"^{re.escape(path)}: must be <= 86400000000000, got"
    ) as info:
        Policy.from_dict({"scorer": {"type": "decay", "curve": curve}})
    assert info.value.field == path


def test_a_sub_microsecond_duration_is_a_policy_error_naming_the_curve() -> None:
    curve = {"type": "exponential", "half_life_secs": 1e-9}
    with pytest.raises(
        PolicyError,
        match=r"^scorer\.curve\.half_life_secs: half_life_secs must be at least one microsecond",
    ):
        Policy.from_dict({"scorer": {"type": "decay", "curve": curve}})


def test_knapsack_max_cells_beyond_the_ceiling_is_a_policy_error() -> None:
    with pytest.raises(
        PolicyError, match=r"^slicer\.max_cells: max_cells must be at most 1,000,000,000"
    ):
        Policy.from_dict({"scorer": "recency", "slicer": {"type": "knapsack", "max_cells": 10**15}})


def test_nested_json_and_toml_documents_are_refused_the_same_way() -> None:
    depth = 300
    text = '{"scorer": ' + '{"type": "scaled", "inner": ' * depth + '"recency"' + "}" * (depth + 1)
    with pytest.raises(PolicyError, match=r"^scorer\.inner\.inner.*nested deeper than 100"):
        Policy.from_json(text)
    toml = "[scorer]\ntype = 'scaled'\ninner = " + "{type = 'scaled', inner = " * depth
    toml += "'recency'" + "}" * depth + "\n"
    with pytest.raises(PolicyError, match=r"^scorer\.inner\.inner.*nested deeper than 100"):
        Policy.from_toml(toml)
