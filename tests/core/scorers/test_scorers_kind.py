"""KindScorer: weight lookup by case-insensitive kind."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scorers_testkit import make

from cupel._errors import ScorerConfigError
from cupel._model import ContextKind
from cupel.scorers import KindScorer


def kind_score(scorer: KindScorer, kind: str) -> float:
    item = make(kind=kind)
    return scorer.score(item, [item])


class TestDefaultWeights:
    @pytest.mark.parametrize(
        ("kind", "weight"),
        [
            ("SystemPrompt", 1.0),
            ("Memory", 0.8),
            ("ToolOutput", 0.6),
            ("Document", 0.4),
            ("Message", 0.2),
        ],
    )
    def test_well_known_kinds_get_the_spec_defaults(self, kind: str, weight: float) -> None:
        assert kind_score(KindScorer(), kind) == weight

    def test_default_table_holds_exactly_the_five_well_known_kinds(self) -> None:
        assert {str(k): w for k, w in KindScorer.DEFAULT_WEIGHTS.items()} == {
            "SystemPrompt": 1.0,
            "Memory": 0.8,
            "ToolOutput": 0.6,
            "Document": 0.4,
            "Message": 0.2,
        }
        assert KindScorer().weights == KindScorer.DEFAULT_WEIGHTS

    def test_default_table_is_read_only(self) -> None:
        with pytest.raises(TypeError):
            KindScorer.DEFAULT_WEIGHTS[ContextKind("Custom")] = 1.0  # type: ignore[index]

    def test_unknown_kind_scores_zero(self) -> None:
        assert kind_score(KindScorer(), "Scratchpad") == 0.0


class TestLookup:
    @pytest.mark.parametrize("spelling", ["systemprompt", "SYSTEMPROMPT", "sYsTeMpRoMpT"])
    def test_item_kind_matches_case_insensitively(self, spelling: str) -> None:
        assert kind_score(KindScorer(), spelling) == 1.0

    def test_configured_kind_matches_case_insensitively(self) -> None:
        scorer = KindScorer({"tool_RESULT": 0.7})
        assert kind_score(scorer, "Tool_Result") == 0.7

    def test_context_kind_keys_are_accepted(self) -> None:
        assert kind_score(KindScorer({ContextKind.MEMORY: 0.3}), "memory") == 0.3

    def test_folding_is_ascii_only(self) -> None:
        assert kind_score(KindScorer({"Ärzte": 1.0}), "ärzte") == 0.0
        assert kind_score(KindScorer({"Ärzte": 1.0}), "ÄRZTE") == 1.0

    def test_empty_custom_map_scores_everything_zero(self) -> None:
        scorer = KindScorer({})
        assert [kind_score(scorer, k) for k in ("Message", "SystemPrompt")] == [0.0, 0.0]

    def test_weights_above_one_are_returned_unclamped(self) -> None:
        assert kind_score(KindScorer({"Document": 7.5}), "Document") == 7.5

    def test_zero_weight_is_allowed(self) -> None:
        assert kind_score(KindScorer({"Message": 0}), "Message") == 0.0

    def test_unlisted_kind_scores_zero_with_custom_weights(self) -> None:
        assert kind_score(KindScorer({"Document": 1.0}), "Message") == 0.0

    def test_weights_are_copied_at_construction(self) -> None:
        weights = {"Message": 0.5}
        scorer = KindScorer(weights)
        weights["Message"] = 0.9
        assert kind_score(scorer, "Message") == 0.5

    def test_weights_view_is_read_only(self) -> None:
        with pytest.raises(TypeError):
            KindScorer({"Message": 0.5}).weights["Message"] = 1.0  # type: ignore[index]

    def test_all_items_is_ignored(self) -> None:
        item = make(kind="Memory")
        assert KindScorer().score(item, []) == KindScorer().score(item, [make(), item]) == 0.8


class TestConstruction:
    def test_negative_weight_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^KindScorer: weight for kind 'Memory' must be non-negative, got -0\.1$",
        ) as info:
            KindScorer({"Memory": -0.1})
        assert info.value.value == -0.1

    @pytest.mark.parametrize("weight", [math.nan, math.inf])
    def test_non_finite_weight_is_rejected(self, weight: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^KindScorer: weight for kind 'Message' must be finite, got"
        ):
            KindScorer({"Message": weight})

    def test_negative_infinity_is_rejected(self) -> None:
        with pytest.raises(ScorerConfigError, match=r"'Message' must be non-negative, got -inf"):
            KindScorer({"Message": -math.inf})

    @pytest.mark.parametrize("weight", [True, "0.5", None])
    def test_non_number_weight_is_rejected(self, weight: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^KindScorer: weight for kind 'Message' must be a number, got"
        ):
            KindScorer({"Message": weight})

    @pytest.mark.parametrize("kind", ["", "   ", 3])
    def test_invalid_kind_key_is_rejected(self, kind: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^KindScorer: weights keys must be non-empty kind strings"
        ):
            KindScorer({kind: 1.0})

    def test_kinds_differing_only_by_case_are_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^KindScorer: weights lists kinds 'Memory' and 'MEMORY', which are the same",
        ) as info:
            KindScorer({"Memory": 0.5, "MEMORY": 0.6})
        assert info.value.field == "weights"

    def test_non_mapping_weights_are_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^KindScorer: weights must be a mapping of kind to weight"
        ):
            KindScorer([("Message", 1.0)])  # type: ignore[arg-type]

    def test_errors_are_value_errors_naming_the_field(self) -> None:
        with pytest.raises(ValueError) as info:
            KindScorer({"Memory": -1})
        assert isinstance(info.value, ScorerConfigError)
        assert info.value.field == "weight for kind 'Memory'"


def test_repr_shows_the_weights() -> None:
    assert repr(KindScorer({"memory": 2.0})) == "KindScorer(weights={'memory': 2.0})"
    assert repr(KindScorer()) == "KindScorer()"  # the default table (KindScorer.DEFAULT_WEIGHTS)
    assert repr(KindScorer(dict(KindScorer.DEFAULT_WEIGHTS))) == "KindScorer()"
