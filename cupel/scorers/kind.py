"""KindScorer: a weight per :class:`~cupel.ContextKind`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from cupel._errors import ItemError, ScorerConfigError
from cupel._fastpath import field_column
from cupel._model import ContextItem, ContextKind
from cupel._params import NonNegative
from cupel.scorers._base import ArrayScorer, FloatArray, object_ids
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
            raise ScorerConfigError(
                f"KindScorer: weights must be a mapping of kind to weight, "
                f"got {type(weights).__name__} {weights!r}",
                field="weights",
                value=weights,
            )
        checked: dict[ContextKind, float] = {}
        for raw_kind, raw_weight in source.items():
            try:
                kind = ContextKind(raw_kind)
            except ItemError:
                raise fail(
                    "KindScorer", "weights", "keys must be non-empty kind strings", raw_kind
                ) from None
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
        # A plain dict (picklable); the property hands out a read-only view.
        self._weights: dict[ContextKind, float] = checked
        self._lookup = {kind.key: weight for kind, weight in checked.items()}

    @property
    def weights(self) -> Mapping[ContextKind, float]:
        """The configured weights (read-only)."""
        return MappingProxyType(self._weights)

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self._lookup.get(item.kind.key, 0.0)

    _fields = ("kind",)

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray:
        """``score`` for every item, by the identity of its kind object. Kinds are
        interned, so a pass holds a few distinct kind objects: each one's weight is looked
        up once, by its folded ``key``, and written to the positions holding that object
        (one vectorised comparison of the items' kind ids, :func:`object_ids`, per
        distinct kind). Past :data:`_FEW_KINDS` distinct objects, the rest go through a
        dict of ids."""
        kinds = field_column(items, "kind")
        n = len(kinds)
        ids = object_ids(np.fromiter(kinds, dtype=object, count=n))
        result = np.zeros(n)
        lookup = self._lookup
        left = np.ones(n, dtype=np.bool_)
        for _ in range(_FEW_KINDS if n else 0):
            position = int(left.argmax())
            if not left[position]:
                return result
            same = ids == ids[position]
            np.putmask(result, same, lookup.get(kinds[position].key, 0.0))
            left &= ~same
        rest = np.flatnonzero(left).tolist()
        if rest:
            table = {id(kind): lookup.get(kind.key, 0.0) for kind in map(kinds.__getitem__, rest)}
            result[rest] = np.fromiter(map(table.__getitem__, ids[rest].tolist()), np.float64)
        return result


_FEW_KINDS = 16
"""Distinct kind objects a :class:`KindScorer` pass handles one vectorised step each."""
