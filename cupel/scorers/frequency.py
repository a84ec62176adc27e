"""FrequencyScorer: the share of an item's peers that share a tag with it."""

from __future__ import annotations

from collections.abc import Sequence

from cupel._model import ContextItem, ascii_fold
from cupel.scorers._base import BaseScorer

__all__ = ["FrequencyScorer"]


class FrequencyScorer(BaseScorer):
    """``peers sharing at least one tag / (len(all_items) - 1)``.

    Tags compare case-insensitively (ASCII folding). The scored item is skipped by
    identity (every position holding that very object), never by equality, while the
    denominator stays ``len(all_items) - 1``. Tagless items score 0.0 and never count as
    peers; a pass of one item scores 0.0.

    ``score_all`` indexes each folded tag as a bitset of item positions (a Python
    ``int``); an item's peers are the OR of its tags' bitsets minus its own positions, so
    a pass costs a few big-int ORs and one popcount per item instead of N^2 tag
    comparisons.

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=c, tokens=1, tags=t)
    ...          for c, t in (("a", ("db",)), ("b", ("DB", "ops")), ("c", ("ops",)), ("d", ()))]
    >>> FrequencyScorer().score_all(items)
    [0.3333333333333333, 0.6666666666666666, 0.3333333333333333, 0.0]
    """

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if not item.tags or len(all_items) <= 1:
            return 0.0
        own = {ascii_fold(tag) for tag in item.tags}
        matching = 0
        for other in all_items:
            if other is item or not other.tags:
                continue
            if any(ascii_fold(tag) in own for tag in other.tags):
                matching += 1
        return matching / (len(all_items) - 1)

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        n = len(items)
        if n <= 1:
            return [0.0] * n
        folded = [{ascii_fold(tag) for tag in item.tags} for item in items]
        index: dict[str, int] = {}
        for position, tags in enumerate(folded):
            bit = 1 << position
            for tag in tags:
                index[tag] = index.get(tag, 0) | bit
        # An object listed more than once is skipped at all of its positions (identity).
        repeated: dict[int, int] = {}
        seen: set[int] = set()
        for item in items:
            if id(item) in seen:
                repeated[id(item)] = 0
            seen.add(id(item))
        if repeated:
            for position, item in enumerate(items):
                if id(item) in repeated:
                    repeated[id(item)] |= 1 << position
        denominator = n - 1
        result: list[float] = []
        for position, (item, tags) in enumerate(zip(items, folded, strict=True)):
            if not tags:
                result.append(0.0)
                continue
            peers = 0
            for tag in tags:
                peers |= index[tag]
            peers &= ~repeated.get(id(item), 1 << position)
            result.append(peers.bit_count() / denominator)
        return result

    def __repr__(self) -> str:
        return "FrequencyScorer()"
