"""QuotaSlice: percentage budgets per kind (spec: Slicers > QuotaSlice; quota-slice.txt)."""

from __future__ import annotations

import math
import re

import pytest

from cupel._errors import SlicerConfigError
from cupel._model import ContextKind
from cupel.slicers import (
    CapExclusion,
    CountQuotaEntry,
    CountQuotaSlice,
    CountRequirementShortfall,
    GreedySlice,
    KnapsackSlice,
    QuotaEntry,
    QuotaSlice,
    slice_detailed,
)


def _mass(scored, prefix, count, tokens_each, kind, score=0.5):
    """``count`` items named prefix0.. of ``kind`` with ``tokens_each`` tokens."""
    return scored(*[(f"{prefix}{i}", tokens_each, score, kind) for i in range(count)])


class TestQuotaEntry:
    def test_defaults_are_require_0_and_cap_100(self):
        entry = QuotaEntry("Document")
        assert (entry.require, entry.cap) == (0.0, 100.0)
        assert entry.kind == ContextKind.DOCUMENT
        assert isinstance(entry.kind, ContextKind)

    def test_is_frozen_and_compares_kinds_case_insensitively(self):
        entry = QuotaEntry("document", 10, 20)
        assert entry == QuotaEntry("DOCUMENT", 10.0, 20.0)
        assert hash(entry) == hash(QuotaEntry("DOCUMENT", 10.0, 20.0))
        with pytest.raises(AttributeError):
            entry.require = 5

    def test_repr_shows_the_configuration(self):
        assert repr(QuotaEntry("Doc", 10, 50)) == "QuotaEntry('Doc', require=10.0, cap=50.0)"
        assert repr(QuotaEntry("Doc")) == "QuotaEntry('Doc')"

    @pytest.mark.parametrize("field", ["require", "cap"])
    @pytest.mark.parametrize("bad", [-0.5, 100.5, math.nan, math.inf, True, "10", None])
    def test_percentages_must_be_finite_and_between_0_and_100(self, field, bad):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                f"QuotaEntry: {field} must be a finite percentage between 0 and 100, got {bad!r}"
            ),
        ) as info:
            QuotaEntry("Document", **{field: bad})
        assert info.value.field == field

    def test_require_must_not_exceed_cap(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape("QuotaEntry: require (60.0) must be <= cap (50.0) for kind 'Doc'"),
        ):
            QuotaEntry("Doc", require=60, cap=50)

    @pytest.mark.parametrize("bad", ["", "   ", 3])
    def test_kind_must_be_a_non_empty_string(self, bad):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(f"QuotaEntry: kind must be a non-empty string, got {bad!r}"),
        ):
            QuotaEntry(bad)


class TestConstruction:
    def test_inner_must_have_a_slice_method(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "QuotaSlice: inner must be a slicer (an object with a slice method), got 42"
            ),
        ):
            QuotaSlice(42, [])

    def test_duplicate_kinds_are_rejected_case_insensitively(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "QuotaSlice: duplicate quota for kind 'DOCUMENT' ('Document' is the same kind; "
                "kinds compare case-insensitively)"
            ),
        ):
            QuotaSlice(GreedySlice(), [QuotaEntry("Document", 10), QuotaEntry("DOCUMENT", 20)])

    def test_requires_summing_over_100_are_rejected(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape(
                "QuotaSlice: the require percentages must sum to at most 100, got 110.0"
            ),
        ):
            QuotaSlice(GreedySlice(), [QuotaEntry("A", 60), QuotaEntry("B", 50)])

    def test_requires_summing_to_exactly_100_are_accepted(self):
        quotas = [QuotaEntry("A", 33.3), QuotaEntry("B", 33.3), QuotaEntry("C", 33.4)]
        assert QuotaSlice(GreedySlice(), quotas).quotas == tuple(quotas)

    def test_quotas_must_be_quota_entries(self):
        with pytest.raises(
            SlicerConfigError,
            match=re.escape("QuotaSlice: quotas must be QuotaEntry values, got ('A', 10)"),
        ):
            QuotaSlice(GreedySlice(), [("A", 10)])

    def test_exposes_inner_and_quotas_and_shows_them_in_repr(self):
        inner = KnapsackSlice(10)
        slicer = QuotaSlice(inner, [QuotaEntry("Doc", 10, 50)])
        assert slicer.inner is inner
        assert slicer.quotas == (QuotaEntry("Doc", 10, 50),)
        assert repr(slicer) == (
            "QuotaSlice(KnapsackSlice(bucket_size=10), [QuotaEntry('Doc', require=10.0, cap=50.0)])"
        )
        assert slicer.is_count_quota is False


class TestEdgeCases:
    """One test per row of the spec's QuotaSlice edge-case table."""

    def test_empty_input_selects_nothing(self, budget, recorder):
        inner = recorder()
        assert QuotaSlice(inner, [QuotaEntry("A", 50)]).slice([], budget(100)) == []
        assert inner.calls == []

    def test_zero_target_selects_nothing(self, scored, budget, recorder):
        inner = recorder()
        items = scored(("a", 0, 0.5), ("b", 10, 0.5))
        assert QuotaSlice(inner, []).slice(items, budget(0, 100)) == []
        assert inner.calls == []

    def test_no_quotas_share_the_budget_by_candidate_token_mass(self, scored, budget, recorder):
        inner = recorder()
        items = _mass(scored, "m", 3, 100, "Message") + _mass(scored, "d", 1, 100, "Document")
        QuotaSlice(inner, []).slice(items, budget(1000))
        # masses: Message 300, Document 100 (total 400); nothing required, unassigned 1000.
        # Message  floor(1000 * 300 / 400) = 750;  Document floor(1000 * 100 / 400) = 250.
        assert inner.budgets_by_first_item() == {"m0": (1000, 750), "d0": (1000, 250)}

    def test_require_100_percent_gives_that_kind_everything(self, scored, budget, recorder):
        inner = recorder()
        items = _mass(scored, "m", 2, 100, "Message") + _mass(scored, "d", 2, 100, "Document")
        QuotaSlice(inner, [QuotaEntry("Document", require=100)]).slice(items, budget(500))
        # Document require floor(100/100 * 500) = 500 = cap, so it is out of the
        # distribution (cap > require is false); unassigned = 0, so Message gets 0.
        assert inner.budgets_by_first_item() == {"d0": (500, 500)}

    def test_cap_0_percent_excludes_the_kind(self, scored, budget, names):
        items = _mass(scored, "m", 2, 10, "Message") + _mass(scored, "t", 2, 10, "ToolOutput")
        result = QuotaSlice(GreedySlice(), [QuotaEntry("ToolOutput", cap=0)]).slice(
            items, budget(1000)
        )
        assert names(result) == ["m0", "m1"]

    def test_kind_with_zero_token_mass_gets_only_its_require(self, scored, budget, recorder):
        inner = recorder()
        items = scored(("m", 100, 0.5), ("z", 0, 0.5, "Memory"), ("z2", 0, 0.1, "Document"))
        QuotaSlice(inner, [QuotaEntry("Memory", require=10)]).slice(items, budget(1000))
        # Memory: require floor(0.1 * 1000) = 100, mass 0 -> 100 + 0.
        # Message: unassigned 900 * 100 / 100 = 900.  Document: 0 + 0 -> not sliced at all.
        assert inner.budgets_by_first_item() == {"m": (1000, 900), "z": (1000, 100)}

    def test_kind_without_candidates_is_absent_and_its_require_is_unused(
        self, scored, budget, recorder
    ):
        inner = recorder()
        items = _mass(scored, "m", 1, 100, "Message")
        QuotaSlice(inner, [QuotaEntry("Document", require=40)]).slice(items, budget(1000))
        # Document's 400 stay reserved: Message gets floor(600 * 100 / 100) = 600, not 1000.
        assert inner.budgets_by_first_item() == {"m0": (1000, 600)}


class TestDistributeBudget:
    """Worked DISTRIBUTE-BUDGET examples; every division is floored, by hand, below."""

    def test_spec_example_two_kinds_at_33_percent_plus_a_free_kind(self, scored, budget, recorder):
        inner = recorder()
        items = (
            _mass(scored, "a", 1, 100, "A")
            + _mass(scored, "b", 2, 100, "B")
            + _mass(scored, "c", 4, 100, "C")
        )
        quotas = [QuotaEntry("A", require=33), QuotaEntry("B", require=33)]
        QuotaSlice(inner, quotas).slice(items, budget(1000))
        # require A = floor(33/100 * 1000) = 330, B = 330; totalRequired 660; unassigned 340.
        # caps: A = B = floor(100/100 * 1000) = 1000, C (unconfigured) = 1000; all cap > require,
        # so distribution mass = 100 + 200 + 400 = 700.
        # A: 330 + floor(340 * 100 / 700) = 330 + floor(48.57) = 378
        # B: 330 + floor(340 * 200 / 700) = 330 + floor(97.14) = 427
        # C:   0 + floor(340 * 400 / 700) =       floor(194.28) = 194
        # 378 + 427 + 194 = 999: the floors leave one token unassigned.
        assert inner.budgets_by_first_item() == {
            "a0": (1000, 378),
            "b0": (1000, 427),
            "c0": (1000, 194),
        }

    def test_cap_clamps_and_a_zero_cap_kind_leaves_the_distribution(self, scored, budget, recorder):
        inner = recorder()
        items = (
            _mass(scored, "d", 9, 100, "Document")
            + _mass(scored, "m", 3, 100, "Message")
            + _mass(scored, "t", 2, 100, "ToolOutput")
        )
        quotas = [QuotaEntry("Document", require=10, cap=30), QuotaEntry("ToolOutput", cap=0)]
        QuotaSlice(inner, quotas).slice(items, budget(500))
        # require: Document floor(0.1 * 500) = 50, ToolOutput 0; unassigned = 500 - 50 = 450.
        # caps: Document floor(0.3 * 500) = 150, ToolOutput 0, Message 500.
        # mass for distribution: Document 900 (150 > 50) + Message 300 (500 > 0) = 1200;
        # ToolOutput is left out (cap 0 is not > require 0).
        # Document: 50 + floor(450 * 900 / 1200) = 50 + floor(337.5) = 387 -> clamped to 150
        # Message:   0 + floor(450 * 300 / 1200) = floor(112.5) = 112
        # ToolOutput: 0 -> the inner slicer is not called for it.
        assert inner.budgets_by_first_item() == {"d0": (150, 150), "m0": (500, 112)}

    def test_percentages_convert_with_the_spec_formula_in_doubles(self, scored, budget, recorder):
        inner = recorder()
        items = _mass(scored, "a", 1, 10, "A") + _mass(scored, "b", 1, 10, "B")
        quotas = [QuotaEntry("A", require=29, cap=29), QuotaEntry("B", require=12.5, cap=57)]
        QuotaSlice(inner, quotas).slice(items, budget(100))
        # A: 29 / 100.0 * 100 = 28.999999999999996 in IEEE doubles -> floor 28 (require = cap,
        #    so no proportional share).
        # B: require floor(12.5 / 100.0 * 100) = 12; cap 57 / 100.0 * 100 = 56.99999999999999
        #    -> 56. unassigned = 100 - 28 - 12 = 60; distribution mass = B's 10 only:
        #    12 + floor(60 * 10 / 10) = 72 -> clamped to 56.
        assert inner.budgets_by_first_item() == {"a0": (28, 28), "b0": (56, 56)}


def test_kinds_are_grouped_case_insensitively_in_first_seen_order(scored, budget, recorder):
    inner = recorder()
    items = scored(
        ("t1", 10, 0.9, "tooloutput"),
        ("m1", 10, 0.8, "Message"),
        ("t2", 10, 0.7, "ToolOutput"),
        ("m2", 10, 0.6, "MESSAGE"),
    )
    result = QuotaSlice(inner, [QuotaEntry("TOOLOUTPUT", require=50)]).slice(items, budget(100))
    assert [contents for contents, _ in inner.calls] == [["t1", "t2"], ["m1", "m2"]]
    # Output: each partition's selection, concatenated in partition order.
    assert [i.content for i in result] == ["t1", "t2", "m1", "m2"]


def test_each_kind_is_sliced_within_its_own_budget(scored, budget, names):
    # Messages are denser, but Document is guaranteed 50%.
    items = _mass(scored, "m", 10, 10, "Message", score=0.9) + _mass(
        scored, "d", 10, 10, "Document", score=0.1
    )
    result = QuotaSlice(GreedySlice(), [QuotaEntry("Document", require=50)]).slice(
        items, budget(100)
    )
    # Document: 50 + floor(50 * 100 / 200) = 75; Message: floor(50 * 100 / 200) = 25.
    assert names(result) == ["m0", "m1", *[f"d{i}" for i in range(7)]]


def test_slice_detailed_gathers_count_quota_reports_from_every_partition(scored, budget):
    inner = CountQuotaSlice(
        GreedySlice(),
        [
            CountQuotaEntry("ToolOutput", require_count=1, cap_count=1),
            CountQuotaEntry("Memory", require_count=2),
            CountQuotaEntry("Document", require_count=1),
        ],
    )
    items = scored(
        ("t1", 10, 0.9, "ToolOutput"),
        ("t2", 10, 0.8, "ToolOutput"),
        ("mem", 10, 0.7, "Memory"),
    )
    slicer = QuotaSlice(inner, [])
    outcome = slicer.slice_detailed(items, budget(1000))
    assert [i.content for i in outcome.selected] == ["t1", "mem"]
    assert outcome.cap_exclusions == (CapExclusion(items[1].item, "ToolOutput", 1, 1),)
    # Each partition's inner call sees the other kinds as missing. ToolOutput is met in its
    # own partition, so it is no shortfall; Memory is short by one wherever it is judged;
    # Document has no candidates at all.
    assert outcome.shortfalls == (
        CountRequirementShortfall("Memory", 2, 1),
        CountRequirementShortfall("Document", 1, 0),
    )
    assert slice_detailed(slicer, items, budget(1000)) == outcome
    assert slicer.slice(items, budget(1000)) == outcome.selected
