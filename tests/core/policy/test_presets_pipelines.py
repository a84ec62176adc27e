"""Each preset builds exactly the pipeline the issue specifies."""

from __future__ import annotations

import pytest
from policy_testkit import BUDGET, selection, workload

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    FrequencyScorer,
    GreedySlice,
    KindScorer,
    KnapsackSlice,
    OverflowStrategy,
    Pipeline,
    PriorityScorer,
    RecencyScorer,
    RecencyWindowSlice,
    ReflexiveScorer,
    RelevanceScorer,
    UShapedPlacer,
)
from cupel import presets as presets_module
from cupel.policy import Policy, PolicyError
from cupel.presets import PRESET_NAMES, preset

WINDOW = RecencyWindowSlice(partial_blocks=True)
# name -> ([(scorer class, raw weight)], slicer (None: greedy, int/"auto": knapsack bucket),
# placer)
SPEC: dict[str, tuple[list[tuple[type, int]], object, type]] = {
    "chat": ([(RecencyScorer, 3), (KindScorer, 1)], WINDOW, ChronologicalPlacer),
    "code_review": (
        [(KindScorer, 2), (PriorityScorer, 2), (RecencyScorer, 1)],
        None,
        ChronologicalPlacer,
    ),
    "rag": ([(ReflexiveScorer, 3), (KindScorer, 1)], None, UShapedPlacer),
    "document_qa": (
        [(KindScorer, 2), (ReflexiveScorer, 2), (PriorityScorer, 1)],
        "auto",
        UShapedPlacer,
    ),
    "tool_use": (
        [(KindScorer, 2), (RecencyScorer, 2), (PriorityScorer, 1)],
        WINDOW,
        ChronologicalPlacer,
    ),
    "long_running": (
        [(FrequencyScorer, 2), (KindScorer, 1), (PriorityScorer, 1)],
        RecencyWindowSlice(scored_share=0.25, partial_blocks=True),
        ChronologicalPlacer,
    ),
    "recall": (
        [(RelevanceScorer, 1)],
        RecencyWindowSlice(scored_share=0.5, partial_blocks=True),
        ChronologicalPlacer,
    ),
    "debugging": (
        [(PriorityScorer, 3), (KindScorer, 2), (RecencyScorer, 1)],
        None,
        ChronologicalPlacer,
    ),
}


def test_there_are_exactly_the_eight_presets_in_order() -> None:
    assert PRESET_NAMES == (
        "chat",
        "code_review",
        "rag",
        "document_qa",
        "tool_use",
        "long_running",
        "recall",
        "debugging",
    )


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_preset_builds_the_specified_pipeline(name: str) -> None:
    entries, bucket, placer = SPEC[name]
    pipeline = Pipeline.from_policy(name)
    scorer = pipeline.scorer
    assert isinstance(scorer, CompositeScorer)
    total = sum(weight for _, weight in entries)
    assert [type(child) for child, _ in scorer.entries] == [cls for cls, _ in entries]
    assert [w for _, w in scorer.entries] == pytest.approx([w / total for _, w in entries])
    for child, _ in scorer.entries:
        if isinstance(child, KindScorer):
            assert child.weights == KindScorer.DEFAULT_WEIGHTS
    if bucket is None:
        assert type(pipeline.slicer) is GreedySlice
    elif isinstance(bucket, RecencyWindowSlice):
        assert pipeline.slicer == bucket
    else:
        assert isinstance(pipeline.slicer, KnapsackSlice)
        assert pipeline.slicer.bucket_size == bucket
    assert type(pipeline.placer) is placer
    # history presets keep every turn (dropping a repeated "ok" would open a hole)
    assert pipeline.deduplication is not isinstance(bucket, RecencyWindowSlice)
    assert pipeline.overflow_strategy is OverflowStrategy.THROW


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_preset_function_lookup_and_from_policy_agree(name: str) -> None:
    function = getattr(presets_module, name)
    policy = function()
    assert isinstance(policy, Policy)
    assert policy == preset(name)
    assert policy.name == name
    assert policy.description
    assert function.__doc__ and "Use it" in function.__doc__
    items = workload()
    by_name = selection(Pipeline.from_policy(name), items, BUDGET)
    assert by_name == selection(Pipeline.from_policy(policy), items, BUDGET)
    assert by_name == selection(policy.build(), items, BUDGET)
    assert Policy.from_toml(policy.to_toml()) == policy


def test_preset_names_are_case_insensitive_and_accept_hyphens() -> None:
    assert preset("Code-Review") == preset("code_review") == preset("CODE REVIEW")
    assert preset(" rag ") == preset("rag")


def test_unknown_preset_lists_the_eight() -> None:
    message = (
        "unknown preset 'summary'; presets: chat, code_review, rag, document_qa, tool_use, "
        "long_running, recall, debugging"
    )
    with pytest.raises(PolicyError) as caught:
        preset("summary")
    assert str(caught.value) == message
    assert caught.value.field == "preset"
    with pytest.raises(PolicyError, match="unknown preset 'summary'"):
        Pipeline.from_policy("summary")


def test_presets_return_fresh_equal_policies() -> None:
    assert preset("chat") is not preset("chat")
    assert preset("chat") == preset("chat")


def test_presets_select_differently_on_the_same_items() -> None:
    items = workload()
    windows = {
        name: [e[0] for e in selection(Pipeline.from_policy(name), items, BUDGET)[0]]
        for name in PRESET_NAMES
    }
    assert len({tuple(w) for w in windows.values()}) >= 4
    # rag favours the retriever's hints: its window holds the highest-hint document
    assert "document 4" in windows["rag"] or "document 3" in windows["rag"]


def test_from_policy_rejects_other_types() -> None:
    from cupel import ConfigurationError

    message = r"Pipeline\.from_policy\.policy: must be a Policy or a preset name"
    with pytest.raises(ConfigurationError, match=message):
        Pipeline.from_policy(42)  # type: ignore[arg-type]
