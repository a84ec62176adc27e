"""The six-stage pipeline: Classify → Score → Deduplicate → Sort → Slice → Place.

One module per stage, each a function from the previous stages' results to its own
(``classify``, ``score``, ``deduplicate``, ``sort``, ``slice``, ``place``); selection
never reads the trace collector. ``report`` builds the report around the same stage
functions for traced runs, and ``pipeline`` holds :class:`Pipeline`, whose run reads
as the six calls.

>>> from cupel import (ContextItem, ContextBudget, Pipeline, CompositeScorer,
...                    RecencyScorer, KindScorer, GreedySlice, ChronologicalPlacer)
>>> pipeline = Pipeline(CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
...                     GreedySlice(), ChronologicalPlacer())
>>> items = [ContextItem(content="You are terse.", tokens=4, pinned=True, kind="SystemPrompt"),
...          ContextItem(content="old question", tokens=40),
...          ContextItem(content="new question", tokens=40)]
>>> result = pipeline.run(items, ContextBudget(max_tokens=60, target_tokens=50))
>>> [i.content for i in result.items], result.total_tokens
(['You are terse.', 'old question'], 44)
"""

from cupel._pipeline.pipeline import ContextResult, Pipeline, set_policy_resolver
from cupel._pipeline.slice import effective_budget

__all__ = ["ContextResult", "Pipeline", "effective_budget", "set_policy_resolver"]
