"""The relevance scorer in policies: TOML and JSON round trips (bound and unbound), the
pipeline built, binding a query after the build, and errors that name the field."""

from __future__ import annotations

import pytest

from cupel import (
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    Pipeline,
    PolicyError,
    RelevanceScorer,
)
from cupel.policy import Policy, RelevanceSpec

RECALL = """
[scorer]
type = "composite"

[[scorer.scorers]]
weight = 3
scorer = { type = "relevance", k1 = 1.5 }

[[scorer.scorers]]
weight = 1
scorer = "recency"
"""

ITEMS = [
    ContextItem(content="the invoice number is 4711", tokens=10),
    ContextItem(content="see you tomorrow", tokens=10),
]
BUDGET = ContextBudget(max_tokens=10, target_tokens=10)


def test_an_unbound_relevance_policy_round_trips_and_binds_after_the_build() -> None:
    policy = Policy.from_toml(RECALL)
    assert Policy.from_toml(policy.to_toml()) == policy
    assert Policy.from_json(policy.to_json()) == policy
    pipeline = Pipeline.from_policy(policy)
    assert isinstance(pipeline.scorer, CompositeScorer) and pipeline.needs_query
    relevance = pipeline.scorer.children()[0]
    assert isinstance(relevance, RelevanceScorer)
    assert (relevance.query, relevance.k1, relevance.b) == (None, 1.5, 0.75)
    with pytest.raises(ConfigurationError, match="without a query"):
        pipeline.run(ITEMS, BUDGET)
    window = pipeline.with_query("what was the invoice number?").run(ITEMS, BUDGET).items
    assert [item.content for item in window] == ["the invoice number is 4711"]


def test_a_bound_relevance_policy_round_trips() -> None:
    data = {"scorer": {"type": "relevance", "query": "invoice", "b": 0.0, "k1": 2}}
    policy = Policy.from_dict(data)
    assert policy.scorer == RelevanceSpec(query="invoice", k1=2.0, b=0.0)
    assert Policy.from_toml(policy.to_toml()) == policy
    assert Policy.from_json(policy.to_json()) == policy
    built = policy.build()
    assert not built.needs_query
    assert repr(built.scorer) == "RelevanceScorer('invoice', k1=2.0, b=0.0)"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"k1": -1}, "scorer.k1: must be >= 0"),
        ({"k1": float("inf")}, "scorer.k1"),
        ({"b": 2}, "scorer.b: must be <= 1"),
        ({"b": "0.5"}, "scorer.b"),
        ({"query": 3}, "scorer.query"),
        ({"query": "bad \udc00"}, "scorer.query: query must be valid Unicode"),
        ({"querry": "x"}, "scorer.querry: unknown key"),
    ],
)
def test_policy_errors_name_the_field(table: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy.from_dict({"scorer": {"type": "relevance", **table}})
