"""Stage 3, Deduplicate: of byte-identical contents, keep the first best-scored copy."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from cupel._fastpath import FloatArray
from cupel._pipeline.classify import Classified
from cupel._pipeline.values import CONTENT, as_list

__all__ = ["CONTENT_FIELD", "Survivors", "deduplicate"]

CONTENT_FIELD = "content"


class Survivors(NamedTuple):
    """``positions``: the surviving scoreable positions in input order, or ``None`` when
    every item survives. When some do not, ``kept`` maps each content to the position
    of its surviving copy, and ``contents`` / ``values`` are every item's content and
    score (what the report needs to name the removed copies)."""

    positions: list[int] | None
    kept: dict[str, int]
    contents: list[str]
    values: list[Any]


_ALL = Survivors(None, {}, [], [])


def deduplicate(classified: Classified, scores: FloatArray | list[Any], enabled: bool) -> Survivors:
    """The survivors (all of them when deduplication is off or the contents are
    distinct). The scoreable items' contents are the Classify stage's
    (``classified.fields``), read now when it has not read them."""
    if not enabled or not classified.scoreable:
        return _ALL
    contents = classified.fields.get(CONTENT_FIELD)
    if contents is None:
        contents = list(map(CONTENT, classified.scoreable))
    if _distinct(contents):
        return _ALL
    values = as_list(scores)
    best: dict[str, int] = {}
    for i, content in enumerate(contents):
        kept = best.get(content)
        if kept is None or values[i] > values[kept]:
            best[content] = i
    survivors = [i for i, content in enumerate(contents) if best[content] == i]
    return Survivors(survivors, best, contents, values)


def _distinct(contents: list[str]) -> bool:
    """Whether the contents are pairwise distinct: their sorted hashes are (cheaper than a
    set of large strings), or else (equal contents or a collision) the set decides."""
    hashes = np.fromiter(map(hash, contents), dtype=np.int64, count=len(contents))
    hashes.sort()
    return not (hashes[1:] == hashes[:-1]).any() or len(set(contents)) == len(contents)
