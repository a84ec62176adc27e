"""DecayScorer, its curves and its time providers."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scorers_testkit import T0, make

from cupel._errors import ScoreError, ScorerConfigError
from cupel.scorers import (
    DecayCurve,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    StepDecay,
    SystemTimeProvider,
    TimeProvider,
    WindowDecay,
)
from cupel.scorers.decay import MAX_DURATION_SECONDS, duration_from_seconds

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
STEPS = StepDecay([(HOUR, 0.9), (24 * HOUR, 0.5), (72 * HOUR, 0.1)])


def decay(curve: DecayCurve, timestamp: datetime | None, **kwargs: Any) -> float:
    item = make(timestamp=timestamp)
    return DecayScorer(FixedTimeProvider(T0), curve, **kwargs).score(item, [item])


class TestSpecOutlines:
    def test_exponential_at_one_half_life_scores_one_half(self) -> None:
        assert decay(ExponentialDecay(DAY), datetime(2024, 12, 31, 12, tzinfo=timezone.utc)) == 0.5

    def test_future_dated_item_scores_like_age_zero(self) -> None:
        assert decay(ExponentialDecay(DAY), datetime(2025, 1, 2, tzinfo=timezone.utc)) == 1.0

    def test_null_timestamp_scores_null_timestamp_score(self) -> None:
        for curve in (ExponentialDecay(DAY), STEPS, WindowDecay(HOUR)):
            assert decay(curve, None) == 0.5
            assert decay(curve, None, null_timestamp_score=0.2) == 0.2

    def test_step_curve_second_window(self) -> None:
        assert decay(STEPS, datetime(2025, 1, 1, 6, tzinfo=timezone.utc)) == 0.5

    def test_window_curve_age_exactly_max_age_scores_zero(self) -> None:
        assert decay(WindowDecay(6 * HOUR), datetime(2025, 1, 1, 6, tzinfo=timezone.utc)) == 0.0


class TestEdgeCases:
    @pytest.mark.parametrize(
        ("curve", "expected"),
        [(ExponentialDecay(DAY), 1.0), (STEPS, 0.9), (WindowDecay(HOUR), 1.0)],
    )
    def test_age_zero(self, curve: DecayCurve, expected: float) -> None:
        assert decay(curve, T0) == expected

    @pytest.mark.parametrize(
        ("hours", "expected"), [(0, 0.9), (1, 0.5), (24, 0.1), (72, 0.1), (500, 0.1)]
    )
    def test_step_boundaries_fall_into_the_older_window(self, hours: int, expected: float) -> None:
        assert decay(STEPS, T0 - hours * HOUR) == expected

    def test_window_is_one_just_inside_the_boundary(self) -> None:
        curve = WindowDecay(6 * HOUR)
        assert decay(curve, T0 - 6 * HOUR + timedelta(microseconds=1)) == 1.0
        assert decay(curve, T0 - 7 * HOUR) == 0.0

    def test_exponential_with_very_large_age_approaches_zero_never_negative(self) -> None:
        score = decay(
            ExponentialDecay(timedelta(seconds=1)), datetime(1, 1, 1, tzinfo=timezone.utc)
        )
        assert score == 0.0 and math.copysign(1.0, score) == 1.0

    def test_exponential_follows_two_to_minus_age_over_half_life(self) -> None:
        assert decay(ExponentialDecay(4 * HOUR), T0 - HOUR) == pytest.approx(
            2 ** (-0.25), abs=1e-15
        )
        assert decay(ExponentialDecay(DAY), T0 - 3 * DAY) == 0.125

    def test_future_dated_item_is_clamped_for_every_curve(self) -> None:
        future = T0 + 1000 * DAY
        assert decay(STEPS, future) == 0.9
        assert decay(WindowDecay(HOUR), future) == 1.0

    def test_all_items_is_ignored(self) -> None:
        scorer = DecayScorer(FixedTimeProvider(T0), ExponentialDecay(DAY))
        item = make(timestamp=T0 - DAY)
        assert scorer.score(item, []) == scorer.score(item, [make(timestamp=T0), item]) == 0.5


class TestCurveConstruction:
    @pytest.mark.parametrize("half_life", [timedelta(0), -HOUR])
    def test_non_positive_half_life_is_rejected(self, half_life: timedelta) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^ExponentialDecay: half_life must be > 0, got"
        ) as info:
            ExponentialDecay(half_life)
        assert info.value.field == "half_life"

    @pytest.mark.parametrize("value", [3600, 1.5, None, "1h"])
    def test_half_life_must_be_a_timedelta(self, value: Any) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^ExponentialDecay: half_life must be a datetime.timedelta, got",
        ):
            ExponentialDecay(value)

    @pytest.mark.parametrize("max_age", [timedelta(0), -HOUR])
    def test_non_positive_max_age_is_rejected(self, max_age: timedelta) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^WindowDecay: max_age must be > 0, got"
        ) as info:
            WindowDecay(max_age)
        assert info.value.field == "max_age"

    def test_max_age_must_be_a_timedelta(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^WindowDecay: max_age must be a datetime.timedelta"
        ):
            WindowDecay(60)  # type: ignore[arg-type]

    def test_empty_windows_are_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^StepDecay: windows must contain at least one \(max_age, score\) entry, "
            r"got \[\]$",
        ) as info:
            StepDecay([])
        assert info.value.field == "windows"

    def test_zero_width_window_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^StepDecay: windows\[0\] max_age must be > 0, got"
        ) as info:
            StepDecay([(timedelta(0), 1.0), (HOUR, 0.5)])
        assert info.value.field == "windows"

    def test_negative_window_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^StepDecay: windows\[0\] max_age must be > 0"
        ):
            StepDecay([(-HOUR, 1.0)])

    @pytest.mark.parametrize("score", [-0.1, 1.5, math.nan, math.inf])
    def test_window_score_outside_unit_interval_is_rejected(self, score: float) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^StepDecay: windows\[1\] score must be a finite number in \[0\.0, 1\.0\], got",
        ):
            StepDecay([(HOUR, 1.0), (DAY, score)])

    def test_window_score_must_be_a_number(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^StepDecay: windows\[0\] score must be a number"
        ):
            StepDecay([(HOUR, "high")])  # type: ignore[list-item]

    @pytest.mark.parametrize("second", [HOUR, timedelta(minutes=30)])
    def test_windows_must_be_strictly_ascending(self, second: timedelta) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^StepDecay: windows must be strictly ascending by max_age: "
            r"windows\[1\] max_age .* is not greater than windows\[0\] max_age 1:00:00$",
        ):
            StepDecay([(HOUR, 0.9), (second, 0.5)])

    @pytest.mark.parametrize("entry", [HOUR, (HOUR,), (HOUR, 0.5, 1)])
    def test_window_must_be_a_pair(self, entry: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^StepDecay: windows\[0\] must be a \(max_age, score\) pair"
        ):
            StepDecay([entry])

    def test_windows_must_be_a_sequence(self) -> None:
        with pytest.raises(ScorerConfigError, match=r"^StepDecay: windows must be a sequence"):
            StepDecay({HOUR: 0.5})  # type: ignore[arg-type]

    def test_windows_are_stored_as_a_tuple(self) -> None:
        windows = [(HOUR, 0.9)]
        curve = StepDecay(windows)
        windows.append((DAY, 0.1))
        assert curve.windows == ((HOUR, 0.9),)

    def test_curves_are_frozen_values(self) -> None:
        curve = ExponentialDecay(DAY)
        with pytest.raises(dataclasses.FrozenInstanceError):
            curve.half_life = HOUR  # type: ignore[misc]
        assert curve == ExponentialDecay(timedelta(hours=24))
        assert hash(STEPS) == hash(StepDecay([(HOUR, 0.9), (24 * HOUR, 0.5), (72 * HOUR, 0.1)]))

    def test_curve_reprs(self) -> None:
        assert repr(WindowDecay(HOUR)) == "WindowDecay(max_age=datetime.timedelta(seconds=3600))"
        assert (
            repr(ExponentialDecay(DAY)) == "ExponentialDecay(half_life=datetime.timedelta(days=1))"
        )


class TestScorerConstruction:
    def test_time_provider_is_required(self) -> None:
        with pytest.raises(TypeError):
            DecayScorer(curve=ExponentialDecay(DAY))  # type: ignore[call-arg]

    @pytest.mark.parametrize("provider", [T0, datetime, SystemTimeProvider])
    def test_datetimes_and_classes_are_rejected_with_a_hint(self, provider: Any) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: time_provider must be a clock object or function, not .*; "
            r"use FixedTimeProvider\(instant\) or SystemTimeProvider\(\)$",
        ):
            DecayScorer(provider, ExponentialDecay(DAY))

    @pytest.mark.parametrize("provider", [None, 42, "now"])
    def test_time_provider_must_be_a_clock(self, provider: Any) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: time_provider must have a now\(\) method or be a zero-argument "
            r"callable returning a datetime, got",
        ) as info:
            DecayScorer(provider, ExponentialDecay(DAY))
        assert info.value.field == "time_provider"

    def test_now_method_needing_arguments_is_rejected(self) -> None:
        class Clock:
            def now(self, tz: timezone) -> datetime:
                return T0

        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: time_provider.now must be callable without arguments",
        ):
            DecayScorer(Clock(), ExponentialDecay(DAY))  # type: ignore[arg-type]

    def test_callable_needing_arguments_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: time_provider must be callable without arguments",
        ):
            DecayScorer(lambda tz: T0, ExponentialDecay(DAY))  # type: ignore[arg-type,misc]

    @pytest.mark.parametrize("curve", [None, "exponential", lambda age: 1.0])
    def test_curve_must_be_a_decay_curve(self, curve: Any) -> None:
        with pytest.raises(ScorerConfigError, match=r"^DecayScorer: curve must be a DecayCurve"):
            DecayScorer(FixedTimeProvider(T0), curve)

    @pytest.mark.parametrize("value", [-0.1, 1.1, math.nan, math.inf])
    def test_null_timestamp_score_outside_unit_interval_is_rejected(self, value: float) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: null_timestamp_score must be a finite number in \[0\.0, 1\.0\]",
        ):
            DecayScorer(FixedTimeProvider(T0), ExponentialDecay(DAY), null_timestamp_score=value)

    def test_null_timestamp_score_must_be_a_number(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"null_timestamp_score must be a number, got bool"
        ):
            DecayScorer(FixedTimeProvider(T0), ExponentialDecay(DAY), null_timestamp_score=True)

    def test_configuration_is_exposed(self) -> None:
        provider = FixedTimeProvider(T0)
        scorer = DecayScorer(provider, STEPS, null_timestamp_score=0.1)
        assert (scorer.time_provider, scorer.curve, scorer.null_timestamp_score) == (
            provider,
            STEPS,
            0.1,
        )

    def test_repr(self) -> None:
        scorer = DecayScorer(FixedTimeProvider(T0), WindowDecay(HOUR))
        assert repr(scorer) == (
            "DecayScorer(FixedTimeProvider(datetime.datetime(2025, 1, 1, 12, 0, "
            "tzinfo=datetime.timezone.utc)), "
            "WindowDecay(max_age=datetime.timedelta(seconds=3600)))"
        )
        other = DecayScorer(FixedTimeProvider(T0), WindowDecay(HOUR), null_timestamp_score=0.25)
        assert repr(other).endswith("seconds=3600)), null_timestamp_score=0.25)")


class TestTimeProviders:
    def test_builtin_providers_satisfy_the_protocol(self) -> None:
        assert isinstance(SystemTimeProvider(), TimeProvider)
        assert isinstance(FixedTimeProvider(T0), TimeProvider)

    def test_system_provider_returns_aware_utc_now(self) -> None:
        before = datetime.now(timezone.utc)
        now = SystemTimeProvider().now()
        assert now.tzinfo is timezone.utc and before <= now <= datetime.now(timezone.utc)

    def test_fixed_provider_treats_naive_instant_as_utc(self) -> None:
        assert FixedTimeProvider(datetime(2025, 1, 1, 12)).now() == T0
        assert FixedTimeProvider(datetime(2025, 1, 1, 12)).instant.tzinfo is timezone.utc

    def test_fixed_provider_requires_a_datetime(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^FixedTimeProvider: instant must be a datetime, got str"
        ):
            FixedTimeProvider("2025-01-01")  # type: ignore[arg-type]

    def test_zero_argument_callable_is_a_provider(self) -> None:
        scorer = DecayScorer(lambda: T0, ExponentialDecay(DAY))
        assert scorer.score(make(timestamp=T0 - DAY), []) == 0.5

    def test_custom_object_with_now_is_a_provider(self) -> None:
        class Clock:
            def now(self) -> datetime:
                return T0

        assert DecayScorer(Clock(), WindowDecay(HOUR)).score(make(timestamp=T0), []) == 1.0

    def test_naive_now_is_taken_as_utc(self) -> None:
        scorer = DecayScorer(lambda: datetime(2025, 1, 1, 12), WindowDecay(HOUR))
        assert scorer.score_all([make(timestamp=T0 - 30 * timedelta(minutes=1))]) == [1.0]

    def test_aware_non_utc_now_keeps_its_instant(self) -> None:
        tokyo = T0.astimezone(timezone(timedelta(hours=9)))
        scorer = DecayScorer(lambda: tokyo, ExponentialDecay(DAY))
        assert scorer.score(make(timestamp=T0 - DAY), []) == 0.5

    def test_provider_returning_a_non_datetime_fails_when_scoring(self) -> None:
        scorer = DecayScorer(lambda: "noon", ExponentialDecay(DAY))  # type: ignore[arg-type,return-value]
        with pytest.raises(
            ScorerConfigError,
            match=r"^DecayScorer: time_provider returned str 'noon', expected a datetime",
        ):
            scorer.score(make(timestamp=T0), [])


class TestReferenceTime:
    @staticmethod
    def ticking_clock() -> tuple[Callable[[], datetime], list[datetime]]:
        reads: list[datetime] = []

        def now() -> datetime:
            instant = T0 + len(reads) * DAY
            reads.append(instant)
            return instant

        return now, reads

    def test_score_all_reads_the_clock_once_per_pass(self) -> None:
        now, reads = self.ticking_clock()
        scorer = DecayScorer(now, ExponentialDecay(DAY))
        items = [make(timestamp=T0) for _ in range(5)] + [make()]
        assert scorer.score_all(items) == [1.0] * 5 + [0.5]
        assert len(reads) == 1
        assert scorer.score_all(items) == [0.5] * 5 + [0.5]
        assert len(reads) == 2

    def test_score_reads_the_clock_per_call(self) -> None:
        now, reads = self.ticking_clock()
        scorer = DecayScorer(now, ExponentialDecay(DAY))
        item = make(timestamp=T0)
        assert [scorer.score(item, [item]) for _ in range(3)] == [1.0, 0.5, 0.25]
        assert len(reads) == 3

    def test_untimestamped_items_do_not_need_the_clock(self) -> None:
        now, reads = self.ticking_clock()
        scorer = DecayScorer(now, ExponentialDecay(DAY), null_timestamp_score=0.0)
        assert scorer.score_all([make(), make()]) == [0.0, 0.0]
        assert scorer.score(make(), []) == 0.0
        assert reads == []


# -- extreme values -------------------------------------------------------------------------

EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
LATEST = datetime.max.replace(tzinfo=timezone.utc)
FAR_ZONES = [timezone(timedelta(hours=14)), timezone(timedelta(hours=-12)), timezone.utc]


class TestExtremes:
    @pytest.mark.parametrize("zone", FAR_ZONES)
    @pytest.mark.parametrize(
        "curve",
        [
            ExponentialDecay(timedelta(microseconds=1)),
            ExponentialDecay(timedelta.max),
            WindowDecay(timedelta.max),
            STEPS,
        ],
        ids=["exp-1us", "exp-max", "window-max", "steps"],
    )
    def test_timestamps_and_clocks_at_the_datetime_limits_score_in_the_unit_interval(
        self, zone: timezone, curve: DecayCurve
    ) -> None:
        items = [make(timestamp=EARLIEST), make(timestamp=LATEST), make(timestamp=None)]
        earliest_local = (EARLIEST + timedelta(days=1)).astimezone(zone)
        for now in (earliest_local, LATEST.replace(tzinfo=None), T0):
            scorer = DecayScorer(FixedTimeProvider(now), curve)
            scores = scorer.score_all(items)
            assert scores == [scorer.score(item, items) for item in items]
            assert all(0.0 <= s <= 1.0 for s in scores)

    def test_recency_and_decay_order_the_extremes_of_the_range(self) -> None:
        from cupel.scorers import RecencyScorer

        items = [make(timestamp=LATEST), make(timestamp=EARLIEST), make(timestamp=T0)]
        assert RecencyScorer().score_all(items) == [1.0, 0.0, 0.5]
        scorer = DecayScorer(FixedTimeProvider(LATEST), WindowDecay(timedelta(days=1)))
        assert scorer.score_all(items) == [1.0, 0.0, 0.0]

    @pytest.mark.parametrize(
        ("owner", "build"),
        [
            (
                "ExponentialDecay",
                lambda s: ExponentialDecay(
                    duration_from_seconds("ExponentialDecay", "half_life", s)
                ),
            ),
            (
                "WindowDecay",
                lambda s: WindowDecay(duration_from_seconds("WindowDecay", "max_age", s)),
            ),
        ],
    )
    @pytest.mark.parametrize("seconds", [1e300, 1e18, math.inf, math.nan, -1.0, 0, 1e-9])
    def test_durations_from_seconds_are_checked_not_overflowing(
        self, owner: str, build: Callable[[float], DecayCurve], seconds: float
    ) -> None:
        with pytest.raises(ScorerConfigError, match=rf"^{owner}: ") as info:
            build(seconds)
        assert info.value.field in ("half_life", "max_age")

    def test_the_longest_duration_is_accepted(self) -> None:
        assert duration_from_seconds("E", "half_life", MAX_DURATION_SECONDS) == timedelta.max
        assert duration_from_seconds("E", "half_life", 1e-6) == timedelta(microseconds=1)

    def test_a_custom_curve_returning_a_non_score_is_a_score_error(self) -> None:
        class Broken(DecayCurve):
            def apply(self, age: timedelta) -> float:
                return None  # type: ignore[return-value]

        scorer = DecayScorer(FixedTimeProvider(T0), Broken())
        item = make(timestamp=T0)
        with pytest.raises(ScoreError, match=r"returned NoneType None for item"):
            scorer.score_all([item])


# -- the step curve against the spec's STEP-CURVE ------------------------------------------------


def spec_step_curve(age: timedelta, windows: tuple[tuple[timedelta, float], ...]) -> float:
    """STEP-CURVE, literally: the first window whose max_age > age, else the last one's."""
    for max_age, score in windows:
        if max_age > age:
            return score
    return windows[-1][1]


@given(
    st.lists(st.integers(1, 200), min_size=1, max_size=12, unique=True),
    st.lists(st.integers(0, 220), min_size=1, max_size=20),
)
def test_step_bisection_agrees_with_the_spec_walk(bounds: list[int], ages: list[int]) -> None:
    windows = tuple((timedelta(minutes=b), round(b / 200, 3)) for b in sorted(bounds))
    curve = StepDecay(windows)
    for minutes in ages + sorted(bounds):  # every boundary exactly, too
        age = timedelta(minutes=minutes)
        assert curve.apply(age) == spec_step_curve(age, windows)
