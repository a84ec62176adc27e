"""Stage 3, Deduplicate: of byte-identical contents, keep the first best-scored copy."""

from __future__ import annotations

from typing import Any, NamedTuple

from cupel._fastpath import FloatArray
from cupel._model import ContextItem
from cupel._pipeline.values import CONTENT, as_list

__all__ = ["Survivors", "deduplicate"]


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


def deduplicate(
    scoreable: list[ContextItem], scores: FloatArray | list[Any], enabled: bool
) -> Survivors:
    """The survivors (all of them when deduplication is off or the contents are
    distinct: as many distinct contents as items)."""
    if not enabled or not scoreable:
        return _ALL
    contents = list(map(CONTENT, scoreable))
    if len(set(contents)) == len(contents):
        return _ALL
    values = as_list(scores)
    best: dict[str, int] = {}
    for i, content in enumerate(contents):
        kept = best.get(content)
        if kept is None or values[i] > values[kept]:
            best[content] = i
    survivors = [i for i, content in enumerate(contents) if best[content] == i]
    return Survivors(survivors, best, contents, values)
