"""Stage 2, Score: one batch over the scoreable items."""

from __future__ import annotations

import numpy as np

from cupel._errors import ScoreError
from cupel._fastpath import FloatArray
from cupel._pipeline.classify import Classified
from cupel.scorers._base import Scorer, batch_scores

__all__ = ["score"]


def score(scorer: Scorer, classified: Classified) -> FloatArray:
    """Every scoreable item's score, as a validated float64 array (input order). The
    built-in scorers read the fields the Classify stage read (``classified.fields``)."""
    scoreable = classified.scoreable
    scores = batch_scores(scorer, scoreable, classified.fields) if scoreable else np.zeros(0)
    if len(scores) != len(scoreable):
        raise ScoreError(
            f"scorer {scorer!r} returned {len(scores)} scores for {len(scoreable)} items",
            scorer=scorer,
        )
    return scores
