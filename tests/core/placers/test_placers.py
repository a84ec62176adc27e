"""ChronologicalPlacer and UShapedPlacer: the spec's edge-case tables."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cupel import ChronologicalPlacer, ContextItem, ScoredItem, UShapedPlacer

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def si(content: str, score: float = 0.5, minute: int | None = None) -> ScoredItem:
    ts = None if minute is None else T0 + timedelta(minutes=minute)
    return ScoredItem(ContextItem(content=content, tokens=1, timestamp=ts), score)


def names(items: list[ContextItem]) -> list[str]:
    return [i.content for i in items]


class TestChronological:
    def test_empty(self) -> None:
        assert ChronologicalPlacer().place([]) == []

    def test_single_item_returned_as_is(self) -> None:
        entry = si("a")
        assert ChronologicalPlacer().place([entry])[0] is entry.item

    def test_ascending_by_timestamp_ignoring_scores(self) -> None:
        items = [si("c", 0.9, 3), si("a", 0.1, 1), si("b", 1.0, 2)]
        assert names(ChronologicalPlacer().place(items)) == ["a", "b", "c"]

    def test_no_timestamps_keeps_input_order(self) -> None:
        assert names(ChronologicalPlacer().place([si("b"), si("a"), si("c")])) == ["b", "a", "c"]

    def test_mixed_untimestamped_last_in_input_order(self) -> None:
        items = [si("x"), si("late", minute=5), si("y"), si("early", minute=1)]
        assert names(ChronologicalPlacer().place(items)) == ["early", "late", "x", "y"]

    def test_equal_timestamps_keep_input_order(self) -> None:
        items = [si("b", minute=1), si("a", minute=1), si("c", minute=0)]
        assert names(ChronologicalPlacer().place(items)) == ["c", "b", "a"]

    def test_compares_instants_not_offsets(self) -> None:
        plus9 = timezone(timedelta(hours=9))
        tokyo = ContextItem(
            content="tokyo", tokens=1, timestamp=datetime(2024, 1, 1, 8, tzinfo=plus9)
        )
        utc = ContextItem(
            content="utc", tokens=1, timestamp=datetime(2024, 1, 1, 0, 30, tzinfo=timezone.utc)
        )
        # 08:00+09:00 is 23:00 UTC the day before
        assert names(ChronologicalPlacer().place([ScoredItem(utc, 1), ScoredItem(tokyo, 1)])) == [
            "tokyo",
            "utc",
        ]


class TestUShaped:
    def test_empty_and_single(self) -> None:
        assert UShapedPlacer().place([]) == []
        entry = si("a")
        assert UShapedPlacer().place([entry])[0] is entry.item

    def test_two_items_higher_first(self) -> None:
        assert names(UShapedPlacer().place([si("low", 0.1), si("high", 0.9)])) == ["high", "low"]

    def test_spec_seven_item_example(self) -> None:
        scores = dict(zip("ABCDEFG", (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3), strict=True))
        items = [si(c, s) for c, s in scores.items()]
        assert "".join(names(UShapedPlacer().place(items))) == "ACEGFDB"

    def test_equal_scores_rank_by_input_index(self) -> None:
        items = [si(c, 0.5) for c in "abcde"]
        assert "".join(names(UShapedPlacer().place(items))) == "acedb"

    def test_pinned_score_one_goes_to_an_edge(self) -> None:
        items = [si("mid", 0.5), si("pinned", 1.0), si("low", 0.1)]
        placed = names(UShapedPlacer().place(items))
        assert placed[0] == "pinned" and placed[-1] == "mid"


@given(st.lists(st.tuples(st.floats(0, 1), st.none() | st.integers(0, 20)), max_size=40))
def test_placers_return_a_permutation_of_the_same_objects(
    spec: list[tuple[float, int | None]],
) -> None:
    items = [si(f"i{n}", s, m) for n, (s, m) in enumerate(spec)]
    for placer in (ChronologicalPlacer(), UShapedPlacer()):
        placed = placer.place(items)
        assert sorted(map(id, placed)) == sorted(id(e.item) for e in items)
        assert placer.place(items) == placed  # deterministic


@pytest.mark.parametrize("placer", [ChronologicalPlacer(), UShapedPlacer()])
def test_repr_names_the_placer(placer: object) -> None:
    assert repr(placer) == f"{type(placer).__name__}()"
