"""Declarative policies: a whole pipeline configuration as data (JSON, TOML or Python).

A :class:`Policy` names a scorer, a slicer, a placer, deduplication and the overflow
strategy. It can express **every** built-in scorer (nested composites and scaled scorers
included) and every slicer (quota and count-quota slicers included), plus custom scorers
registered with :func:`register_scorer`. Policies are validated when they are created or
loaded — the components are built eagerly — and every error names the path of the
offending value::

    scorer.scorers[2].weight: must be > 0, got -1

A component's table is its constructor's parameters, read from the signature (so a new
parameter is a policy key at once): ``{"type": "knapsack", "bucket_size": 50}`` is
``KnapsackSlice(bucket_size=50)``. The ``type`` is the class name without its family
suffix in snake case; a ``timedelta`` parameter ``x`` is written ``x_secs`` (seconds), a
clock as ``reference_time``, a composite's ``(scorer, weight)`` entries as ``scorers =
[{weight, scorer}]``, and an inner slicer defaults to greedy.

>>> policy = Policy.from_dict({
...     "scorer": {"type": "composite", "scorers": [
...         {"weight": 3, "scorer": {"type": "recency"}},
...         {"weight": 1, "scorer": "kind"}]},
...     "slicer": {"type": "knapsack", "bucket_size": 50},
...     "placer": "u-shaped"})
>>> policy.placer, policy.slicer
('u_shaped', KnapsackSpec(type='knapsack', bucket_size=50, max_cells=None))
>>> Policy.from_toml(policy.to_toml()) == policy
True
>>> pipeline = policy.build()
>>> pipeline.slicer, pipeline.placer
(KnapsackSlice(bucket_size=50), UShapedPlacer())
>>> Policy.from_dict({"scorer": {"type": "composite", "scorers": [
...     {"weight": -1, "scorer": "kind"}]}})
Traceback (most recent call last):
...
cupel.PolicyError: scorer.scorers[0].weight: must be > 0, got -1
"""

from cupel._errors import PolicyError
from cupel._public import publish
from cupel.policy import _specs
from cupel.policy._base import MAX_POLICY_DEPTH
from cupel.policy._custom import (
    CustomScorerSpec,
    ScorerFactory,
    register_scorer,
    registered_scorers,
    unregister_scorer,
)
from cupel.policy._policy import Policy
from cupel.policy._resolve import check_policy, resolve_pipeline
from cupel.policy._sensitivity import (
    ItemStatus,
    PolicySensitivityDiffEntry,
    PolicySensitivityReport,
    dry_run_with_policy,
    policy_sensitivity,
)
from cupel.policy._specs import *  # noqa: F403 (the tables, listed once: _specs.__all__)

__all__ = [
    "MAX_POLICY_DEPTH",
    "CustomScorerSpec",
    "ItemStatus",
    "Policy",
    "PolicyError",
    "PolicySensitivityDiffEntry",
    "PolicySensitivityReport",
    "ScorerFactory",
    "check_policy",
    "dry_run_with_policy",
    "policy_sensitivity",
    "register_scorer",
    "registered_scorers",
    "resolve_pipeline",
    "unregister_scorer",
]
__all__ += _specs.__all__

publish(__name__, globals(), __all__)
