"""FrequencyScorer: share of peers sharing a tag; self skipped by identity."""

from __future__ import annotations

from scorers_testkit import make

from cupel._model import ContextItem
from cupel.scorers import FrequencyScorer


def both_paths(items: list[ContextItem]) -> list[float]:
    scorer = FrequencyScorer()
    batch = scorer.score_all(items)
    assert batch == [scorer.score(item, items) for item in items]
    return batch


def test_item_without_tags_scores_zero() -> None:
    items = [make(), make(tags=("a",)), make(tags=("a",))]
    assert both_paths(items) == [0.0, 0.5, 0.5]


def test_single_item_pass_scores_zero() -> None:
    assert both_paths([make(tags=("a",))]) == [0.0]


def test_empty_pass_scores_nothing() -> None:
    assert FrequencyScorer().score_all([]) == []


def test_no_peer_sharing_a_tag_scores_zero() -> None:
    assert both_paths([make(tags=("a",)), make(tags=("b",))]) == [0.0, 0.0]


def test_all_peers_sharing_a_tag_scores_one() -> None:
    items = [make(tags=("a", "b")), make(tags=("a",)), make(tags=("b",))]
    assert both_paths(items)[0] == 1.0


def test_tagless_peer_does_not_count_but_stays_in_the_denominator() -> None:
    items = [make(tags=("a",)), make(tags=("a",)), make(), make()]
    assert both_paths(items) == [1 / 3, 1 / 3, 0.0, 0.0]


def test_peer_sharing_several_tags_counts_once() -> None:
    items = [make(tags=("a", "b")), make(tags=("a", "b", "c")), make(tags=("z",))]
    assert both_paths(items) == [0.5, 0.5, 0.0]


def test_tags_match_case_insensitively() -> None:
    items = [make(tags=("Important",)), make(tags=("important",)), make(tags=("IMPORTANT",))]
    assert both_paths(items) == [1.0, 1.0, 1.0]


def test_case_folding_is_ascii_only() -> None:
    assert both_paths([make(tags=("é",)), make(tags=("É",))]) == [0.0, 0.0]


def test_equal_copy_counts_as_a_peer() -> None:
    original = make(content="same", tags=("a",))
    copy = ContextItem(content="same", tokens=1, tags=("a",))
    assert original == copy and original is not copy
    assert both_paths([original, copy]) == [1.0, 1.0]


def test_same_object_listed_twice_skips_every_position_holding_it() -> None:
    shared = make(tags=("a",))
    peer = make(tags=("a",))
    items = [shared, peer, shared]
    # shared: peer matches, both of its own positions are skipped, denominator 3 - 1.
    # peer: both positions of shared match.
    assert both_paths(items) == [0.5, 1.0, 0.5]


def test_item_outside_the_pass_counts_every_sharing_item() -> None:
    items = [make(tags=("a",)), make(tags=("A",)), make(tags=("b",))]
    assert FrequencyScorer().score(make(tags=("a",)), items) == 1.0


def test_empty_string_tags_match_each_other() -> None:
    assert both_paths([make(tags=("",)), make(tags=("",))]) == [1.0, 1.0]


def test_repr() -> None:
    assert repr(FrequencyScorer()) == "FrequencyScorer()"
