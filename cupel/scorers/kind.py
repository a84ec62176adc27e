"""KindScorer: a weight per :class:`~cupel.ContextKind`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from cupel._errors import ItemError, ScorerConfigError
from cupel._model import ContextItem, ContextKind
from cupel._params import NonNegative
from cupel.scorers._base import ArrayScorer, Batches, FloatArray
from cupel.scorers._validation import fail, finite_weight

__all__ = ["KindScorer"]


class KindScorer(ArrayScorer):
    """Score an item by the weight configured for its kind (0.0 for unlisted kinds).

    Kinds match case-insensitively (ASCII folding). Weights must be finite and
    non-negative; they may exceed 1.0 and are returned unclamped. Without ``weights`` the
    spec's default table :attr:`DEFAULT_WEIGHTS` is used.

    >>> from cupel import ContextItem
    >>> scorer = KindScorer({"Document": 2.0, "memory": 0.5})
    >>> [scorer.score(ContextItem(content="x", tokens=1, kind=k), [])
    ...  for k in ("document", "MEMORY", "Message")]
    [2.0, 0.5, 0.0]
    >>> KindScorer().score(ContextItem(content="x", tokens=1, kind="SystemPrompt"), [])
    1.0
    """

    DEFAULT_WEIGHTS: ClassVar[Mapping[ContextKind, float]] = MappingProxyType(
        {
            ContextKind.SYSTEM_PROMPT: 1.0,
            ContextKind.MEMORY: 0.8,
            ContextKind.TOOL_OUTPUT: 0.6,
            ContextKind.DOCUMENT: 0.4,
            ContextKind.MESSAGE: 0.2,
        }
    )

    def __init__(self, weights: Mapping[str | ContextKind, NonNegative] | None = None) -> None:
        source: Any = self.DEFAULT_WEIGHTS if weights is None else weights
        if not isinstance(source, Mapping):
            rule = "must be a mapping of kind to weight"
            raise fail("KindScorer", "weights", rule, weights, typed=True)
        checked: dict[ContextKind, float] = {}
        for raw_kind, raw_weight in source.items():
            try:
                kind = ContextKind(raw_kind)
            except ItemError:
                rule = "keys must be non-empty kind strings"
                raise fail("KindScorer", "weights", rule, raw_kind) from None
            weight = finite_weight("KindScorer", f"weight for kind {str(kind)!r}", raw_weight)
            if kind in checked:
                (seen,) = (k for k in checked if k == kind)
                raise ScorerConfigError(
                    f"KindScorer: weights lists kinds {str(seen)!r} and {str(kind)!r}, "
                    f"which are the same kind (kinds compare case-insensitively)",
                    field="weights",
                    value=dict(source),
                )
            checked[kind] = weight
        self._weights: dict[ContextKind, float] = checked
        self._lookup = {kind.key: weight for kind, weight in checked.items()}

    @property
    def weights(self) -> Mapping[ContextKind, float]:
        """The configured weights (read-only)."""
        return MappingProxyType(self._weights)

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self._lookup.get(item.kind.key, 0.0)

    _fields = ("kind",)

    def _scores_in(self, batches: Batches) -> FloatArray:
        """``score`` for every item: each item's folded kind (``kind.key``) looked up."""
        kinds = batches.column("kind")
        return np.fromiter(
            map(self._lookup.get, map(_KEY, kinds), repeat(0.0)), np.float64, len(kinds)
        )


_KEY = attrgetter("key")
