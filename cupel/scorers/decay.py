"""DecayScorer: score by an item's age against an injected clock, through a decay curve.

Curves map a non-negative age to a score in [0, 1]: :class:`ExponentialDecay` (half-life),
:class:`StepDecay` (age brackets) and :class:`WindowDecay` (fresh / stale). Clocks are
:class:`TimeProvider` objects (anything with ``now() -> datetime``) such as
:class:`SystemTimeProvider` and :class:`FixedTimeProvider`, or zero-argument callables.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from operator import itemgetter
from typing import Annotated, Any, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from cupel._errors import ScorerConfigError
from cupel._model import ContextItem
from cupel._params import Named, UnitInterval
from cupel.scorers._base import ArrayScorer, Batches, FloatArray, as_score
from cupel.scorers._validation import fail, finite_in_unit_interval, number

__all__ = [
    "DecayCurve",
    "DecayScorer",
    "ExponentialDecay",
    "FixedTimeProvider",
    "StepDecay",
    "SystemTimeProvider",
    "TimeProvider",
    "WindowDecay",
    "as_utc",
    "duration_from_seconds",
]

_ZERO = timedelta(0)

StepWindow = tuple[Annotated[timedelta, Named("max_age")], Annotated[UnitInterval, Named("score")]]
"""One step of a :class:`StepDecay`: ``(max_age, score)``."""


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are UTC; aware ones keep their instant."""
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    return value


@runtime_checkable
class TimeProvider(Protocol):
    """A clock: ``now()`` returns the current instant (naive values are taken as UTC)."""

    def now(self) -> datetime:
        """The current instant."""
        ...


class SystemTimeProvider:
    """The system clock, in UTC.

    >>> SystemTimeProvider().now().tzinfo
    datetime.timezone.utc
    """

    def now(self) -> datetime:
        """``datetime.now(timezone.utc)``."""
        return datetime.now(timezone.utc)

    def __repr__(self) -> str:
        return "SystemTimeProvider()"


class FixedTimeProvider:
    """A clock stopped at ``instant`` (naive instants are taken as UTC); for tests and
    reproducible runs.

    >>> FixedTimeProvider(datetime(2025, 1, 1, 12)).now().isoformat()
    '2025-01-01T12:00:00+00:00'
    """

    def __init__(self, instant: datetime) -> None:
        if not isinstance(instant, datetime):
            raise fail("FixedTimeProvider", "instant", "must be a datetime", instant, typed=True)
        self._instant = as_utc(instant)

    @property
    def instant(self) -> datetime:
        """The fixed instant (timezone-aware)."""
        return self._instant

    def now(self) -> datetime:
        """The fixed instant."""
        return self._instant

    def __repr__(self) -> str:
        return f"FixedTimeProvider({self._instant!r})"


MAX_DURATION_SECONDS = timedelta.max.total_seconds()
"""The longest duration a curve can hold, in seconds (``datetime.timedelta.max``, about
2.7 million years)."""


def duration_from_seconds(owner: str, field: str, seconds: Any) -> timedelta:
    """``seconds`` as a ``timedelta`` for a curve parameter: a finite number > 0 and at
    most :data:`MAX_DURATION_SECONDS`, else :class:`~cupel.ScorerConfigError` (where
    ``timedelta(seconds=...)`` itself would raise a bare ``OverflowError``).

    >>> duration_from_seconds("ExponentialDecay", "half_life", 90)
    datetime.timedelta(seconds=90)
    >>> duration_from_seconds("ExponentialDecay", "half_life", 1e300)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ScorerConfigError: ExponentialDecay: half_life must be a finite number \
of seconds > 0 and <= 86400000000000.0 (datetime.timedelta.max), got 1e+300
    """
    value = number(owner, field, seconds)
    if not (math.isfinite(value) and 0.0 < value <= MAX_DURATION_SECONDS):
        rule = (
            f"must be a finite number of seconds > 0 and <= {MAX_DURATION_SECONDS} "
            f"(datetime.timedelta.max)"
        )
        raise fail(owner, field, rule, seconds)
    try:
        result = timedelta(seconds=value)
    except OverflowError:  # rounding at the very top of the range
        result = timedelta.max
    if result <= _ZERO:  # below one microsecond
        raise fail(owner, field, "must be at least one microsecond (1e-06 seconds)", seconds)
    return result


def _positive_duration(owner: str, field: str, value: Any) -> timedelta:
    if not isinstance(value, timedelta):
        raise fail(owner, field, "must be a datetime.timedelta", value, typed=True)
    if value <= _ZERO:
        raise fail(owner, field, "must be > 0", value)
    return value


class DecayCurve(ABC):
    """A decay curve: :meth:`apply` maps an age (>= 0) to a score in [0.0, 1.0]."""

    @abstractmethod
    def apply(self, age: timedelta) -> float:
        """The score of an item of age ``age`` (never negative)."""


@dataclass(frozen=True)
class ExponentialDecay(DecayCurve):
    """``2 ** (-age / half_life)``: 1.0 at age zero, 0.5 at one half-life.

    >>> ExponentialDecay(timedelta(hours=24)).apply(timedelta(hours=48))
    0.25
    """

    half_life: timedelta

    def __post_init__(self) -> None:
        _positive_duration("ExponentialDecay", "half_life", self.half_life)

    def apply(self, age: timedelta) -> float:
        return float(2.0 ** (-age.total_seconds() / self.half_life.total_seconds()))


@dataclass(frozen=True)
class StepDecay(DecayCurve):
    """The score of the first window whose ``max_age`` is strictly greater than the age
    (found by bisection); the last window's score once the age reaches every boundary.

    ``windows`` is a non-empty sequence of ``(max_age, score)`` pairs, strictly ascending
    by ``max_age`` (> 0), each score finite and in [0.0, 1.0].

    >>> curve = StepDecay([(timedelta(hours=1), 0.9), (timedelta(hours=24), 0.5)])
    >>> [curve.apply(timedelta(hours=h)) for h in (0, 1, 6, 24, 100)]
    [0.9, 0.5, 0.5, 0.5, 0.5]
    """

    windows: Annotated[Sequence[StepWindow], Field(min_length=1)]

    def __post_init__(self) -> None:
        raw = self.windows
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise fail("StepDecay", "windows", "must be a sequence of (max_age, score) pairs", raw)
        if len(raw) == 0:
            rule = "must contain at least one (max_age, score) entry"
            raise fail("StepDecay", "windows", rule, raw)
        checked: list[tuple[timedelta, float]] = []
        for index, entry in enumerate(raw):
            where = f"windows[{index}]"
            pair: Any = entry
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise ScorerConfigError(
                    f"StepDecay: {where} must be a (max_age, score) pair, got {pair!r}",
                    field="windows",
                    value=raw,
                )
            max_age, score = pair
            try:
                _positive_duration("StepDecay", f"{where} max_age", max_age)
                value = finite_in_unit_interval("StepDecay", f"{where} score", score)
            except ScorerConfigError as exc:
                raise ScorerConfigError(str(exc), field="windows", value=raw) from None
            if checked and max_age <= checked[-1][0]:
                raise ScorerConfigError(
                    f"StepDecay: windows must be strictly ascending by max_age: {where} max_age "
                    f"{max_age} is not greater than windows[{index - 1}] max_age {checked[-1][0]}",
                    field="windows",
                    value=raw,
                )
            checked.append((max_age, value))
        object.__setattr__(self, "windows", tuple(checked))

    def apply(self, age: timedelta) -> float:
        """Bisection over the ascending boundaries: O(log windows)."""
        windows = self.windows
        index = bisect_right(windows, age, key=itemgetter(0))  # the first max_age > age
        return windows[min(index, len(windows) - 1)][1]


@dataclass(frozen=True)
class WindowDecay(DecayCurve):
    """1.0 while ``age < max_age``, then 0.0 (the window is half-open: ``[0, max_age)``).

    >>> curve = WindowDecay(timedelta(hours=6))
    >>> curve.apply(timedelta(hours=5)), curve.apply(timedelta(hours=6))
    (1.0, 0.0)
    """

    max_age: timedelta

    def __post_init__(self) -> None:
        _positive_duration("WindowDecay", "max_age", self.max_age)

    def apply(self, age: timedelta) -> float:
        return 1.0 if age < self.max_age else 0.0


def _clock(provider: Any) -> Callable[[], Any]:
    """The zero-argument function that reads ``provider``'s time."""
    if isinstance(provider, (date, type)):
        # A datetime instance or class has a now() too, returning naive local time.
        raise ScorerConfigError(
            f"DecayScorer: time_provider must be a clock object or function, not "
            f"{provider!r}; use FixedTimeProvider(instant) or SystemTimeProvider()",
            field="time_provider",
            value=provider,
        )
    function: Callable[[], Any]
    method = getattr(provider, "now", None)
    if callable(method):
        function, what = method, "time_provider.now"
    elif callable(provider):
        function, what = provider, "time_provider"
    else:
        rule = "must have a now() method or be a zero-argument callable returning a datetime"
        raise fail("DecayScorer", "time_provider", rule, provider, typed=True)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no introspectable signature: trust it
        return function
    try:
        signature.bind()
    except TypeError:
        raise ScorerConfigError(
            f"DecayScorer: {what} must be callable without arguments, got {provider!r}",
            field="time_provider",
            value=provider,
        ) from None
    return function


class DecayScorer(ArrayScorer):
    """Score by age: ``curve.apply(max(0, now - item.timestamp))``.

    ``time_provider`` is required (there is no implicit clock): a :class:`TimeProvider`
    (``SystemTimeProvider()``, ``FixedTimeProvider(instant)``, ...) or a zero-argument
    callable returning a datetime; naive datetimes are taken as UTC. Future-dated items
    have age zero. Items without a timestamp score ``null_timestamp_score`` (finite, in
    [0, 1]). ``score`` reads the clock on each call; ``score_all`` reads it once per pass,
    so all items of a pass share one reference time.

    >>> from datetime import datetime, timedelta, timezone
    >>> from cupel import ContextItem
    >>> now = datetime(2025, 1, 1, 12, tzinfo=timezone.utc)
    >>> scorer = DecayScorer(FixedTimeProvider(now), ExponentialDecay(timedelta(hours=24)))
    >>> items = [ContextItem(content="day-old", tokens=1, timestamp=now - timedelta(days=1)),
    ...          ContextItem(content="future", tokens=1, timestamp=now + timedelta(hours=1)),
    ...          ContextItem(content="undated", tokens=1)]
    >>> scorer.score_all(items)
    [0.5, 1.0, 0.5]
    """

    def __init__(
        self,
        time_provider: TimeProvider | Callable[[], datetime],
        curve: DecayCurve,
        *,
        null_timestamp_score: UnitInterval = 0.5,
    ) -> None:
        self._clock = _clock(time_provider)
        if not isinstance(curve, DecayCurve):
            rule = "must be a DecayCurve (ExponentialDecay, StepDecay or WindowDecay)"
            raise fail("DecayScorer", "curve", rule, curve, typed=True)
        self._provider = time_provider
        self._curve = curve
        self._null_score = finite_in_unit_interval(
            "DecayScorer", "null_timestamp_score", null_timestamp_score
        )

    @property
    def time_provider(self) -> TimeProvider | Callable[[], datetime]:
        """The injected clock."""
        return self._provider

    @property
    def curve(self) -> DecayCurve:
        """The decay curve."""
        return self._curve

    @property
    def null_timestamp_score(self) -> float:
        """The score of items without a timestamp."""
        return self._null_score

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime):
            raise ScorerConfigError(
                f"DecayScorer: time_provider returned {type(now).__name__} {now!r}, "
                f"expected a datetime",
                field="time_provider",
                value=self._provider,
            )
        return as_utc(now)

    def _score_at(self, item: ContextItem, now: datetime) -> float:
        if item.timestamp is None:
            return self._null_score
        return as_score(self._curve.apply(max(_ZERO, now - item.timestamp)), self._curve, item)

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self._null_score if item.timestamp is None else self._score_at(item, self._now())

    def _scores_in(self, batches: Batches) -> FloatArray:
        """``score`` for every item, with the clock read once for the whole pass."""
        items = batches.items
        if all(item.timestamp is None for item in items):
            return np.full(len(items), self._null_score)
        now = self._now()
        return np.fromiter(
            (self._score_at(item, now) for item in items), dtype=np.float64, count=len(items)
        )
