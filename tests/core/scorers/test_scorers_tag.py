"""TagScorer: matched tag weight over the total configured weight."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scorers_testkit import make

from cupel._errors import ScorerConfigError
from cupel._model import ascii_fold
from cupel.scorers import TagScorer


def tag_score(scorer: TagScorer, *tags: str) -> float:
    item = make(tags=tags)
    return scorer.score(item, [item])


class TestScoring:
    def test_item_without_tags_scores_zero(self) -> None:
        assert tag_score(TagScorer({"a": 1.0})) == 0.0

    def test_all_zero_weights_score_zero(self) -> None:
        assert tag_score(TagScorer({"a": 0.0, "b": 0.0}), "a", "b") == 0.0

    def test_empty_weights_score_zero(self) -> None:
        assert tag_score(TagScorer({}), "a") == 0.0

    def test_no_matching_tag_scores_zero(self) -> None:
        assert tag_score(TagScorer({"a": 1.0}), "x", "y") == 0.0

    def test_matching_every_configured_tag_scores_one(self) -> None:
        assert tag_score(TagScorer({"a": 2.0, "b": 3.0}), "b", "a") == 1.0

    def test_partial_match_is_share_of_total_weight(self) -> None:
        assert tag_score(TagScorer({"a": 1.0, "b": 3.0}), "b", "unrelated") == 0.75

    def test_denominator_is_total_not_matched_weight(self) -> None:
        assert tag_score(TagScorer({"a": 1.0, "b": 1.0, "c": 2.0}), "a") == 0.25

    def test_duplicate_tags_add_each_occurrence(self) -> None:
        assert tag_score(TagScorer({"a": 1.0, "b": 3.0}), "a", "a") == 0.5

    def test_duplicate_tags_are_clamped_to_one(self) -> None:
        assert tag_score(TagScorer({"a": 3.0, "b": 1.0}), "a", "a") == 1.0

    def test_lookup_is_case_sensitive_by_default(self) -> None:
        assert tag_score(TagScorer({"Urgent": 1.0}), "urgent") == 0.0
        assert tag_score(TagScorer({"Urgent": 1.0}), "Urgent") == 1.0

    def test_case_insensitive_lookup_folds_ascii(self) -> None:
        scorer = TagScorer({"Urgent": 1.0, "db": 1.0}, case_insensitive=True)
        assert tag_score(scorer, "URGENT") == 0.5
        assert tag_score(scorer, "urgent", "DB") == 1.0

    def test_case_insensitive_lookup_leaves_non_ascii_alone(self) -> None:
        assert tag_score(TagScorer({"é": 1.0}, case_insensitive=True), "É") == 0.0

    def test_all_items_is_ignored(self) -> None:
        scorer = TagScorer({"a": 1.0})
        item = make(tags=("a",))
        assert scorer.score(item, []) == scorer.score(item, [item, make(tags=("a",))]) == 1.0


class TestConstruction:
    def test_total_weight_is_precomputed(self) -> None:
        assert TagScorer({"a": 1.5, "b": 2.5}).total_weight == 4.0

    def test_negative_weight_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: weight for tag 'a' must be non-negative, got -1$"
        ):
            TagScorer({"a": -1})

    @pytest.mark.parametrize("weight", [math.nan, math.inf])
    def test_non_finite_weight_is_rejected(self, weight: float) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: weight for tag 'a' must be finite, got"
        ):
            TagScorer({"a": weight})

    @pytest.mark.parametrize("weight", [False, "1", None])
    def test_non_number_weight_is_rejected(self, weight: Any) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: weight for tag 'a' must be a number"
        ):
            TagScorer({"a": weight})

    def test_non_string_tag_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: tag_weights keys must be strings, got 1$"
        ):
            TagScorer({1: 1.0})  # type: ignore[dict-item]

    def test_case_variants_are_distinct_tags_by_default(self) -> None:
        scorer = TagScorer({"a": 1.0, "A": 1.0})
        assert tag_score(scorer, "A") == 0.5

    def test_case_variants_are_rejected_when_case_insensitive(self) -> None:
        with pytest.raises(
            ScorerConfigError,
            match=r"^TagScorer: tag_weights lists tags 'a' and 'A', which are the same tag",
        ):
            TagScorer({"a": 1.0, "A": 1.0}, case_insensitive=True)

    def test_overflowing_total_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: the sum of tag_weights must be finite"
        ):
            TagScorer({"a": 1e308, "b": 1e308})

    def test_non_mapping_is_rejected(self) -> None:
        with pytest.raises(ScorerConfigError, match=r"^TagScorer: tag_weights must be a mapping"):
            TagScorer(["a"])  # type: ignore[arg-type]

    def test_non_bool_case_flag_is_rejected(self) -> None:
        with pytest.raises(
            ScorerConfigError, match=r"^TagScorer: case_insensitive must be a bool, got 1$"
        ):
            TagScorer({"a": 1.0}, case_insensitive=1)  # type: ignore[arg-type]

    def test_weights_are_copied_and_read_only(self) -> None:
        weights = {"a": 1.0}
        scorer = TagScorer(weights)
        weights["b"] = 1.0
        assert scorer.tag_weights == {"a": 1.0}
        with pytest.raises(TypeError):
            scorer.tag_weights["c"] = 1.0  # type: ignore[index]


def test_repr_shows_configuration() -> None:
    assert repr(TagScorer({"a": 1.0})) == "TagScorer({'a': 1.0})"
    assert (
        repr(TagScorer({"a": 1.0}, case_insensitive=True))
        == "TagScorer({'a': 1.0}, case_insensitive=True)"
    )


# -- the batch against the spec's TAG-SCORE ------------------------------------------------------


def spec_tag_score(tags: tuple[str, ...], weights: dict[str, float], fold: bool) -> float:
    """TAG-SCORE, literally (keys and tags folded first when case-insensitive)."""
    table = {ascii_fold(k) if fold else k: w for k, w in weights.items()}
    total = sum(weights.values())
    if total == 0.0 or len(tags) == 0:
        return 0.0
    matched = 0.0
    for tag in tags:
        key = ascii_fold(tag) if fold else tag
        if key in table:
            matched = matched + table[key]
    return min(matched / total, 1.0)


SPELLINGS = ["a", "A", "b", "Ops", "OPS", "é", "É", ""]


@given(
    st.dictionaries(st.sampled_from(["a", "b", "Ops", "é", ""]), st.floats(0.0, 3e307)),
    st.booleans(),
    st.lists(st.lists(st.sampled_from(SPELLINGS), max_size=6), max_size=12),
)
def test_batch_equals_the_spec_tag_score(
    weights: dict[str, float], fold: bool, rows: list[list[str]]
) -> None:
    if fold and len({ascii_fold(k) for k in weights}) < len(weights):
        return  # such weights are refused at construction
    scorer = TagScorer(weights, case_insensitive=fold)
    items = [make(tags=tuple(row)) for row in rows]
    expected = [spec_tag_score(item.tags, weights, fold) for item in items]
    assert scorer.score_all(items) == expected
    assert [scorer.score(item, items) for item in items] == expected
