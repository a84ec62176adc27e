"""Policies round-trip through dict, JSON and TOML and build the pipelines they describe."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import tomli
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from policy_testkit import BUDGET, selection, workload

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    MetadataKeyScorer,
    MetadataTrustScorer,
    OverflowBudgetError,
    OverflowStrategy,
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    ReflexiveScorer,
    RelevanceScorer,
    ScaledScorer,
    ScarcityBehavior,
    StepDecay,
    SystemTimeProvider,
    TagScorer,
    UShapedPlacer,
    WindowDecay,
)
from cupel.policy import (
    CompositeEntrySpec,
    CompositeSpec,
    CountConstrainedKnapsackSpec,
    CountQuotaEntrySpec,
    CountQuotaSpec,
    DecaySpec,
    ExponentialCurveSpec,
    FrequencySpec,
    GreedySpec,
    KindSpec,
    KnapsackSpec,
    MetadataKeySpec,
    MetadataTrustSpec,
    Policy,
    PolicyError,
    PrioritySpec,
    QuotaEntrySpec,
    QuotaSpec,
    RecencySpec,
    ReflexiveSpec,
    RelevanceSpec,
    ScaledSpec,
    StepCurveSpec,
    StepWindowSpec,
    TagSpec,
    WindowCurveSpec,
)

REF = datetime(2025, 1, 1, 12, 30, tzinfo=timezone.utc)

# (id, policy, the pipeline built by hand that it must equal in behaviour)
CASES = [
    ("recency", Policy(scorer=RecencySpec()), Pipeline(RecencyScorer())),
    ("priority", Policy(scorer=PrioritySpec()), Pipeline(PriorityScorer())),
    ("frequency", Policy(scorer=FrequencySpec()), Pipeline(FrequencyScorer())),
    ("reflexive", Policy(scorer=ReflexiveSpec()), Pipeline(ReflexiveScorer())),
    ("kind-default", Policy(scorer=KindSpec()), Pipeline(KindScorer())),
    (
        "kind-weights",
        Policy(scorer=KindSpec(weights={"Document": 2.5, "toolOUTPUT": 1.0})),
        Pipeline(KindScorer({"Document": 2.5, "toolOUTPUT": 1.0})),
    ),
    (
        "tag",
        Policy(scorer=TagSpec(tag_weights={"BILLING": 3.0, "tool": 1.0}, case_insensitive=True)),
        Pipeline(TagScorer({"BILLING": 3.0, "tool": 1.0}, case_insensitive=True)),
    ),
    (
        "metadata-trust",
        Policy(scorer=MetadataTrustSpec(default_score=0.25)),
        Pipeline(MetadataTrustScorer(0.25)),
    ),
    (
        "metadata-key",
        Policy(scorer=MetadataKeySpec(key="cupel:priority", value="high", boost=2.0)),
        Pipeline(MetadataKeyScorer("cupel:priority", "high", 2.0)),
    ),
    (
        "decay-exponential",
        Policy(
            scorer=DecaySpec(
                curve=ExponentialCurveSpec(half_life_secs=1800),
                null_timestamp_score=0.1,
                reference_time=REF,
            )
        ),
        Pipeline(
            DecayScorer(
                FixedTimeProvider(REF),
                ExponentialDecay(timedelta(seconds=1800)),
                null_timestamp_score=0.1,
            )
        ),
    ),
    (
        "decay-step",
        Policy(
            scorer=DecaySpec(
                curve=StepCurveSpec(
                    windows=[
                        StepWindowSpec(max_age_secs=600, score=1.0),
                        StepWindowSpec(max_age_secs=3600.5, score=0.4),
                        StepWindowSpec(max_age_secs=86400, score=0.1),
                    ]
                ),
                reference_time=REF,
            )
        ),
        Pipeline(
            DecayScorer(
                FixedTimeProvider(REF),
                StepDecay(
                    [
                        (timedelta(seconds=600), 1.0),
                        (timedelta(seconds=3600.5), 0.4),
                        (timedelta(days=1), 0.1),
                    ]
                ),
            )
        ),
    ),
    (
        "decay-window",
        Policy(
            scorer=DecaySpec(curve=WindowCurveSpec(max_age_secs=2700), reference_time=REF),
        ),
        Pipeline(DecayScorer(FixedTimeProvider(REF), WindowDecay(timedelta(seconds=2700)))),
    ),
    (
        "nested-composite-scaled",
        Policy(
            scorer=CompositeSpec(
                scorers=[
                    CompositeEntrySpec(weight=3, scorer=RecencySpec()),
                    CompositeEntrySpec(
                        weight=1.5,
                        scorer=CompositeSpec(
                            scorers=[
                                CompositeEntrySpec(weight=1, scorer=ScaledSpec(inner=KindSpec())),
                                CompositeEntrySpec(
                                    weight=2,
                                    scorer=MetadataKeySpec(
                                        key="cupel:priority", value="high", boost=3
                                    ),
                                ),
                            ]
                        ),
                    ),
                    CompositeEntrySpec(weight=0.5, scorer=ScaledSpec(inner=PrioritySpec())),
                ]
            )
        ),
        Pipeline(
            CompositeScorer(
                [
                    (RecencyScorer(), 3),
                    (
                        CompositeScorer(
                            [
                                (ScaledScorer(KindScorer()), 1),
                                (MetadataKeyScorer("cupel:priority", "high", 3), 2),
                            ]
                        ),
                        1.5,
                    ),
                    (ScaledScorer(PriorityScorer()), 0.5),
                ]
            )
        ),
    ),
    (
        "knapsack-ushaped",
        Policy(
            scorer=PrioritySpec(),
            slicer=KnapsackSpec(bucket_size=7, max_cells=1_000_000),
            placer="u_shaped",
        ),
        Pipeline(PriorityScorer(), KnapsackSlice(7, max_cells=1_000_000), UShapedPlacer()),
    ),
    (
        "quota-knapsack-inner",
        Policy(
            scorer=KindSpec(),
            slicer=QuotaSpec(
                inner=KnapsackSpec(bucket_size=5),
                quotas=[
                    QuotaEntrySpec(kind="Document", require=20, cap=50),
                    QuotaEntrySpec(kind="ToolOutput", cap=30),
                ],
            ),
        ),
        Pipeline(
            KindScorer(),
            QuotaSlice(
                KnapsackSlice(5),
                [QuotaEntry("Document", 20, 50), QuotaEntry("ToolOutput", cap=30)],
            ),
        ),
    ),
    (
        "count-quota",
        Policy(
            scorer=RecencySpec(),
            slicer=CountQuotaSpec(
                entries=[
                    CountQuotaEntrySpec(kind="Document", require_count=2, cap_count=3),
                    CountQuotaEntrySpec(kind="ToolOutput", cap_count=1),
                ],
                scarcity="throw",
            ),
            placer="u-shaped",
        ),
        Pipeline(
            RecencyScorer(),
            CountQuotaSlice(
                GreedySlice(),
                [CountQuotaEntry("Document", 2, 3), CountQuotaEntry("ToolOutput", cap_count=1)],
                ScarcityBehavior.THROW,
            ),
            UShapedPlacer(),
        ),
    ),
    (
        "count-constrained-knapsack",
        Policy(
            scorer=PrioritySpec(),
            slicer=CountConstrainedKnapsackSpec(
                bucket_size=10,
                entries=[CountQuotaEntrySpec(kind="Message", require_count=3, cap_count=5)],
            ),
        ),
        Pipeline(
            PriorityScorer(),
            CountConstrainedKnapsackSlice(
                [CountQuotaEntry("Message", 3, 5)], KnapsackSlice(10), ScarcityBehavior.DEGRADE
            ),
        ),
    ),
    (
        "no-dedup-truncate",
        Policy(
            name="loose",
            description="no deduplication; truncate on overflow",
            scorer=RecencySpec(),
            deduplication=False,
            overflow_strategy="Truncate",
        ),
        Pipeline(
            RecencyScorer(),
            GreedySlice(),
            ChronologicalPlacer(),
            deduplication=False,
            overflow_strategy=OverflowStrategy.TRUNCATE,
        ),
    ),
    (
        "relevance",
        Policy(scorer=RelevanceSpec(query="restart the app", k1=1.5, b=0.5)),
        Pipeline(RelevanceScorer("restart the app", k1=1.5, b=0.5)),
    ),
]
IDS = [case[0] for case in CASES]


@pytest.mark.parametrize(("name", "policy", "expected"), CASES, ids=IDS)
def test_policy_round_trips_through_dict_json_and_toml(
    name: str, policy: Policy, expected: Pipeline
) -> None:
    assert Policy.from_dict(policy.to_dict()) == policy
    assert Policy.from_json(policy.to_json()) == policy
    assert Policy.from_toml(policy.to_toml()) == policy
    # The TOML text is real TOML whose data equals the JSON form (datetimes aside).
    assert json.loads(policy.to_json()) == policy.to_dict()
    parsed = tomli.loads(policy.to_toml())
    assert Policy.from_dict(parsed) == policy


@pytest.mark.parametrize(("name", "policy", "expected"), CASES, ids=IDS)
def test_built_pipeline_selects_like_the_hand_built_one(
    name: str, policy: Policy, expected: Pipeline
) -> None:
    items = workload()
    for budget in (BUDGET, ContextBudget(max_tokens=200, target_tokens=180)):
        assert selection(policy.build(), items, budget) == selection(expected, items, budget)
    built = policy.build()
    assert type(built.slicer) is type(expected.slicer)
    assert type(built.placer) is type(expected.placer)
    assert built.deduplication == expected.deduplication
    assert built.overflow_strategy is expected.overflow_strategy
    assert repr(built) == repr(expected)


def test_every_scorer_and_slicer_type_is_covered_by_the_cases() -> None:
    scorer_types: set[str] = set()
    slicer_types: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "type" in node:
                scorer_types.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for _, policy, _ in CASES:
        data = policy.to_dict()
        walk(data["scorer"])
        slicer_types.add(data["slicer"]["type"])
        walk(data["slicer"])
    expected_scorers = {
        "recency",
        "priority",
        "kind",
        "tag",
        "frequency",
        "reflexive",
        "composite",
        "scaled",
        "metadata_trust",
        "metadata_key",
        "decay",
        "relevance",
    }
    assert expected_scorers <= scorer_types  # custom: see test_policy_registry
    assert slicer_types == {
        "greedy",
        "knapsack",
        "quota",
        "count_quota",
        "count_constrained_knapsack",
    }
    assert {"exponential", "step", "window"} <= scorer_types
    assert {p.placer for _, p, _ in CASES} == {"chronological", "u_shaped"}


def test_save_and_load_choose_the_format_by_suffix(tmp_path: Path) -> None:
    policy = CASES[12][1]
    for suffix in (".json", ".toml", ".TOML"):
        path = tmp_path / f"policy{suffix}"
        policy.save(path)
        assert Policy.load(path) == policy
    assert (tmp_path / "policy.json").read_text().lstrip().startswith("{")
    assert '[scorer]\ntype = "composite"' in (tmp_path / "policy.toml").read_text()
    with pytest.raises(PolicyError, match=r"suffix must be \.json or \.toml, got '\.yaml'"):
        policy.save(tmp_path / "policy.yaml")
    with pytest.raises(PolicyError, match=r"suffix must be \.json or \.toml"):
        Policy.load(tmp_path / "policy.yml")


def test_defaults_and_shorthands() -> None:
    policy = Policy.from_dict({"scorer": "Recency"})
    assert policy == Policy(scorer=RecencySpec())
    assert policy.slicer == GreedySpec()
    assert policy.placer == "chronological"
    assert policy.deduplication is True
    assert policy.overflow_strategy is OverflowStrategy.THROW
    assert policy.to_dict() == {
        "scorer": {"type": "recency"},
        "slicer": {"type": "greedy"},
        "placer": "chronological",
        "deduplication": True,
        "overflow_strategy": "throw",
    }
    spelled = Policy.from_dict(
        {
            "scorer": {"type": "Metadata-Trust"},
            "slicer": "Knapsack",
            "placer": "U-Shaped",
            "overflow_strategy": "PROCEED",
        }
    )
    assert spelled.scorer == MetadataTrustSpec()
    assert spelled.slicer == KnapsackSpec(bucket_size=100)
    assert spelled.placer == "u_shaped"
    assert spelled.overflow_strategy is OverflowStrategy.PROCEED


def test_decay_without_reference_time_reads_the_system_clock() -> None:
    policy = Policy.from_dict(
        {"scorer": {"type": "decay", "curve": {"type": "window", "max_age_secs": 60}}}
    )
    scorer = policy.build().scorer
    assert isinstance(scorer, DecayScorer)
    assert isinstance(scorer.time_provider, SystemTimeProvider)
    assert "reference_time" not in policy.to_dict()["scorer"]
    assert "reference_time" not in policy.to_toml()


def test_naive_reference_time_is_utc_and_toml_keeps_a_native_datetime() -> None:
    policy = Policy.from_dict(
        {
            "scorer": {
                "type": "decay",
                "reference_time": "2025-01-01T12:30:00",
                "curve": {"type": "exponential", "half_life_secs": 60},
            }
        }
    )
    assert isinstance(policy.scorer, DecaySpec)
    assert policy.scorer.reference_time == REF
    assert "reference_time = 2025-01-01T12:30:00+00:00" in policy.to_toml()
    assert policy.to_dict()["scorer"]["reference_time"] == "2025-01-01T12:30:00+00:00"
    scorer = policy.build().scorer
    assert isinstance(scorer, DecayScorer)
    assert scorer.time_provider.now() == REF  # type: ignore[union-attr]


def test_toml_form_is_compact_and_readable() -> None:
    policy = Policy(
        name="support",
        scorer=CompositeSpec(
            scorers=[
                CompositeEntrySpec(weight=3, scorer=RecencySpec()),
                CompositeEntrySpec(weight=1, scorer=KindSpec()),
            ]
        ),
        slicer=QuotaSpec(quotas=[QuotaEntrySpec(kind="Document", require=10, cap=40)]),
    )
    assert policy.to_toml() == (
        'name = "support"\n'
        'placer = "chronological"\n'
        "deduplication = true\n"
        'overflow_strategy = "throw"\n'
        "\n"
        "[scorer]\n"
        'type = "composite"\n'
        "\n"
        "[[scorer.scorers]]\n"
        "weight = 3.0\n"
        'scorer = { type = "recency" }\n'
        "\n"
        "[[scorer.scorers]]\n"
        "weight = 1.0\n"
        'scorer = { type = "kind" }\n'
        "\n"
        "[slicer]\n"
        'type = "quota"\n'
        'inner = { type = "greedy" }\n'
        "\n"
        "[[slicer.quotas]]\n"
        'kind = "Document"\n'
        "require = 10.0\n"
        "cap = 40.0\n"
    )


def test_toml_quotes_keys_and_escapes_strings() -> None:
    policy = Policy(
        description='tab\there "quoted" \\ back\x7f',
        scorer=TagSpec(tag_weights={"cupel:x y": 1.0, "plain": 2.0}),
    )
    text = policy.to_toml()
    assert '"cupel:x y" = 1.0' in text
    assert "plain = 2.0" in text
    assert Policy.from_toml(text) == policy


def test_policies_are_frozen_and_never_mutate_their_input() -> None:
    data = {"scorer": {"type": "Kind", "weights": {"Document": 1}}, "placer": "U-Shaped"}
    snapshot = json.dumps(data, sort_keys=True)
    policy = Policy.from_dict(data)
    assert json.dumps(data, sort_keys=True) == snapshot
    with pytest.raises(Exception, match="frozen"):
        policy.placer = "chronological"  # type: ignore[misc]


def test_each_build_makes_fresh_components() -> None:
    policy = CASES[12][1]
    first, second = policy.build(), policy.build()
    assert first is not second
    assert first.scorer is not second.scorer
    assert repr(first) == repr(second)


# -- property: random policies round-trip and build --------------------------------------
weights = st.floats(min_value=0.01, max_value=50, allow_nan=False, allow_infinity=False)
kinds = st.sampled_from(["Message", "Document", "ToolOutput", "Memory", "SystemPrompt"])
leaf_scorers = st.one_of(
    st.builds(RecencySpec),
    st.builds(PrioritySpec),
    st.builds(FrequencySpec),
    st.builds(ReflexiveSpec),
    st.builds(
        RelevanceSpec,
        query=st.text(max_size=20),
        k1=st.floats(0, 5),
        b=st.floats(0, 1),
    ),
    st.builds(
        KindSpec,
        weights=st.none() | st.dictionaries(kinds, weights, max_size=3),
    ),
    st.builds(
        TagSpec,
        tag_weights=st.dictionaries(st.sampled_from(["chat", "tool", "billing"]), weights),
        case_insensitive=st.booleans(),
    ),
    st.builds(MetadataTrustSpec, default_score=st.floats(0, 1)),
    st.builds(MetadataKeySpec, key=st.just("cupel:priority"), value=st.just("high"), boost=weights),
    st.builds(
        DecaySpec,
        curve=st.one_of(
            st.builds(ExponentialCurveSpec, half_life_secs=weights),
            st.builds(WindowCurveSpec, max_age_secs=weights),
            st.lists(weights, min_size=1, max_size=3, unique=True).map(
                lambda ages: StepCurveSpec(
                    windows=[StepWindowSpec(max_age_secs=a, score=0.5) for a in sorted(set(ages))]
                )
            ),
        ),
        null_timestamp_score=st.floats(0, 1),
        reference_time=st.datetimes(
            min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)
        ).map(lambda d: d.replace(microsecond=0, tzinfo=timezone.utc)),
    ),
)
scorers = st.recursive(
    leaf_scorers,
    lambda children: st.one_of(
        st.builds(ScaledSpec, inner=children),
        st.lists(
            st.builds(CompositeEntrySpec, weight=weights, scorer=children), min_size=1, max_size=3
        ).map(lambda entries: CompositeSpec(scorers=entries)),
    ),
    max_leaves=6,
)
count_entries = st.lists(
    st.builds(
        CountQuotaEntrySpec,
        kind=st.sampled_from(["Message", "Document", "ToolOutput"]),
        require_count=st.integers(0, 2),
        cap_count=st.none() | st.integers(2, 5),
    ),
    max_size=3,
    unique_by=lambda e: e.kind,
)
slicers = st.one_of(
    st.builds(GreedySpec),
    st.builds(KnapsackSpec, bucket_size=st.integers(1, 20)),
    st.builds(
        QuotaSpec,
        inner=st.sampled_from([GreedySpec(), KnapsackSpec(bucket_size=10)]),
        quotas=st.lists(
            st.builds(
                QuotaEntrySpec,
                kind=st.sampled_from(["Message", "Document", "ToolOutput"]),
                require=st.floats(0, 30),
                cap=st.floats(30, 100),
            ),
            max_size=3,
            unique_by=lambda e: e.kind,
        ),
    ),
    st.builds(CountQuotaSpec, entries=count_entries, scarcity=st.just("degrade")),
    st.builds(CountConstrainedKnapsackSpec, bucket_size=st.integers(5, 20), entries=count_entries),
)
policies = st.builds(
    Policy,
    name=st.none() | st.text(max_size=10),
    scorer=scorers,
    slicer=slicers,
    placer=st.sampled_from(["chronological", "u_shaped"]),
    deduplication=st.booleans(),
    overflow_strategy=st.sampled_from(["throw", "truncate", "proceed"]),
)


@settings(max_examples=examples(60), deadline=None)
@given(policies)
def test_random_policies_round_trip_and_select_identically(policy: Policy) -> None:
    assert Policy.from_dict(policy.to_dict()) == policy
    assert Policy.from_json(policy.to_json()) == policy
    assert Policy.from_toml(policy.to_toml()) == policy
    items = workload()
    again = Policy.from_toml(policy.to_toml())
    for budget in (
        ContextBudget(max_tokens=300, target_tokens=250),
        ContextBudget(max_tokens=2000, target_tokens=1500),
    ):
        assert outcome(again.build(), items, budget) == outcome(policy.build(), items, budget)


def outcome(pipeline: Pipeline, items: list, budget: ContextBudget) -> object:
    """The selection, or the error (count quotas can overflow a small target)."""
    try:
        return selection(pipeline, items, budget)
    except OverflowBudgetError as exc:
        return str(exc)


def test_replace_returns_a_validated_copy() -> None:
    base = Policy(scorer=RecencySpec())
    changed = base.replace(placer="U-Shaped", overflow_strategy="Proceed", scorer="priority")
    assert changed.placer == "u_shaped"
    assert changed.overflow_strategy is OverflowStrategy.PROCEED
    assert changed.scorer == PrioritySpec()
    assert base == Policy(scorer=RecencySpec())  # the original is untouched
    with pytest.raises(PolicyError, match=r"^placer: must be 'chronological' or 'u_shaped'"):
        base.replace(placer="left")
    with pytest.raises(PolicyError, match=r"^dedup: unknown key; allowed keys here: name, "):
        base.replace(dedup=False)
