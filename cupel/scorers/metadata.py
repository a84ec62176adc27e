"""Metadata scorers: MetadataTrustScorer (``metadata["cupel:trust"]``) and
MetadataKeyScorer (a multiplier for items whose metadata key holds a given value)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from cupel._model import ContextItem
from cupel._params import Positive, UnitInterval
from cupel.scorers._base import BaseScorer
from cupel.scorers._validation import fail, finite_in_unit_interval, finite_weight, is_real

__all__ = ["MetadataKeyScorer", "MetadataTrustScorer"]

# A decimal float literal, nothing around it: optional sign, digits with an optional
# fraction (or a bare fraction), optional exponent; or a NaN / infinity spelling.
_FLOAT_LITERAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)


def _parse_trust(raw: Any) -> float | None:
    """The trust value held by ``raw``, or ``None`` when it is unparseable.

    Strings must be a strict decimal float literal (no whitespace, no ``_``); ``int`` and
    ``float`` values are used directly; ``bool`` and every other type are unparseable.
    Non-finite values are returned as they are (the scorer treats them as unparseable).

    >>> [_parse_trust(v) for v in ("0.85", "1e-1", " 0.5", "1_0", True, 2)]
    [0.85, 0.1, None, None, None, 2.0]
    """
    if isinstance(raw, str):
        return float(raw) if _FLOAT_LITERAL.fullmatch(raw) else None
    if not is_real(raw):
        return None
    try:
        return float(raw)
    except OverflowError:  # a huge int: finite, so it clamps to a bound
        return 1.0 if raw > 0 else 0.0


class MetadataTrustScorer(BaseScorer):
    """Pass ``metadata["cupel:trust"]`` through, clamped to [0.0, 1.0].

    The value may be a decimal string (``"0.85"``) or an ``int``/``float``. A missing key,
    an unparseable value (``"high"``, ``" 0.5"``, ``"1_0"``, ``True``, ``None``, ...) or a
    non-finite one (``"NaN"``, ``"inf"``) scores ``default_score`` (finite, in [0, 1]).

    >>> from cupel import ContextItem
    >>> scorer = MetadataTrustScorer(default_score=0.4)
    >>> [scorer.score(ContextItem(content="x", tokens=1, metadata=m), [])
    ...  for m in ({"cupel:trust": "0.85"}, {"cupel:trust": 1.5}, {"cupel:trust": "high"}, {})]
    [0.85, 1.0, 0.4, 0.4]
    """

    KEY: ClassVar[str] = "cupel:trust"
    """The metadata key read."""

    def __init__(self, default_score: UnitInterval = 0.5) -> None:
        self._default = finite_in_unit_interval(
            "MetadataTrustScorer", "default_score", default_score
        )

    @property
    def default_score(self) -> float:
        """The score of items without a usable trust value."""
        return self._default

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        if self.KEY not in item.metadata:
            return self._default
        value = _parse_trust(item.metadata[self.KEY])
        if value is None or not math.isfinite(value):
            return self._default
        return min(max(value, 0.0), 1.0)


class MetadataKeyScorer(BaseScorer):
    """``boost`` when ``metadata[key] == value``, else the neutral multiplier 1.0.

    The match is exact, ordinal string equality. Only ``str`` metadata values can match:
    a non-string value (``1``, ``True``, ``None``, a list, ...) never equals ``value`` and
    scores 1.0 — no conversion to text is done. ``boost`` must be finite and > 0; the
    result is not clamped. In a :class:`~cupel.scorers.CompositeScorer` the returned
    multiplier is an ordinary value of the weighted average.

    >>> from cupel import ContextItem
    >>> scorer = MetadataKeyScorer("cupel:priority", "high", 1.5)
    >>> [scorer.score(ContextItem(content="x", tokens=1, metadata=m), [])
    ...  for m in ({"cupel:priority": "high"}, {"cupel:priority": "High"}, {})]
    [1.5, 1.0, 1.0]
    """

    def __init__(self, key: str, value: str, boost: Positive) -> None:
        if not isinstance(key, str):
            raise fail("MetadataKeyScorer", "key", "must be a string", key)
        if not isinstance(value, str):
            raise fail("MetadataKeyScorer", "value", "must be a string", value)
        self._boost = finite_weight("MetadataKeyScorer", "boost", boost, positive=True)
        self._key = str(key)
        self._value = str(value)

    @property
    def key(self) -> str:
        """The metadata key inspected."""
        return self._key

    @property
    def value(self) -> str:
        """The value that earns the boost."""
        return self._value

    @property
    def boost(self) -> float:
        """The multiplier returned for matching items."""
        return self._boost

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        raw = item.metadata.get(self._key)
        return self._boost if isinstance(raw, str) and str.__eq__(raw, self._value) else 1.0
