"""Slicers choose which scored items fit the token budget.

=============================  ==========================  ==================  =====================
slicer                         algorithm                   complexity          use case
=============================  ==========================  ==================  =====================
GreedySlice                    greedy fill by density      O(N log N)          fast, good enough
KnapsackSlice                  0/1 knapsack DP             O(N x C)            tight budgets
QuotaSlice                     % budget per kind + inner   O(N + inner)        fairness across kinds
CountQuotaSlice                count require/cap + inner   O(N log N + inner)  item counts per kind
CountConstrainedKnapsackSlice  count require/cap + DP      O(N log N + N x C)  counts, best packing
RecencyWindowSlice             newest first, no holes      O(N log N)          chat/agent history
=============================  ==========================  ==================  =====================

N is the number of scored items, C the knapsack capacity ``target_tokens // bucket_size``;
density is ``score / tokens``. :class:`RecencyWindowSlice` is a cupel extension of the
specification (its vectors live in ``conformance/extensions/``): it keeps the newest items
that fit, contiguously, taking blocks such as chat turns whole.
Every slicer returns a subset of its input (the same objects), selects nothing for empty
input or ``target_tokens <= 0``, and is deterministic. ``slice_detailed`` additionally
reports items removed by a count cap and unmet count requirements.
"""

from cupel._public import publish
from cupel.diagnostics._outcomes import (
    BucketRounding,
    CapExclusion,
    CountRequirementShortfall,
    SliceOutcome,
)
from cupel.slicers._base import BaseSlicer, Slicer, slice_detailed
from cupel.slicers.count_constrained_knapsack import CountConstrainedKnapsackSlice
from cupel.slicers.count_quota import CountQuotaEntry, CountQuotaSlice, ScarcityBehavior
from cupel.slicers.greedy import GreedySlice
from cupel.slicers.knapsack import KnapsackSlice
from cupel.slicers.quota import QuotaEntry, QuotaSlice
from cupel.slicers.recency_window import RecencyWindowSlice

__all__ = [
    "BaseSlicer",
    "BucketRounding",
    "CapExclusion",
    "CountConstrainedKnapsackSlice",
    "CountQuotaEntry",
    "CountQuotaSlice",
    "CountRequirementShortfall",
    "GreedySlice",
    "KnapsackSlice",
    "QuotaEntry",
    "QuotaSlice",
    "RecencyWindowSlice",
    "ScarcityBehavior",
    "SliceOutcome",
    "Slicer",
    "slice_detailed",
]

publish(__name__, globals(), __all__)
