"""MetadataTrustScorer and MetadataKeyScorer."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from scorers_testkit import make

from cupel._errors import ScorerConfigError
from cupel._model import ContextKind
from cupel.scorers import MetadataKeyScorer, MetadataTrustScorer


def trust(value: Any, default: float = 0.5) -> float:
    item = make(metadata={"cupel:trust": value})
    return MetadataTrustScorer(default_score=default).score(item, [item])


class TestMetadataTrustScorer:
    def test_absent_key_scores_the_default(self) -> None:
        item = make(metadata={"other": "0.9"})
        assert MetadataTrustScorer(default_score=0.3).score(item, []) == 0.3

    def test_default_score_defaults_to_one_half(self) -> None:
        assert MetadataTrustScorer().score(make(), []) == 0.5
        assert MetadataTrustScorer().default_score == 0.5

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [("0.0", 0.0), ("0.75", 0.75), ("1.0", 1.0), ("-0.1", 0.0), ("1.5", 1.0), ("0.85", 0.85)],
    )
    def test_spec_decimal_strings(self, raw: str, expected: float) -> None:
        assert trust(raw) == expected

    @pytest.mark.parametrize("raw", ["high", "", "NaN", "nan", "+Infinity", "-Infinity", "inf"])
    def test_unparseable_or_non_finite_strings_score_the_default(self, raw: str) -> None:
        assert trust(raw, default=0.25) == 0.25

    def test_overflowing_literal_is_non_finite(self) -> None:
        assert trust("1e400", default=0.25) == 0.25

    @pytest.mark.parametrize(
        "raw", [" 0.5", "0.5 ", "\t0.5", "0.5\n", "0_5", "1_000", "0x1p-1", "١", "0.5f", "1e", "."]
    )
    def test_parsing_is_strict(self, raw: str) -> None:
        assert trust(raw, default=0.25) == 0.25

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [(".5", 0.5), ("5.", 1.0), ("+0.5", 0.5), ("5e-1", 0.5), ("1E0", 1.0), ("-0", 0.0)],
    )
    def test_decimal_literal_forms_are_accepted(self, raw: str, expected: float) -> None:
        assert trust(raw) == expected

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            (0.85, 0.85),
            (1, 1.0),
            (0, 0.0),
            (-2, 0.0),
            (1.5, 1.0),
            (10**400, 1.0),
            (-(10**400), 0.0),
            (Fraction(1, 4), 0.25),
        ],
    )
    def test_numbers_are_used_directly(self, raw: Any, expected: float) -> None:
        assert trust(raw) == expected

    @pytest.mark.parametrize("raw", [math.nan, math.inf, -math.inf])
    def test_non_finite_numbers_score_the_default(self, raw: float) -> None:
        assert trust(raw, default=0.25) == 0.25

    @pytest.mark.parametrize("raw", [True, False, None, [0.5], {"v": 0.5}, b"0.5"])
    def test_other_types_score_the_default(self, raw: Any) -> None:
        assert trust(raw, default=0.25) == 0.25

    @pytest.mark.parametrize("default", [-0.1, 1.1, math.nan, math.inf])
    def test_default_score_outside_unit_interval_is_rejected(self, default: float) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^MetadataTrustScorer: default_score must be a finite number "
            r"in \[0\.0, 1\.0\], got",
        ) as info:
            MetadataTrustScorer(default_score=default)
        assert info.value.field == "default_score"

    @pytest.mark.parametrize("default", [True, "0.5", None])
    def test_non_number_default_score_is_rejected(self, default: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataTrustScorer: default_score must be a number, got"
        ):
            MetadataTrustScorer(default_score=default)

    def test_bounds_are_valid_defaults(self) -> None:
        assert MetadataTrustScorer(0).default_score == 0.0
        assert MetadataTrustScorer(1).default_score == 1.0

    def test_repr(self) -> None:
        assert repr(MetadataTrustScorer(0.25)) == "MetadataTrustScorer(default_score=0.25)"


def key_score(metadata: dict[str, Any], value: str = "high", boost: float = 1.5) -> float:
    item = make(metadata=metadata)
    return MetadataKeyScorer("cupel:priority", value, boost).score(item, [item])


class TestMetadataKeyScorer:
    def test_matching_value_returns_the_boost(self) -> None:
        assert key_score({"cupel:priority": "high"}) == 1.5

    def test_other_value_returns_neutral_multiplier(self) -> None:
        assert key_score({"cupel:priority": "normal"}) == 1.0

    def test_missing_key_returns_neutral_multiplier(self) -> None:
        assert key_score({"other": "high"}, boost=3.0) == 1.0

    def test_match_is_exact_and_case_sensitive(self) -> None:
        assert key_score({"cupel:priority": "High"}) == 1.0
        assert key_score({"cupel:priority": "high "}) == 1.0

    @pytest.mark.parametrize("raw", [1, 1.0, True, None, ["high"]])
    def test_non_string_values_never_match(self, raw: Any) -> None:
        item = make(metadata={"k": raw})
        for value in ("1", "1.0", "True", "None", "['high']"):
            assert MetadataKeyScorer("k", value, 2.0).score(item, []) == 1.0

    def test_string_subclass_values_compare_ordinally(self) -> None:
        # ContextKind's own == folds case; the scorer must not use it.
        assert ContextKind("HIGH") == "high"
        assert key_score({"cupel:priority": ContextKind("HIGH")}) == 1.0
        assert key_score({"cupel:priority": ContextKind("high")}) == 1.5

    def test_boost_below_one_dampens_and_is_not_clamped(self) -> None:
        assert key_score({"cupel:priority": "high"}, boost=0.25) == 0.25
        assert key_score({"cupel:priority": "high"}, boost=40) == 40.0

    @pytest.mark.parametrize("boost", [0.0, 0, -1.0, -math.inf])
    def test_non_positive_boost_is_rejected(self, boost: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataKeyScorer: boost must be > 0, got"
        ) as info:
            MetadataKeyScorer("cupel:priority", "high", boost)
        assert info.value.field == "boost"

    @pytest.mark.parametrize("boost", [math.nan, math.inf])
    def test_non_finite_boost_is_rejected(self, boost: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataKeyScorer: boost must be finite, got"
        ):
            MetadataKeyScorer("cupel:priority", "high", boost)

    @pytest.mark.parametrize("boost", [True, "1.5", None])
    def test_non_number_boost_is_rejected(self, boost: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataKeyScorer: boost must be a number, got"
        ):
            MetadataKeyScorer("cupel:priority", "high", boost)

    def test_non_string_key_or_value_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataKeyScorer: key must be a string, got 1$"
        ):
            MetadataKeyScorer(1, "high", 1.5)  # type: ignore[arg-type]
        with pytest.raises(
            ScorerConfigError, match=r"^MetadataKeyScorer: value must be a string, got 2$"
        ):
            MetadataKeyScorer("k", 2, 1.5)  # type: ignore[arg-type]

    def test_configuration_is_exposed(self) -> None:
        scorer = MetadataKeyScorer("cupel:priority", "high", 2)
        assert (scorer.key, scorer.value, scorer.boost) == ("cupel:priority", "high", 2.0)

    def test_repr(self) -> None:
        assert (
            repr(MetadataKeyScorer("cupel:priority", "high", 1.5))
            == "MetadataKeyScorer('cupel:priority', 'high', 1.5)"
        )
