"""Custom scorers registered by name are built when a policy is loaded."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from policy_testkit import BUDGET, selection, workload

from cupel import BaseScorer, CompositeScorer, ConfigurationError, ContextItem, Pipeline
from cupel.policy import (
    Policy,
    PolicyError,
    register_scorer,
    registered_scorers,
    unregister_scorer,
)


class LengthScorer(BaseScorer):
    """Prefers short items: ``1 / (1 + tokens / scale)``."""

    def __init__(self, scale: float = 10.0) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.scale = scale

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return 1.0 / (1.0 + max(item.tokens, 0) / self.scale)

    def __repr__(self) -> str:
        return f"LengthScorer(scale={self.scale})"


@pytest.fixture
def registered() -> Iterator[list[dict[str, float]]]:
    calls: list[dict[str, float]] = []

    def factory(**params: float) -> LengthScorer:
        calls.append(dict(params))
        return LengthScorer(**params)

    register_scorer("length", factory)
    try:
        yield calls
    finally:
        unregister_scorer("length")


def test_registered_factory_builds_the_scorer_with_its_params(
    registered: list[dict[str, float]],
) -> None:
    policy = Policy.from_json(
        '{"scorer": {"type": "composite", "scorers": ['
        '{"weight": 2, "scorer": {"type": "custom", "name": "length", "params": {"scale": 40}}},'
        '{"weight": 1, "scorer": "recency"}]}}'
    )
    assert registered == [{"scale": 40}]  # built once at load time
    pipeline = policy.build()
    assert registered == [{"scale": 40}, {"scale": 40}]
    scorer = pipeline.scorer
    assert isinstance(scorer, CompositeScorer)
    length = scorer.entries[0][0]
    assert isinstance(length, LengthScorer)
    assert length.scale == 40
    from cupel import RecencyScorer

    hand_built = Pipeline(CompositeScorer([(LengthScorer(40), 2), (RecencyScorer(), 1)]))
    items = workload()
    assert selection(pipeline, items, BUDGET) == selection(hand_built, items, BUDGET)


def test_custom_specs_round_trip_through_toml(registered: list[dict[str, float]]) -> None:
    policy = Policy.from_dict(
        {"scorer": {"type": "custom", "name": "length", "params": {"scale": 12.5}}}
    )
    assert "[scorer.params]\nscale = 12.5" in policy.to_toml()
    assert Policy.from_toml(policy.to_toml()) == policy
    assert Policy.from_json(policy.to_json()) == policy


def test_params_toml_cannot_write_are_named_by_path() -> None:
    register_scorer("tolerant", lambda **params: LengthScorer())
    try:
        policy = Policy.from_dict(
            {
                "scorer": {
                    "type": "scaled",
                    "inner": {
                        "type": "custom",
                        "name": "tolerant",
                        "params": {"limits": {"low": None, "high": [1, 2]}},
                    },
                }
            }
        )
        assert Policy.from_json(policy.to_json()) == policy  # JSON has null
        with pytest.raises(PolicyError) as caught:
            policy.to_toml()
    finally:
        unregister_scorer("tolerant")
    assert str(caught.value) == (
        "scorer.inner.params['limits']['low']: NoneType None cannot be written as TOML "
        "(TOML has no null; leave the key out)"
    )
    assert caught.value.field == "scorer.inner.params['limits']['low']"


def test_unknown_custom_name_lists_the_registered_ones(
    registered: list[dict[str, float]],
) -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict({"scorer": {"type": "custom", "name": "lenght"}})
    assert str(caught.value) == "scorer.name: unknown custom scorer 'lenght' (registered: 'length')"
    assert caught.value.field == "scorer.name"


def test_unknown_custom_name_with_an_empty_registry_says_how_to_register() -> None:
    with pytest.raises(
        PolicyError, match=r"none are registered; use cupel\.policy\.register_scorer"
    ):
        Policy.from_dict({"scorer": {"type": "custom", "name": "length"}})


def test_factory_errors_name_the_params_path(registered: list[dict[str, float]]) -> None:
    with pytest.raises(PolicyError) as caught:
        Policy.from_dict(
            {
                "scorer": {
                    "type": "scaled",
                    "inner": {"type": "custom", "name": "length", "params": {"scale": -1}},
                }
            }
        )
    assert str(caught.value) == (
        "scorer.inner.params: custom scorer 'length' could not be built from params "
        "{'scale': -1}: ValueError: scale must be > 0, got -1"
    )
    with pytest.raises(PolicyError, match=r"TypeError: .*unexpected keyword argument 'size'"):
        Policy.from_dict({"scorer": {"type": "custom", "name": "length", "params": {"size": 1}}})


def test_factory_must_return_a_scorer() -> None:
    register_scorer("broken", lambda: "not a scorer")
    try:
        with pytest.raises(PolicyError, match=r"^scorer\.name: the factory of custom scorer "):
            Policy.from_dict({"scorer": {"type": "custom", "name": "broken"}})
    finally:
        unregister_scorer("broken")


def test_registration_rules() -> None:
    register_scorer("tmp", LengthScorer)
    try:
        assert "tmp" in registered_scorers()
        with pytest.raises(ConfigurationError, match="already registered; pass replace=True"):
            register_scorer("tmp", LengthScorer)
        register_scorer("tmp", lambda: LengthScorer(2.0), replace=True)
        built = Policy.from_dict({"scorer": {"type": "custom", "name": "tmp"}}).build().scorer
        assert isinstance(built, LengthScorer) and built.scale == 2.0
    finally:
        unregister_scorer("tmp")
    assert "tmp" not in registered_scorers()
    with pytest.raises(ConfigurationError, match="no custom scorer named 'tmp'"):
        unregister_scorer("tmp")
    with pytest.raises(ConfigurationError, match="name must be a non-empty string"):
        register_scorer(" ", LengthScorer)
    with pytest.raises(ConfigurationError, match="factory must be callable"):
        register_scorer("x", 3)  # type: ignore[arg-type]


def test_a_policy_loaded_earlier_fails_to_build_after_unregistering() -> None:
    register_scorer("ephemeral", LengthScorer)
    policy = Policy.from_dict({"scorer": {"type": "custom", "name": "ephemeral"}})
    unregister_scorer("ephemeral")
    with pytest.raises(PolicyError, match=r"^scorer\.name: unknown custom scorer 'ephemeral'"):
        policy.build()
