"""CountQuotaSlice: per-kind require/cap counts (spec: Slicers > CountQuotaSlice)."""

from __future__ import annotations

import re

import pytest

from cupel._errors import CountRequirementError, SlicerConfigError
from cupel._model import ContextKind
from cupel.slicers import (
    CapExclusion,
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    CountRequirementShortfall,
    GreedySlice,
    KnapsackSlice,
    ScarcityBehavior,
    slice_detailed,
)


def _tools(scored, *rows):
    """Tool items from (content, tokens, score) rows."""
    return scored(*[(*row, "tool") for row in rows])


class TestScarcityBehavior:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Degrade", ScarcityBehavior.DEGRADE),
            ("degrade", ScarcityBehavior.DEGRADE),
            ("THROW", ScarcityBehavior.THROW),
            (ScarcityBehavior.THROW, ScarcityBehavior.THROW),
        ],
    )
    def test_parses_case_insensitively(self, text, expected):
        assert ScarcityBehavior.parse(text) is expected
        assert ScarcityBehavior(text) is expected

    def test_unknown_names_are_rejected_with_the_allowed_values(self):
        with pytest.raises(
            SlicerConfigError, match=re.escape("scarcity must be one of Degrade, Throw, got 'warn'")
        ):
            ScarcityBehavior.parse("warn")

    def test_is_a_str_enum(self):
        assert ScarcityBehavior.DEGRADE == "Degrade"


class TestCountQuotaEntry:
    def test_defaults_require_nothing_and_cap_nothing(self):
        entry = CountQuotaEntry("tool")
        assert (entry.require_count, entry.cap_count) == (0, None)
        assert isinstance(entry.kind, ContextKind)
        assert repr(entry) == "CountQuotaEntry('tool')"

    def test_is_frozen_and_compares_kinds_case_insensitively(self):
        entry = CountQuotaEntry("tool", 1, 2)
        assert entry == CountQuotaEntry("TOOL", 1, 2)
        with pytest.raises(AttributeError):
            entry.cap_count = 3

    @pytest.mark.parametrize("field", ["require_count", "cap_count"])
    @pytest.mark.parametrize("bad", [-1, 1.0, True, "2"])
    def test_counts_must_be_non_negative_integers(self, field, bad):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                f"CountQuotaEntry: {field} must be a non-negative integer, got {bad!r}"
            ),
        ) as info:
            CountQuotaEntry("tool", **{field: bad})
        assert (info.value.field, info.value.value) == (field, bad)

    def test_require_must_not_exceed_cap(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountQuotaEntry: require_count (3) must be <= cap_count (2) for kind 'tool'"
            ),
        ):
            CountQuotaEntry("tool", require_count=3, cap_count=2)

    def test_zero_cap_with_a_requirement_is_rejected(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountQuotaEntry: cap_count 0 with require_count 2 can never be satisfied "
                "(kind 'tool')"
            ),
        ) as info:
            CountQuotaEntry("tool", require_count=2, cap_count=0)
        assert info.value.field == "cap_count"

    def test_zero_cap_without_a_requirement_is_allowed(self):
        assert CountQuotaEntry("tool", cap_count=0).cap_count == 0

    def test_kind_must_be_a_non_empty_string(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape("CountQuotaEntry: kind must be a non-empty string, got ''"),
        ):
            CountQuotaEntry("")


class TestConstruction:
    def test_knapsack_inner_is_rejected(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountQuotaSlice: inner must not be a KnapsackSlice (its output is not "
                "score-ordered, so cap enforcement could drop better items); use GreedySlice, "
                "or CountConstrainedKnapsackSlice for knapsack selection with count quotas, "
                "got KnapsackSlice()"
            ),
        ) as info:
            CountQuotaSlice(KnapsackSlice(), [])
        assert info.value.field == "inner"

    def test_count_constrained_knapsack_inner_is_rejected(self):
        with pytest.raises(
            SlicerConfigError,
            match=r"CountQuotaSlice: inner must not be a CountConstrainedKnapsackSlice",
        ):
            CountQuotaSlice(CountConstrainedKnapsackSlice([]), [])

    def test_inner_must_have_a_slice_method(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountQuotaSlice: inner must be a slicer (an object with a slice method), "
                "got 'greedy'"
            ),
        ):
            CountQuotaSlice("greedy", [])

    def test_duplicate_kinds_are_rejected_case_insensitively(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "CountQuotaSlice: duplicate entry for kind 'TOOL' ('tool' is the same kind; "
                "kinds compare case-insensitively)"
            ),
        ):
            CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 1), CountQuotaEntry("TOOL")])

    def test_entries_must_be_count_quota_entries(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape("CountQuotaSlice: entries must be CountQuotaEntry values, got 'tool'"),
        ):
            CountQuotaSlice(GreedySlice(), ["tool"])

    def test_scarcity_is_parsed_or_rejected(self):
        assert CountQuotaSlice(GreedySlice(), [], "throw").scarcity is ScarcityBehavior.THROW
        with pytest.raises(SlicerConfigError, match="scarcity must be one of Degrade, Throw"):
            CountQuotaSlice(GreedySlice(), [], "never")

    def test_exposes_its_configuration(self):
        inner = GreedySlice()
        entries = [CountQuotaEntry("tool", 2, 4)]
        slicer = CountQuotaSlice(inner, entries)
        assert slicer.inner is inner
        assert slicer.entries == tuple(entries)
        assert slicer.scarcity is ScarcityBehavior.DEGRADE
        assert slicer.is_count_quota is True
        assert repr(slicer) == (
            "CountQuotaSlice(GreedySlice(), [CountQuotaEntry('tool', require_count=2, "
            "cap_count=4)])"
        )


class TestScenarios:
    """The five CountQuotaSlice scenarios, analogous to the count-constrained knapsack ones."""

    def test_baseline_commits_the_required_items_and_fills_the_rest(self, scored, budget, names):
        items = scored(
            ("tool-a", 100, 0.9, "tool"), ("tool-b", 100, 0.7, "tool"), ("msg-x", 100, 0.5)
        )
        slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 2, 4)])
        outcome = slicer.slice_detailed(items, budget(1000))
        assert names(outcome.selected) == ["tool-a", "tool-b", "msg-x"]
        assert (outcome.shortfalls, outcome.cap_exclusions) == ((), ())

    def test_cap_excludes_inner_picks_beyond_the_cap(self, scored, budget, names):
        items = _tools(
            scored,
            ("tool-a", 100, 0.9),
            ("tool-b", 100, 0.8),
            ("tool-c", 100, 0.7),
            ("tool-d", 100, 0.6),
        )
        slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 1, 2)])
        outcome = slicer.slice_detailed(items, budget(600))
        # Phase 1 commits tool-a (count 1); greedy returns b, c, d; b reaches the cap of 2.
        assert names(outcome.selected) == ["tool-a", "tool-b"]
        assert outcome.shortfalls == ()
        assert outcome.cap_exclusions == (
            CapExclusion(items[2].item, "tool", 2, 2),
            CapExclusion(items[3].item, "tool", 2, 2),
        )

    def test_scarcity_degrade_commits_what_exists_and_reports_a_shortfall(
        self, scored, budget, names
    ):
        items = _tools(scored, ("tool-a", 100, 0.9))
        slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 3, 5)])
        outcome = slicer.slice_detailed(items, budget(500))
        assert names(outcome.selected) == ["tool-a"]
        assert outcome.shortfalls == (CountRequirementShortfall("tool", 3, 1),)
        assert outcome.cap_exclusions == ()

    def test_scarcity_throw_raises_the_exact_spec_message(self, scored, budget):
        items = _tools(scored, ("tool-a", 100, 0.9))
        slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 3, 5)], "Throw")
        with pytest.raises(
            CountRequirementError,
            match=re.escape(
                "CountQuotaSlice: candidate pool for kind 'tool' has 1 items but RequireCount is 3."
            ),
        ) as info:
            slicer.slice(items, budget(500))
        assert (info.value.kind, info.value.satisfied, info.value.required) == ("tool", 1, 3)

    def test_kind_with_no_candidates_but_a_requirement_is_a_shortfall(self, scored, budget, names):
        items = scored(("msg-x", 100, 0.5))
        entries = [CountQuotaEntry("tool", 2)]
        outcome = CountQuotaSlice(GreedySlice(), entries).slice_detailed(items, budget(500))
        assert names(outcome.selected) == ["msg-x"]
        assert outcome.shortfalls == (CountRequirementShortfall("tool", 2, 0),)
        with pytest.raises(
            CountRequirementError,
            match=re.escape(
                "CountQuotaSlice: candidate pool for kind 'tool' has 0 items but RequireCount is 2."
            ),
        ):
            CountQuotaSlice(GreedySlice(), entries, ScarcityBehavior.THROW).slice(
                items, budget(500)
            )


class TestEdgeCases:
    """One test per row of the spec's CountQuotaSlice edge-case table."""

    def test_empty_input_selects_nothing(self, budget, recorder):
        inner = recorder()
        slicer = CountQuotaSlice(inner, [CountQuotaEntry("tool", 1)], "throw")
        assert slicer.slice_detailed([], budget(100)) == slice_detailed(slicer, [], budget(100))
        assert slicer.slice([], budget(100)) == []
        assert inner.calls == []

    def test_zero_target_selects_nothing_and_reports_nothing(self, scored, budget):
        items = _tools(scored, ("t", 0, 0.9))
        slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 3)], "throw")
        outcome = slicer.slice_detailed(items, budget(0, 100))
        assert (outcome.selected, outcome.shortfalls) == ([], ())

    def test_no_entries_runs_the_inner_slicer_unconstrained(self, scored, budget):
        items = scored(("a", 10, 0.9), ("b", 50, 0.8), ("c", 10, 0.1, "tool"))
        result = CountQuotaSlice(GreedySlice(), []).slice(items, budget(60))
        assert result == GreedySlice().slice(items, budget(60))

    def test_require_equal_to_cap_admits_no_further_items_of_that_kind(self, scored, budget, names):
        items = _tools(scored, ("t1", 10, 0.9), ("t2", 10, 0.8), ("t3", 10, 0.7))
        outcome = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 2, 2)]).slice_detailed(
            items, budget(100)
        )
        assert names(outcome.selected) == ["t1", "t2"]
        assert [e.item.content for e in outcome.cap_exclusions] == ["t3"]

    def test_require_zero_with_a_cap_only_caps_the_inner_output(self, scored, budget, names):
        items = _tools(scored, ("t1", 10, 0.9), ("t2", 10, 0.8), ("t3", 10, 0.7))
        outcome = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 0, 1)]).slice_detailed(
            items, budget(100)
        )
        assert names(outcome.selected) == ["t1"]
        assert [(e.item.content, e.count) for e in outcome.cap_exclusions] == [
            ("t2", 1),
            ("t3", 1),
        ]

    def test_phase_1_exhausting_the_budget_leaves_the_inner_slicer_nothing(
        self, scored, budget, names, recorder
    ):
        inner = recorder(GreedySlice())
        items = scored(("t1", 80, 0.9, "tool"), ("t2", 80, 0.8, "tool"), ("m", 10, 0.99))
        result = CountQuotaSlice(inner, [CountQuotaEntry("tool", 2)]).slice(items, budget(150, 200))
        # Committed items may overrun the target: 160 > 150 tokens.
        assert names(result) == ["t1", "t2"]
        assert [(c, b.max_tokens, b.target_tokens) for c, b in inner.calls] == [(["m"], 200, 0)]

    def test_knapsack_inner_fails_at_construction(self):
        with pytest.raises(SlicerConfigError, match="must not be a KnapsackSlice"):
            CountQuotaSlice(KnapsackSlice(bucket_size=1), [])


def test_phase_1_sorts_each_kind_by_score_even_if_the_input_is_not_sorted(scored, budget, names):
    items = _tools(scored, ("low", 10, 0.1), ("high", 10, 0.9), ("mid", 10, 0.5))
    outcome = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 2, 2)]).slice_detailed(
        items, budget(100)
    )
    assert names(outcome.selected) == ["high", "mid"]


def test_phase_1_keeps_input_order_between_equal_scores(scored, budget, names):
    items = _tools(scored, ("first", 10, 0.5), ("second", 10, 0.5), ("third", 10, 0.5))
    result = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 2, 2)]).slice(
        items, budget(100)
    )
    assert names(result) == ["first", "second"]


def test_result_is_committed_in_entry_order_then_inner_output_order(scored, budget, names):
    items = scored(
        ("m-big", 50, 0.9),
        ("mem", 10, 0.3, "memory"),
        ("tool", 10, 0.2, "tool"),
        ("m-small", 10, 0.8),
    )
    entries = [CountQuotaEntry("tool", 1), CountQuotaEntry("memory", 1)]
    result = CountQuotaSlice(GreedySlice(), entries).slice(items, budget(100))
    # Greedy orders the residual by density: m-small (0.08) before m-big (0.018).
    assert names(result) == ["tool", "mem", "m-small", "m-big"]


def test_inner_gets_the_residual_with_target_reduced_and_max_unchanged(scored, budget, recorder):
    inner = recorder()
    items = scored(("t1", 30, 0.9, "tool"), ("m1", 10, 0.8), ("t2", 20, 0.7, "tool"))
    CountQuotaSlice(inner, [CountQuotaEntry("tool", 1)]).slice(items, budget(100, 150))
    [(residual, sub_budget)] = inner.calls
    assert residual == ["m1", "t2"]
    assert (sub_budget.max_tokens, sub_budget.target_tokens) == (150, 70)


def test_kinds_match_case_insensitively_and_exclusions_use_the_entry_spelling(
    scored, budget, names
):
    items = scored(("a", 10, 0.9, "tool"), ("b", 10, 0.8, "TOOL"), ("c", 10, 0.7, "Tool"))
    outcome = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToOl", 1, 2)]).slice_detailed(
        items, budget(100)
    )
    assert names(outcome.selected) == ["a", "b"]
    assert outcome.cap_exclusions == (CapExclusion(items[2].item, "ToOl", 2, 2),)


def test_committed_items_are_tracked_by_identity_not_equality(scored, budget):
    items = scored(("same", 10, 0.9, "tool"), ("same", 10, 0.9, "tool"))
    assert items[0].item == items[1].item and items[0].item is not items[1].item
    result = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", 1)]).slice(items, budget(100))
    # The equal twin is not "already committed": it stays in the residual and is selected.
    assert [id(i) for i in result] == [id(items[0].item), id(items[1].item)]


def test_zero_cap_keeps_a_kind_out_and_reports_each_removal(scored, budget, names):
    items = scored(("t1", 10, 0.9, "tool"), ("m", 10, 0.5), ("t2", 10, 0.4, "tool"))
    outcome = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("tool", cap_count=0)]).slice_detailed(
        items, budget(100)
    )
    assert names(outcome.selected) == ["m"]
    assert outcome.cap_exclusions == (
        CapExclusion(items[0].item, "tool", 0, 0),
        CapExclusion(items[2].item, "tool", 0, 0),
    )


def test_throw_raises_for_the_first_unmet_entry_in_entry_order(scored, budget):
    items = scored(("m", 10, 0.5, "memory"))
    entries = [CountQuotaEntry("memory", 2), CountQuotaEntry("tool", 1)]
    with pytest.raises(CountRequirementError, match="kind 'memory' has 1 items"):
        CountQuotaSlice(GreedySlice(), entries, "throw").slice(items, budget(100))


def test_nested_count_quota_reports_are_passed_through(scored, budget, names):
    inner = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("memory", 2, 2)])
    outer = CountQuotaSlice(inner, [CountQuotaEntry("tool", 1, 1)])
    items = scored(("t1", 10, 0.9, "tool"), ("t2", 10, 0.8, "tool"), ("mem", 10, 0.7, "memory"))
    outcome = outer.slice_detailed(items, budget(100))
    assert names(outcome.selected) == ["t1", "mem"]
    assert outcome.shortfalls == (CountRequirementShortfall("memory", 2, 1),)
    assert outcome.cap_exclusions == (CapExclusion(items[1].item, "tool", 1, 1),)
