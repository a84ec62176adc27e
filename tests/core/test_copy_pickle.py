"""Every pipeline component, Pipeline and Policy survive ``copy.deepcopy`` and ``pickle``
(frameworks copy them: LangChain's ``model_copy(deep=True)``, LlamaIndex's workflow
context, multiprocessing), and the copy selects exactly what the original does."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    ContextItem,
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
    Pipeline,
    PriorityScorer,
    QuotaEntry,
    QuotaSlice,
    RecencyScorer,
    RecencyWindowSlice,
    ReflexiveScorer,
    ScaledScorer,
    StepDecay,
    SystemTimeProvider,
    TagScorer,
    UShapedPlacer,
)
from cupel.policy import Policy
from cupel.presets import PRESET_NAMES, preset

NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)

COMPONENTS: dict[str, Callable[[], Any]] = {
    "KindScorer": KindScorer,
    "KindScorer(custom)": lambda: KindScorer({"Document": 2.0, "memory": 0.5}),
    "TagScorer": lambda: TagScorer({"urgent": 2.0, "Ops": 1.0}, case_insensitive=True),
    "RecencyScorer": RecencyScorer,
    "PriorityScorer": PriorityScorer,
    "ReflexiveScorer": ReflexiveScorer,
    "FrequencyScorer": FrequencyScorer,
    "ScaledScorer": lambda: ScaledScorer(KindScorer()),
    "CompositeScorer": lambda: CompositeScorer([(KindScorer(), 1.0), (TagScorer({"a": 1}), 2.0)]),
    "MetadataTrustScorer": MetadataTrustScorer,
    "MetadataKeyScorer": lambda: MetadataKeyScorer("team", "ops", 1.5),
    "DecayScorer(fixed)": lambda: DecayScorer(
        FixedTimeProvider(NOW), ExponentialDecay(timedelta(hours=1))
    ),
    "DecayScorer(system)": lambda: DecayScorer(
        SystemTimeProvider(), StepDecay([(timedelta(hours=1), 0.9), (timedelta(days=1), 0.2)])
    ),
    "GreedySlice": GreedySlice,
    "KnapsackSlice": lambda: KnapsackSlice(10),
    "KnapsackSlice(auto)": lambda: KnapsackSlice("auto"),
    "QuotaSlice": lambda: QuotaSlice(GreedySlice(), [QuotaEntry("Message", 10, 60)]),
    "CountQuotaSlice": lambda: CountQuotaSlice(GreedySlice(), [CountQuotaEntry("Message", 1, 3)]),
    "CountConstrainedKnapsackSlice": lambda: CountConstrainedKnapsackSlice(
        [CountQuotaEntry("Message", 1, 3)]
    ),
    "RecencyWindowSlice": lambda: RecencyWindowSlice(scored_share=0.25),
    "ChronologicalPlacer": ChronologicalPlacer,
    "UShapedPlacer": UShapedPlacer,
}

COPIES: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda value: pickle.loads(pickle.dumps(value)),
}


def _items() -> list[ContextItem]:
    return [
        ContextItem(
            content=f"item {i}",
            tokens=5 + (i * 7) % 23,
            kind=("Message", "Document", "Memory")[i % 3],
            tags=("urgent",) if i % 4 == 0 else (),
            metadata={"team": "ops" if i % 2 else "dev"},
            priority=i % 5,
            future_relevance_hint=(i % 10) / 10,
            timestamp=NOW - timedelta(minutes=i),
        )
        for i in range(30)
    ]


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("name", COMPONENTS)
def test_component_copies_keep_their_configuration(name: str, how: str) -> None:
    component = COMPONENTS[name]()
    copied = COPIES[how](component)
    assert copied is not component
    assert type(copied) is type(component)
    assert repr(copied) == repr(component)


@pytest.mark.parametrize("how", COPIES)
def test_read_only_weight_views_stay_read_only_after_a_copy(how: str) -> None:
    kind = COPIES[how](KindScorer({"Document": 2.0}))
    tag = COPIES[how](TagScorer({"a": 1.0}))
    with pytest.raises(TypeError):
        kind.weights["Document"] = 0.0  # type: ignore[index]
    with pytest.raises(TypeError):
        tag.tag_weights["a"] = 0.0  # type: ignore[index]
    assert dict(tag.tag_weights) == {"a": 1.0}


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("name", PRESET_NAMES)
def test_preset_pipelines_and_policies_copy_and_select_the_same(name: str, how: str) -> None:
    policy = preset(name)
    copied_policy = COPIES[how](policy)
    assert isinstance(copied_policy, Policy) and copied_policy == policy
    pipeline = policy.build()
    copied = COPIES[how](pipeline)
    assert isinstance(copied, Pipeline)
    if pipeline.needs_query:  # the recall preset: a copy keeps the scorer unbound
        assert copied.needs_query
        pipeline, copied = pipeline.with_query("urgent item 4"), copied.with_query("urgent item 4")
    items = _items()
    budget = ContextBudget(max_tokens=120, target_tokens=120)
    original = pipeline.dry_run(items, budget)
    again = copied.dry_run(items, budget)
    assert [i.content for i in again.items] == [i.content for i in original.items]
    assert original.report is not None and again.report is not None
    assert [e.reason for e in again.report.excluded] == [e.reason for e in original.report.excluded]


@pytest.mark.parametrize("how", COPIES)
def test_a_custom_pipeline_copies(how: str) -> None:
    pipeline = Pipeline(
        CompositeScorer([(TagScorer({"urgent": 3.0}), 2.0), (KindScorer(), 1.0)]),
        QuotaSlice(KnapsackSlice(5), [QuotaEntry("Document", 20, 70)]),
        UShapedPlacer(),
    )
    copied = COPIES[how](pipeline)
    budget = ContextBudget(max_tokens=90, target_tokens=90)
    assert [i.content for i in copied.run(_items(), budget).items] == [
        i.content for i in pipeline.run(_items(), budget).items
    ]
