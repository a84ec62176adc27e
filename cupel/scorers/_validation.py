"""Construction-time parameter checks shared by the scorers (private)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence, Sized
from typing import Any

from cupel._errors import ScorerConfigError
from cupel._model import ContextItem

__all__ = [
    "check_batch",
    "fail",
    "finite_in_unit_interval",
    "is_real",
    "number",
    "require_scorer",
]


def fail(owner: str, field: str, rule: str, value: Any) -> ScorerConfigError:
    """Build the standard error: ``"<owner>: <field> <rule>, got <value!r>"``."""
    return ScorerConfigError(f"{owner}: {field} {rule}, got {value!r}", field=field, value=value)


def is_real(value: object) -> bool:
    """A real number, but not a ``bool``."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(owner: str, field: str, value: Any) -> float:
    """``value`` as a float; ``bool`` and non-real values are rejected."""
    if not is_real(value):
        raise ScorerConfigError(
            f"{owner}: {field} must be a number, got {type(value).__name__} {value!r}",
            field=field,
            value=value,
        )
    try:
        return float(value)
    except OverflowError:  # an int (or Fraction) beyond the float range
        return math.inf if value > 0 else -math.inf


def finite_in_unit_interval(owner: str, field: str, value: Any) -> float:
    """``value`` as a float, which must be finite and within [0.0, 1.0]."""
    result = number(owner, field, value)
    if not (math.isfinite(result) and 0.0 <= result <= 1.0):
        raise fail(owner, field, "must be a finite number in [0.0, 1.0]", value)
    return result


def require_scorer(owner: str, field: str, scorer: Any) -> None:
    """Reject ``None`` and objects without a callable ``score(item, all_items)``."""
    if scorer is None:
        raise ScorerConfigError(f"{owner}: {field} must not be None", field=field, value=None)
    if not callable(getattr(scorer, "score", None)):
        raise ScorerConfigError(
            f"{owner}: {field} must have a callable score(item, all_items) method, "
            f"got {type(scorer).__name__} {scorer!r}",
            field=field,
            value=scorer,
        )


def check_batch(owner: str, scorer: object, batch: Sized, items: Sequence[ContextItem]) -> None:
    """A child's ``score_all`` must return one score per item."""
    if len(batch) != len(items):
        raise ScorerConfigError(
            f"{owner}: {type(scorer).__name__}.score_all returned {len(batch)} scores "
            f"for {len(items)} items",
            field="score_all",
            value=scorer,
        )
