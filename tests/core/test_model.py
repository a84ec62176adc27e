"""ContextItem, ContextBudget, ContextKind/ContextSource, ScoredItem, OverflowStrategy."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cupel._errors import BudgetError, ConfigurationError, CupelError, ItemError
from cupel._model import (
    ContextBudget,
    ContextItem,
    ContextKind,
    ContextSource,
    FrozenDict,
    OverflowStrategy,
    ScoredItem,
    ascii_fold,
)

# Every way to change a dict in place.
MUTATIONS: list[Callable[[dict[Any, Any]], object]] = [
    lambda d: d.__setitem__("k", 1),
    lambda d: d.__delitem__(next(iter(d))),
    lambda d: d.update({"k": 1}),
    lambda d: d.setdefault("k", 1),
    lambda d: d.pop(next(iter(d))),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.__ior__({"k": 1}),
]


class TestContextKind:
    def test_well_known_values(self) -> None:
        assert [
            str(k)
            for k in (
                ContextKind.MESSAGE,
                ContextKind.DOCUMENT,
                ContextKind.TOOL_OUTPUT,
                ContextKind.MEMORY,
                ContextKind.SYSTEM_PROMPT,
            )
        ] == ["Message", "Document", "ToolOutput", "Memory", "SystemPrompt"]

    @pytest.mark.parametrize("spelling", ["Message", "message", "MESSAGE", "mEsSaGe"])
    def test_ascii_case_insensitive_equality_and_hash(self, spelling: str) -> None:
        kind = ContextKind(spelling)
        assert kind == ContextKind.MESSAGE
        assert kind == spelling.upper()
        assert spelling.lower() == kind  # reflected comparison from a plain str
        assert hash(kind) == hash(ContextKind.MESSAGE)
        assert {ContextKind.MESSAGE: 1}[kind] == 1

    def test_spelling_is_preserved(self) -> None:
        assert str(ContextKind("toolOUTPUT")) == "toolOUTPUT"

    def test_extensible(self) -> None:
        assert ContextKind("Scratchpad") == "scratchpad"
        assert ContextKind("Scratchpad") != ContextKind.MEMORY

    def test_folding_is_ascii_only(self) -> None:
        # str.lower() would fold these; the spec's ASCII folding must not.
        assert ContextKind("Ä") != ContextKind("ä")
        assert ascii_fold("ÄBC") == "Äbc"
        assert ContextKind("K") != ContextKind("\u212a")  # KELVIN SIGN

    @pytest.mark.parametrize("bad", ["", "   ", "\t\n"])
    def test_rejects_empty_or_whitespace(self, bad: str) -> None:
        with pytest.raises(ItemError, match="non-whitespace"):
            ContextKind(bad)

    def test_rejects_non_string(self) -> None:
        with pytest.raises(ItemError, match="must be a string, got int 3"):
            ContextKind(3)  # type: ignore[arg-type]

    def test_source_well_known_and_case_insensitive(self) -> None:
        assert ContextSource("rag") == ContextSource.RAG
        assert ContextSource.CHAT == "CHAT"
        assert str(ContextSource.TOOL) == "Tool"

    def test_interned(self) -> None:
        assert ContextKind("Document") is ContextKind.DOCUMENT


class TestContextItem:
    def test_defaults(self) -> None:
        item = ContextItem(content="hello", tokens=2)
        assert item.kind == ContextKind.MESSAGE
        assert item.source == ContextSource.CHAT
        assert (item.priority, item.tags, item.metadata, item.timestamp) == (None, (), {}, None)
        assert (item.future_relevance_hint, item.pinned, item.original_tokens) == (
            None,
            False,
            None,
        )

    def test_all_eleven_fields(self) -> None:
        ts = datetime(2024, 6, 1, 12, tzinfo=timezone.utc)
        item = ContextItem(
            content="c",
            tokens=3,
            kind="Document",
            source="Rag",
            priority=5,
            tags=("a", "b"),
            metadata={"k": "v"},
            timestamp=ts,
            future_relevance_hint=0.7,
            pinned=True,
            original_tokens=10,
        )
        assert len(ContextItem.model_fields) == 11
        assert item.tags == ("a", "b") and item.metadata == {"k": "v"} and item.timestamp == ts

    def test_immutable(self) -> None:
        item = ContextItem(content="x", tokens=1)
        with pytest.raises(Exception, match="frozen"):
            item.tokens = 5  # type: ignore[misc]

    @pytest.mark.parametrize("mutate", MUTATIONS)
    def test_metadata_cannot_be_changed_in_place(self, mutate: Callable[[Any], object]) -> None:
        item = ContextItem(content="x", tokens=1, metadata={"cupel:trust": "0.5"})
        with pytest.raises(TypeError, match="read-only"):
            mutate(item.metadata)
        assert item.metadata == {"cupel:trust": "0.5"}

    def test_metadata_is_a_copy_of_the_given_dict(self) -> None:
        given = {"a": 1}
        item = ContextItem(content="x", tokens=1, metadata=given)
        given["b"] = 2
        assert item.metadata == {"a": 1} and isinstance(item.metadata, dict)
        assert isinstance(ContextItem(content="y", tokens=1).metadata, FrozenDict)

    def test_copies_and_pickles_stay_equal_and_read_only(self) -> None:
        item = ContextItem(content="x", tokens=1, tags=("t",), metadata={"k": [1]})
        for other in (copy.copy(item), copy.deepcopy(item), pickle.loads(pickle.dumps(item))):
            assert other == item and isinstance(other.metadata, FrozenDict)
        assert item.model_dump()["metadata"] == {"k": [1]}
        assert json.loads(item.model_dump_json())["metadata"] == {"k": [1]}

    @pytest.mark.parametrize("hint", [True, "0.5", b"0.5"])
    def test_future_relevance_hint_must_be_a_number(self, hint: object) -> None:
        with pytest.raises(
            ItemError, match=r"ContextItem\.future_relevance_hint: must be a number"
        ):
            ContextItem(content="x", tokens=1, future_relevance_hint=hint)  # type: ignore[arg-type]

    def test_integer_hint_is_a_float(self) -> None:
        assert (
            ContextItem(content="x", tokens=1, future_relevance_hint=1).future_relevance_hint == 1.0
        )

    def test_empty_content_rejected_naming_the_field(self) -> None:
        with pytest.raises(
            ItemError, match=r"ContextItem\.content: .*at least 1 character, got ''"
        ):
            ContextItem(content="", tokens=1)

    def test_error_is_a_value_error_with_structured_fields(self) -> None:
        with pytest.raises(ValueError) as info:
            ContextItem(content="x", tokens="many")  # type: ignore[arg-type]
        err = info.value
        assert isinstance(err, CupelError) and isinstance(err, ConfigurationError)
        assert err.field == "tokens" and err.value == "many"  # type: ignore[attr-defined]

    @pytest.mark.parametrize("tokens", [1.5, True, "3"])
    def test_tokens_must_be_an_int(self, tokens: object) -> None:
        with pytest.raises(ItemError, match=r"ContextItem\.tokens"):
            ContextItem(content="x", tokens=tokens)  # type: ignore[arg-type]

    def test_unknown_field_rejected(self) -> None:
        with pytest.raises(ItemError, match=r"ContextItem\.bogus: Extra inputs are not permitted"):
            ContextItem(content="x", tokens=1, bogus=1)  # type: ignore[call-arg]

    def test_negative_tokens_allowed_at_construction(self) -> None:
        assert ContextItem(content="x", tokens=-5).tokens == -5

    def test_naive_timestamp_is_utc_and_aware_is_converted(self) -> None:
        naive = ContextItem(content="x", tokens=1, timestamp=datetime(2024, 1, 1, 12))
        assert naive.timestamp == datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
        plus2 = timezone(timedelta(hours=2))
        aware = ContextItem(content="x", tokens=1, timestamp=datetime(2024, 1, 1, 14, tzinfo=plus2))
        assert aware.timestamp == naive.timestamp
        assert aware.timestamp is not None and aware.timestamp.utcoffset() == timedelta(0)

    def test_metadata_preserved(self) -> None:
        marker = object()
        item = ContextItem(content="x", tokens=1, metadata={"obj": marker, "cupel:trust": "0.5"})
        assert item.metadata["obj"] is marker

    def test_hashable_despite_dict_metadata(self) -> None:
        a = ContextItem(content="x", tokens=1, metadata={"a": [1]})
        b = ContextItem(content="x", tokens=1, metadata={"a": [1]})
        assert a == b and hash(a) == hash(b)

    def test_json_round_trip(self) -> None:
        item = ContextItem(
            content="c",
            tokens=3,
            kind="ToolOutput",
            source="Tool",
            priority=2,
            tags=("t",),
            metadata={"cupel:trust": "0.9"},
            timestamp=datetime(2024, 5, 1, tzinfo=timezone.utc),
            future_relevance_hint=0.25,
            pinned=True,
            original_tokens=7,
        )
        wire = json.loads(item.to_json())
        assert wire["future_relevance_hint"] == 0.25 and wire["timestamp"] == "2024-05-01T00:00:00Z"
        assert ContextItem.from_json(item.to_json()) == item

    def test_minimal_wire_form_omits_unset_fields(self) -> None:
        assert ContextItem(content="x", tokens=1).to_dict() == {
            "content": "x",
            "tokens": 1,
            "kind": "Message",
            "source": "Chat",
        }

    def test_accepts_spec_camel_case_on_input(self) -> None:
        item = ContextItem.from_dict(
            {"content": "x", "tokens": 1, "futureRelevanceHint": 0.5, "originalTokens": 9}
        )
        assert item.future_relevance_hint == 0.5 and item.original_tokens == 9

    def test_from_dict_rejects_non_objects(self) -> None:
        with pytest.raises(ItemError, match="expected a JSON object, got list"):
            ContextItem.from_dict([1, 2])  # type: ignore[arg-type]


class TestContextBudget:
    def test_defaults(self) -> None:
        budget = ContextBudget(max_tokens=100, target_tokens=80)
        assert budget.output_reserve == 0 and budget.reserved_slots == {}
        assert budget.estimation_safety_margin_percent == 0.0

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"max_tokens": -1, "target_tokens": 0}, r"max_tokens: must be >= 0, got -1"),
            ({"max_tokens": 10, "target_tokens": -1}, r"target_tokens: must be >= 0, got -1"),
            (
                {"max_tokens": 10, "target_tokens": 11},
                r"target_tokens: must be <= max_tokens \(10\), got 11",
            ),
            (
                {"max_tokens": 10, "target_tokens": 5, "output_reserve": -1},
                r"output_reserve: must be >= 0, got -1",
            ),
            (
                {"max_tokens": 10, "target_tokens": 5, "output_reserve": 11},
                r"output_reserve: must be <= max_tokens \(10\), got 11",
            ),
            (
                {"max_tokens": 10, "target_tokens": 5, "estimation_safety_margin_percent": -0.5},
                r"estimation_safety_margin_percent: must be between 0.0 and 100.0, got -0.5",
            ),
            (
                {"max_tokens": 10, "target_tokens": 5, "estimation_safety_margin_percent": 100.5},
                r"estimation_safety_margin_percent: must be between 0.0 and 100.0, got 100.5",
            ),
            (
                {
                    "max_tokens": 10,
                    "target_tokens": 5,
                    "estimation_safety_margin_percent": float("nan"),
                },
                r"estimation_safety_margin_percent: must be between",
            ),
            (
                {"max_tokens": 10, "target_tokens": 5, "reserved_slots": {"Memory": -2}},
                r"reserved_slots\['Memory'\]: must be >= 0, got -2",
            ),
        ],
    )
    def test_seven_validation_rules(self, kwargs: dict[str, object], message: str) -> None:
        with pytest.raises(BudgetError, match=message) as info:
            ContextBudget(**kwargs)  # type: ignore[arg-type]
        assert isinstance(info.value, ValueError)
        assert info.value.field is not None

    def test_boundaries_are_valid(self) -> None:
        ContextBudget(max_tokens=0, target_tokens=0)
        ContextBudget(
            max_tokens=10,
            target_tokens=10,
            output_reserve=10,
            estimation_safety_margin_percent=100.0,
            reserved_slots={"Message": 0},
        )

    @pytest.mark.parametrize("value", [10.0, True, "10"])
    def test_token_fields_must_be_integers(self, value: object) -> None:
        with pytest.raises(BudgetError, match="max_tokens: must be an integer"):
            ContextBudget(max_tokens=value, target_tokens=0)  # type: ignore[arg-type]

    def test_reserved_slot_kinds_that_differ_only_by_case_are_rejected(self) -> None:
        with pytest.raises(BudgetError, match="are the same kind"):
            ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={"Memory": 1, "memory": 2})

    def test_reserved_slots_keys_are_kinds(self) -> None:
        budget = ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={"memory": 2})
        assert budget.reserved_slots[ContextKind.MEMORY] == 2
        assert list(budget.reserved_slots) == [ContextKind.MEMORY]

    def test_reserved_slots_look_up_plain_strings_as_kinds(self) -> None:
        slots = ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={"Memory": 2})
        slots_map = slots.reserved_slots
        assert slots_map["memory"] == slots_map["MEMORY"] == slots_map.get("Memory") == 2
        assert "mEmOrY" in slots_map and "Message" not in slots_map and "" not in slots_map
        assert slots_map.get("Message", 0) == 0
        with pytest.raises(KeyError):
            slots_map["Message"]
        assert copy.deepcopy(slots) == slots == pickle.loads(pickle.dumps(slots))

    def test_json_round_trip_and_camel_case(self) -> None:
        budget = ContextBudget(
            max_tokens=100,
            target_tokens=80,
            output_reserve=10,
            reserved_slots={"Memory": 5},
            estimation_safety_margin_percent=2.5,
        )
        assert ContextBudget.from_json(budget.to_json()) == budget
        camel = ContextBudget.from_dict(
            {
                "maxTokens": 100,
                "targetTokens": 80,
                "outputReserve": 10,
                "reservedSlots": {"Memory": 5},
                "estimationSafetyMarginPercent": 2.5,
            }
        )
        assert camel == budget

    def test_immutable(self) -> None:
        budget = ContextBudget(max_tokens=10, target_tokens=5)
        with pytest.raises(Exception, match="frozen"):
            budget.max_tokens = 3  # type: ignore[misc]

    @pytest.mark.parametrize("mutate", MUTATIONS)
    def test_reserved_slots_cannot_be_changed_in_place(
        self, mutate: Callable[[Any], object]
    ) -> None:
        budget = ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={"Memory": 1})
        with pytest.raises(TypeError, match="read-only"):
            mutate(budget.reserved_slots)
        assert budget.reserved_slots == {ContextKind.MEMORY: 1}

    @pytest.mark.parametrize("margin", [True, "5"])
    def test_safety_margin_must_be_a_number(self, margin: object) -> None:
        with pytest.raises(
            BudgetError, match=r"estimation_safety_margin_percent: must be a number, got"
        ):
            ContextBudget(
                max_tokens=10,
                target_tokens=5,
                estimation_safety_margin_percent=margin,  # type: ignore[arg-type]
            )

    @pytest.mark.parametrize("kind", ["", "  "])
    def test_reserved_slot_kind_must_be_a_kind(self, kind: str) -> None:
        with pytest.raises(
            BudgetError, match=r"ContextBudget\.reserved_slots: ContextKind must be"
        ):
            ContextBudget(max_tokens=10, target_tokens=5, reserved_slots={kind: 1})


def test_scored_item_is_a_pair() -> None:
    item = ContextItem(content="x", tokens=1)
    pair = ScoredItem(item, 0.5)
    assert pair.item is item and pair.score == 0.5
    assert tuple(pair) == (item, 0.5)


class TestOverflowStrategy:
    def test_default_is_throw_and_names(self) -> None:
        assert [s.value for s in OverflowStrategy] == ["Throw", "Truncate", "Proceed"]

    @pytest.mark.parametrize("name", ["truncate", "TRUNCATE", "Truncate"])
    def test_parse_case_insensitive(self, name: str) -> None:
        assert OverflowStrategy.parse(name) is OverflowStrategy.TRUNCATE

    def test_parse_error_lists_allowed(self) -> None:
        with pytest.raises(
            ConfigurationError, match="must be one of Throw, Truncate, Proceed, got 'drop'"
        ):
            OverflowStrategy.parse("drop")
