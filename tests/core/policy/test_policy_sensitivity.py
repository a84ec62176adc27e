"""dry_run_with_policy and policy_sensitivity over real pipelines."""

from __future__ import annotations

import pytest
from policy_testkit import BUDGET, selection, workload

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    Pipeline,
    PriorityScorer,
    RecencyScorer,
    TraceDetailLevel,
)
from cupel.policy import (
    ItemStatus,
    Policy,
    PolicySensitivityDiffEntry,
    PrioritySpec,
    ReflexiveSpec,
    dry_run_with_policy,
    policy_sensitivity,
)
from cupel.presets import preset

PAIR = [
    ContextItem(content="item-a", tokens=40, priority=10, future_relevance_hint=0.1),
    ContextItem(content="item-b", tokens=40, priority=1, future_relevance_hint=0.9),
]
PAIR_BUDGET = ContextBudget(max_tokens=50, target_tokens=40)


def test_dry_run_with_policy_matches_the_built_pipeline() -> None:
    items = workload()
    result = dry_run_with_policy(items, BUDGET, preset("debugging"))
    assert result.report is not None
    assert [i.content for i in result.items] == [e.item.content for e in result.report.included]
    expected = selection(preset("debugging").build(), items, BUDGET)
    got = [
        [(e.item.content, e.score, e.reason) for e in result.report.included],
        sorted((e.item.content, e.reason.name) for e in result.report.excluded),
    ]
    assert got == expected
    by_name = dry_run_with_policy(items, BUDGET, "debugging")
    assert by_name.items == result.items
    assert all(a is b for a, b in zip(by_name.items, result.items, strict=True))


def test_dry_run_with_policy_can_record_item_events() -> None:
    result = dry_run_with_policy(PAIR, PAIR_BUDGET, "chat", detail_level=TraceDetailLevel.ITEM)
    assert result.report is not None
    assert len(result.report.events) > 5


def test_two_variants_swap_the_two_items() -> None:
    report = policy_sensitivity(
        PAIR,
        PAIR_BUDGET,
        [
            ("priority", Policy(scorer=PrioritySpec())),
            ("reflexive", Policy(scorer=ReflexiveSpec())),
        ],
    )
    assert [label for label, _ in report.variants] == ["priority", "reflexive"]
    assert [e.item.content for e in report.variants[0][1].included] == ["item-a"]
    assert [e.item.content for e in report.variants[1][1].included] == ["item-b"]
    assert report.diffs == (
        PolicySensitivityDiffEntry(
            "item-a", (("priority", ItemStatus.INCLUDED), ("reflexive", ItemStatus.EXCLUDED))
        ),
        PolicySensitivityDiffEntry(
            "item-b", (("priority", ItemStatus.EXCLUDED), ("reflexive", ItemStatus.INCLUDED))
        ),
    )
    assert report.diffs[1].status("reflexive") is ItemStatus.INCLUDED
    assert report.report("priority") is report.variants[0][1]
    with pytest.raises(KeyError):
        report.report("missing")


def test_diffs_hold_only_swinging_items_in_first_seen_input_order() -> None:
    items = workload()
    variants = [(name, preset(name)) for name in ("code_review", "rag", "debugging")]
    report = policy_sensitivity(items, BUDGET, variants)
    included = [
        {e.item.content for e in variant_report.included} for _, variant_report in report.variants
    ]
    contents = list(dict.fromkeys(i.content for i in items))
    swinging = [c for c in contents if len({c in chosen for chosen in included}) == 2]
    assert swinging  # the presets disagree on this workload
    assert [d.content for d in report.diffs] == swinging
    for diff in report.diffs:
        assert [label for label, _ in diff.statuses] == ["code_review", "rag", "debugging"]
        for (_, status), chosen in zip(diff.statuses, included, strict=True):
            assert (status is ItemStatus.INCLUDED) == (diff.content in chosen)
    # items every variant agrees on are absent
    always = set.intersection(*included)
    assert always and not always & {d.content for d in report.diffs}
    # deterministic
    assert policy_sensitivity(items, BUDGET, variants).diffs == report.diffs


def test_matching_is_by_content_across_distinct_objects() -> None:
    first = ContextItem(content="same", tokens=10, priority=9, future_relevance_hint=0.0)
    second = ContextItem(content="same", tokens=10, priority=0, future_relevance_hint=1.0)
    other = ContextItem(content="other", tokens=10, priority=5, future_relevance_hint=0.5)
    budget = ContextBudget(max_tokens=10, target_tokens=10)
    report = policy_sensitivity(
        [first, second, other],
        budget,
        [
            ("priority", Policy(scorer=PrioritySpec())),
            ("reflexive", Policy(scorer=ReflexiveSpec())),
        ],
    )
    # each variant keeps a different copy of "same": by content they agree
    assert report.variants[0][1].included[0].item is first
    assert report.variants[1][1].included[0].item is second
    assert report.diffs == ()


def test_pipelines_policies_and_preset_names_mix() -> None:
    count_quota = Pipeline(
        RecencyScorer(),
        CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Document", require_count=3)]),
    )
    report = policy_sensitivity(
        workload(),
        BUDGET,
        [("quota", count_quota), ("plain", Pipeline(RecencyScorer())), ("rag", "rag")],
    )
    assert [label for label, _ in report.variants] == ["quota", "plain", "rag"]
    statuses = {d.content: tuple(s.value[0] for _, s in d.statuses) for d in report.diffs}
    # the count quota forces the three best documents in; plain recency never takes them
    assert statuses["document 0"] == statuses["document 1"] == ("I", "E", "E")
    assert statuses["document 2"] == ("I", "E", "E")
    assert statuses["document 4"] == ("E", "E", "I")  # rag: highest retriever hint
    wire = report.to_dict()
    assert [v["label"] for v in wire["variants"]] == ["quota", "plain", "rag"]
    assert wire["variants"][0]["report"] == report.variants[0][1].to_dict()
    doc0 = next(d for d in wire["diffs"] if d["content"] == "document 0")
    assert doc0["statuses"] == [
        {"label": "quota", "status": "Included"},
        {"label": "plain", "status": "Excluded"},
        {"label": "rag", "status": "Excluded"},
    ]


def test_identical_variants_have_no_diffs() -> None:
    report = policy_sensitivity(PAIR, PAIR_BUDGET, [("x", "chat"), ("y", preset("chat"))])
    assert report.diffs == ()
    assert len(report.variants) == 2


@pytest.mark.parametrize("variants", [[], [("only", "chat")]])
def test_fewer_than_two_variants_is_an_error(variants: list) -> None:
    with pytest.raises(ConfigurationError) as caught:
        policy_sensitivity(PAIR, PAIR_BUDGET, variants)
    assert str(caught.value) == "policy_sensitivity requires at least 2 variants"
    assert caught.value.field == "variants"


def test_bad_variants_are_named() -> None:
    with pytest.raises(ConfigurationError, match=r"variants\[1\] repeats the label 'x'"):
        policy_sensitivity(PAIR, PAIR_BUDGET, [("x", "chat"), ("x", "rag")])
    with pytest.raises(ConfigurationError, match=r"variants\[0\] must be a \(label, policy\) pair"):
        policy_sensitivity(PAIR, PAIR_BUDGET, ["chat", ("x", "rag")])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match=r"variants\[1\] policy: must be a Policy, a Pipe"):
        policy_sensitivity(PAIR, PAIR_BUDGET, [("a", "chat"), ("b", PriorityScorer())])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="variants must be a sequence"):
        policy_sensitivity(PAIR, PAIR_BUDGET, "chat")  # type: ignore[arg-type]


def test_inputs_are_not_mutated() -> None:
    items = workload()
    snapshot = [i.model_dump() for i in items]
    variants = [("a", "chat"), ("b", "rag")]
    policy_sensitivity(items, BUDGET, variants)
    assert [i.model_dump() for i in items] == snapshot
    assert variants == [("a", "chat"), ("b", "rag")]
