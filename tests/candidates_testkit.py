"""A scored list as the Slice stage's :class:`~cupel.slicers._base.Candidates` (the columns
a slicer's array route reads), for the tests that check that route against the per-item
definitions (tests/core/perf, tests/core/slicers)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cupel import ScoredItem
from cupel._fastpath import columns
from cupel.slicers._base import Candidates


def candidates_of(scored: Sequence[ScoredItem]) -> Candidates | None:
    """``scored`` as :class:`Candidates` in their order, or ``None`` when the values may
    not live in arrays (:func:`cupel._fastpath.columns`: a score that is not a ``float``
    or is NaN, a negative token count, a huge total)."""
    items = [entry.item for entry in scored]
    found = columns([entry.score for entry in scored], [item.tokens for item in items])
    if found is None:
        return None
    return Candidates(items, np.arange(len(items), dtype=np.intp), found.tokens, found.scores)
