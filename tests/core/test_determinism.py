"""Output is identical across runs and across PYTHONHASHSEED values."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, random
    from datetime import datetime, timedelta, timezone
    from cupel import (ContextItem, ContextBudget, Pipeline, CompositeScorer, RecencyScorer,
                       KindScorer, TagScorer, FrequencyScorer, QuotaSlice, QuotaEntry, GreedySlice,
                       CountQuotaSlice, CountQuotaEntry, UShapedPlacer, ChronologicalPlacer)
    rng = random.Random(7)
    t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    kinds = ["Message", "message", "Document", "ToolOutput", "memory", "Scratch"]
    items = [ContextItem(content=f"item {rng.randint(0, 150)}", tokens=rng.randint(0, 90),
                         kind=rng.choice(kinds),
                         tags=tuple(rng.sample("abcdeFG", rng.randint(0, 3))),
                         timestamp=t0 + timedelta(minutes=rng.randint(0, 40)))
             for _ in range(300)]
    budget = ContextBudget(max_tokens=4000, target_tokens=3000)
    scorer = CompositeScorer([(RecencyScorer(), 2.0), (KindScorer(), 1.0),
                              (TagScorer({"a": 1.0, "b": 0.5}), 1.0), (FrequencyScorer(), 1.0)])
    out = {}
    for name, slicer, placer in [
        ("quota", QuotaSlice(GreedySlice(), [QuotaEntry("Document", require=30.0, cap=50.0)]),
         UShapedPlacer()),
        ("count", CountQuotaSlice(GreedySlice(), [CountQuotaEntry("memory", require_count=3,
                                                                  cap_count=5)]),
         ChronologicalPlacer()),
    ]:
        result = Pipeline(scorer, slicer, placer).dry_run(items, budget)
        out[name] = {"window": [i.content for i in result.items],
                     "report": result.report.to_dict()}
        for event in out[name]["report"]["events"]:
            event.pop("duration_ms")
    print(json.dumps(out, sort_keys=True))
    """
)


def run_with_seed(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.slow
def test_identical_across_hash_seeds() -> None:
    outputs = {run_with_seed(seed) for seed in ("0", "1", "12345", "random")}
    assert len(outputs) == 1
    assert '"window"' in next(iter(outputs))
