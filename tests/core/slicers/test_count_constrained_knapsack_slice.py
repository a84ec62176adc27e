"""CountConstrainedKnapsackSlice (spec: count-constrained-knapsack-slice.txt)."""

from __future__ import annotations

import re

import pytest

from cupel._errors import CountRequirementError, SlicerConfigError, TableTooLargeError
from cupel.slicers import (
    CapExclusion,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountRequirementShortfall,
    GreedySlice,
    KnapsackSlice,
    ScarcityBehavior,
)


def _run(slicer, items, budget):
    outcome = slicer.slice_detailed(items, budget)
    assert slicer.slice(items, budget) == outcome.selected
    return outcome


class TestConformanceOutlines:
    """The five vector outlines of count-constrained-knapsack-slice.txt."""

    def test_baseline_require_2_and_knapsack_selects_the_residual(self, scored, budget, names):
        items = scored(
            ("tool-a", 100, 0.9, "tool"), ("tool-b", 100, 0.7, "tool"), ("msg-x", 100, 0.5, "msg")
        )
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 2, 4)], KnapsackSlice(bucket_size=100)
        )
        outcome = _run(slicer, items, budget(1000))
        assert set(names(outcome.selected)) == {"tool-a", "tool-b", "msg-x"}
        assert (len(outcome.shortfalls), len(outcome.cap_exclusions)) == (0, 0)

    def test_cap_exclusion_after_the_phase_2_re_sort(self, scored, budget, names):
        items = scored(
            ("tool-a", 100, 0.9, "tool"),
            ("tool-b", 100, 0.8, "tool"),
            ("tool-c", 100, 0.7, "tool"),
            ("tool-d", 100, 0.6, "tool"),
        )
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 1, 2)], KnapsackSlice(bucket_size=100)
        )
        outcome = _run(slicer, items, budget(600))
        # The knapsack returns [d, c, b] (reconstruction order); re-sorted: [b, c, d].
        # Counts start at 1 from phase 1: b -> 2, then c and d are at the cap.
        assert names(outcome.selected) == ["tool-a", "tool-b"]
        assert len(outcome.shortfalls) == 0
        assert outcome.cap_exclusions == (
            CapExclusion(items[2].item, "tool", 2, 2),
            CapExclusion(items[3].item, "tool", 2, 2),
        )

    def test_scarcity_degrade_records_a_shortfall(self, scored, budget, names):
        items = scored(("tool-a", 100, 0.9, "tool"))
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 3, 5)], scarcity=ScarcityBehavior.DEGRADE
        )
        outcome = _run(slicer, items, budget(500))
        assert names(outcome.selected) == ["tool-a"]
        assert outcome.shortfalls == (CountRequirementShortfall("tool", 3, 1),)
        assert len(outcome.cap_exclusions) == 0

    def test_tag_non_exclusivity_two_kinds_with_independent_requirements(
        self, scored, budget, names
    ):
        items = scored(
            ("item-tool", 100, 0.9, "tool"),
            ("item-memory", 100, 0.8, "memory"),
            ("item-extra", 100, 0.5, "tool"),
        )
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 1, 4), CountQuotaEntry("memory", 1, 4)],
            KnapsackSlice(bucket_size=100),
        )
        outcome = _run(slicer, items, budget(1000))
        assert set(names(outcome.selected)) == {"item-tool", "item-memory", "item-extra"}
        assert (len(outcome.shortfalls), len(outcome.cap_exclusions)) == (0, 0)

    def test_require_and_cap_with_an_exact_knapsack_over_the_residual(self, scored, budget, names):
        items = scored(
            ("tool-a", 100, 0.9, "tool"),
            ("tool-b", 100, 0.7, "tool"),
            ("msg-s", 50, 0.8, "msg"),
            ("msg-m", 150, 0.6, "msg"),
            ("msg-l", 200, 0.4, "msg"),
        )
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 2, 2)], KnapsackSlice(bucket_size=1)
        )
        outcome = _run(slicer, items, budget(1000))
        assert set(names(outcome.selected)) == {"tool-a", "tool-b", "msg-s", "msg-m", "msg-l"}
        assert (len(outcome.shortfalls), len(outcome.cap_exclusions)) == (0, 0)


class TestConstruction:
    def test_default_knapsack_has_bucket_size_100(self):
        slicer = CountConstrainedKnapsackSlice([])
        assert isinstance(slicer.knapsack, KnapsackSlice)
        assert slicer.knapsack.bucket_size == 100

    def test_knapsack_must_be_a_knapsack_slice(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountConstrainedKnapsackSlice: knapsack must be a KnapsackSlice, got GreedySlice()"
            ),
        ) as info:
            CountConstrainedKnapsackSlice([], GreedySlice())
        assert info.value.field == "knapsack"

    def test_duplicate_kinds_are_rejected(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountConstrainedKnapsackSlice: duplicate entry for kind 'Tool' ('tool' is the "
                "same kind; kinds compare case-insensitively)"
            ),
        ):
            CountConstrainedKnapsackSlice([CountQuotaEntry("tool"), CountQuotaEntry("Tool")])

    def test_entries_must_be_count_quota_entries(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountConstrainedKnapsackSlice: entries must be CountQuotaEntry values, got 3"
            ),
        ):
            CountConstrainedKnapsackSlice([3])

    def test_bad_scarcity_is_rejected(self):
        with pytest.raises(SlicerConfigError, match="scarcity must be one of Degrade, Throw"):
            CountConstrainedKnapsackSlice([], scarcity="fail")

    def test_exposes_its_configuration(self):
        knapsack = KnapsackSlice(bucket_size=5)
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1)], knapsack, "THROW")
        assert slicer.knapsack is knapsack
        assert slicer.entries == (CountQuotaEntry("tool", 1),)
        assert slicer.scarcity is ScarcityBehavior.THROW
        assert slicer.is_count_quota is True
        assert repr(slicer) == (
            "CountConstrainedKnapsackSlice([CountQuotaEntry('tool', require_count=1)], "
            "knapsack=KnapsackSlice(bucket_size=5), scarcity=ScarcityBehavior.THROW)"
        )


class TestEdgeCases:
    """One test per row of the spec's CountConstrainedKnapsackSlice edge-case table."""

    def test_empty_input_selects_nothing(self, budget):
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1)], scarcity="throw")
        assert _run(slicer, [], budget(100)).selected == []

    def test_zero_target_selects_nothing(self, scored, budget):
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1)], scarcity="throw")
        outcome = _run(slicer, scored(("t", 10, 0.5, "tool")), budget(0, 10))
        assert (outcome.selected, outcome.shortfalls) == ([], ())

    def test_no_entries_runs_the_plain_knapsack(self, scored, budget):
        items = scored(("a", 60, 0.6), ("b", 50, 0.45), ("c", 50, 0.45), ("z", 0, 0.1))
        knapsack = KnapsackSlice(bucket_size=10)
        result = CountConstrainedKnapsackSlice([], knapsack).slice(items, budget(100))
        assert set(map(id, result)) == set(map(id, knapsack.slice(items, budget(100))))

    def test_require_equal_to_cap_admits_no_further_items_of_that_kind(self, scored, budget, names):
        items = scored(("t1", 10, 0.9, "tool"), ("t2", 10, 0.8, "tool"), ("t3", 10, 0.7, "tool"))
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 2, 2)], KnapsackSlice(1))
        outcome = _run(slicer, items, budget(100))
        assert names(outcome.selected) == ["t1", "t2"]
        assert [e.item.content for e in outcome.cap_exclusions] == ["t3"]

    def test_require_zero_with_a_cap_only_caps_the_knapsack_output(self, scored, budget, names):
        items = scored(("t1", 10, 0.7, "tool"), ("t2", 10, 0.9, "tool"), ("m", 10, 0.1))
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 0, 1)], KnapsackSlice(1))
        outcome = _run(slicer, items, budget(100))
        # Re-sorted phase 2 output: t2 (0.9), t1 (0.7), m (0.1); the cap of 1 keeps t2.
        assert names(outcome.selected) == ["t2", "m"]
        assert outcome.cap_exclusions == (CapExclusion(items[0].item, "tool", 1, 1),)

    def test_scarcity_throw_raises_the_exact_spec_message(self, scored, budget):
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 3, 5)], scarcity="Throw")
        with pytest.raises(
            CountRequirementError,
            match=re.escape(
                "CountConstrainedKnapsackSlice: candidate pool for kind 'tool' has 1 items but "
                "RequireCount is 3."
            ),
        ):
            slicer.slice(scored(("tool-a", 100, 0.9, "tool")), budget(500))

    def test_kind_with_no_candidates_is_a_shortfall_or_raises(self, scored, budget, names):
        items = scored(("m", 10, 0.5))
        entries = [CountQuotaEntry("tool", 1)]
        outcome = _run(CountConstrainedKnapsackSlice(entries), items, budget(100))
        assert names(outcome.selected) == ["m"]
        assert outcome.shortfalls == (CountRequirementShortfall("tool", 1, 0),)
        with pytest.raises(CountRequirementError, match="kind 'tool' has 0 items"):
            CountConstrainedKnapsackSlice(entries, scarcity="throw").slice(items, budget(100))

    def test_phase_1_exhausting_the_budget_leaves_phase_2_nothing(self, scored, budget, names):
        items = scored(("t1", 100, 0.9, "tool"), ("m", 1, 0.99), ("z", 0, 0.5))
        slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1)], KnapsackSlice(1))
        # Residual target 0: the knapsack returns nothing, not even the zero-token item.
        assert names(slicer.slice(items, budget(100))) == ["t1"]

    def test_table_too_large_propagates_from_the_knapsack(self, scored, budget):
        items = scored(("t", 10, 0.9, "tool"), ("a", 10, 0.5), ("b", 10, 0.4))
        slicer = CountConstrainedKnapsackSlice(
            [CountQuotaEntry("tool", 1)], KnapsackSlice(bucket_size=1, max_cells=100)
        )
        # Residual: 2 candidates x (90 + 1) = 182 cells > 100.
        with pytest.raises(TableTooLargeError, match="2 candidates x \\(90 \\+ 1\\)"):
            slicer.slice(items, budget(100))


def test_phase_2_ties_keep_the_knapsack_output_order(scored, budget, names):
    items = scored(("x", 10, 0.5, "tool"), ("y", 10, 0.5, "tool"))
    knapsack = KnapsackSlice(bucket_size=1)
    assert names(knapsack.slice(items, budget(100))) == ["y", "x"]
    slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 0, 1)], knapsack)
    outcome = _run(slicer, items, budget(100))
    # Equal scores: the stable re-sort keeps [y, x], so y takes the only slot.
    assert names(outcome.selected) == ["y"]
    assert [e.item.content for e in outcome.cap_exclusions] == ["x"]


def test_phase_3_counts_start_from_the_committed_items(scored, budget, names):
    items = scored(("t1", 10, 0.9, "tool"), ("t2", 10, 0.8, "tool"), ("t3", 10, 0.7, "tool"))
    slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 2, 3)], KnapsackSlice(1))
    outcome = _run(slicer, items, budget(100))
    assert names(outcome.selected) == ["t1", "t2", "t3"]
    slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 2, 2)], KnapsackSlice(1))
    assert _run(slicer, items, budget(100)).cap_exclusions == (
        CapExclusion(items[2].item, "tool", 2, 2),
    )


def test_knapsack_packs_the_residual_optimally_within_the_reduced_budget(scored, budget, names):
    items = scored(
        ("t", 40, 0.2, "tool"),
        ("dense", 35, 0.6),
        ("x", 30, 0.45),
        ("y", 30, 0.45),
    )
    slicer = CountConstrainedKnapsackSlice([CountQuotaEntry("tool", 1)], KnapsackSlice(5))
    # Residual budget 100 - 40 = 60: x + y (0.9) beats dense alone (0.6). They tie on
    # score, so they stay in knapsack (reconstruction) order: y, x.
    assert names(slicer.slice(items, budget(100))) == ["t", "y", "x"]
