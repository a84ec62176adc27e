"""ContextItem, ContextBudget, ContextKind/ContextSource, ScoredItem, OverflowStrategy."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel._errors import BudgetError, ConfigurationError, CupelError, ItemError
from cupel._model import (
    MAX_METADATA_DEPTH,
    ContextBudget,
    ContextItem,
    ContextKind,
    ContextSource,
    FrozenDict,
    FrozenList,
    OverflowStrategy,
    ScoredItem,
    ascii_fold,
    freeze_metadata,
    utc_timestamp,
)


@dataclass
class Marker:
    """A mutable user object stored in metadata."""

    labels: list[str]


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

    def test_metadata_values_are_preserved_but_never_shared(self) -> None:
        marker = Marker(["a"])
        item = ContextItem(content="x", tokens=1, metadata={"obj": marker, "cupel:trust": "0.5"})
        assert item.metadata["obj"] == marker and item.metadata["cupel:trust"] == "0.5"
        assert item.metadata["obj"] is not marker  # an opaque object is copied
        marker.labels.append("b")
        assert item.metadata["obj"] == Marker(["a"])

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


# -- metadata frozen all the way down -------------------------------------------------------

LIST_MUTATIONS: list[Callable[[Any], object]] = [
    lambda v: v.append(1),
    lambda v: v.extend([1]),
    lambda v: v.insert(0, 1),
    lambda v: v.pop(),
    lambda v: v.remove(v[0]),
    lambda v: v.clear(),
    lambda v: v.sort(),
    lambda v: v.reverse(),
    lambda v: v.__setitem__(0, 1),
    lambda v: v.__delitem__(0),
    lambda v: v.__iadd__([1]),
    lambda v: v.__imul__(2),
]

Point = namedtuple("Point", "x y")


class TestFrozenMetadata:
    def nested(self) -> dict[str, Any]:
        return {
            "source": {"urls": ["a", "b"], "meta": {"depth": [1, [2, 3]]}},
            "pair": (1, ["x"]),
            "point": Point(1, [2]),
            "labels": {"red", "blue"},
            "raw": bytearray(b"ab"),
            "ordered": OrderedDict(k=[1]),
            "plain": ("t", 1, 2.5, None, True),
        }

    def test_every_container_becomes_an_immutable_type(self) -> None:
        meta = ContextItem(content="x", tokens=1, metadata=self.nested()).metadata
        assert type(meta) is FrozenDict
        assert type(meta["source"]) is FrozenDict
        assert type(meta["source"]["urls"]) is FrozenList
        assert type(meta["source"]["meta"]) is FrozenDict
        assert type(meta["source"]["meta"]["depth"]) is FrozenList
        assert type(meta["source"]["meta"]["depth"][1]) is FrozenList
        assert type(meta["pair"]) is tuple and type(meta["pair"][1]) is FrozenList
        assert type(meta["point"]) is Point and type(meta["point"].y) is FrozenList
        assert type(meta["labels"]) is frozenset
        assert type(meta["raw"]) is bytes
        assert type(meta["ordered"]) is FrozenDict and type(meta["ordered"]["k"]) is FrozenList
        assert meta == self.nested()  # equal values, frozen types

    def test_unchanged_immutable_values_are_kept_as_they_are(self) -> None:
        given = self.nested()
        meta = ContextItem(content="x", tokens=1, metadata=given).metadata
        assert meta["plain"] is given["plain"]

    @pytest.mark.parametrize("mutate", LIST_MUTATIONS)
    def test_nested_lists_cannot_be_changed_in_place(self, mutate: Callable[[Any], object]) -> None:
        item = ContextItem(content="x", tokens=1, metadata={"k": {"v": [3, 1, 2]}})
        with pytest.raises(TypeError, match="FrozenList is read-only"):
            mutate(item.metadata["k"]["v"])
        assert item.metadata["k"]["v"] == [3, 1, 2]

    @pytest.mark.parametrize("mutate", MUTATIONS)
    def test_nested_dicts_cannot_be_changed_in_place(self, mutate: Callable[[Any], object]) -> None:
        item = ContextItem(content="x", tokens=1, metadata={"k": [{"a": 1}]})
        with pytest.raises(TypeError, match="FrozenDict is read-only"):
            mutate(item.metadata["k"][0])
        assert item.metadata == {"k": [{"a": 1}]}

    def test_the_callers_nested_objects_are_never_shared(self) -> None:
        given = self.nested()
        item = ContextItem(content="x", tokens=1, metadata=given)
        given["source"]["urls"].append("c")
        given["source"]["meta"]["depth"][1].append(4)
        given["pair"][1].append("y")
        given["raw"].extend(b"cd")
        assert item.metadata == self.nested()
        assert item.metadata["source"]["urls"] is not given["source"]["urls"]

    def test_items_built_from_the_same_dict_share_nothing_mutable(self) -> None:
        shared = {"tags": ["a"]}
        first = ContextItem(content="x", tokens=1, metadata=shared)
        second = ContextItem(content="y", tokens=1, metadata=shared)
        shared["tags"].append("b")
        assert first.metadata == second.metadata == {"tags": ["a"]}

    def test_copies_pickles_and_dumps_keep_the_frozen_types(self) -> None:
        item = ContextItem(content="x", tokens=1, metadata={"k": [{"a": [1]}]})
        for other in (copy.copy(item), copy.deepcopy(item), pickle.loads(pickle.dumps(item))):
            assert other == item
            assert type(other.metadata["k"]) is FrozenList
            assert type(other.metadata["k"][0]) is FrozenDict
        assert item.model_dump()["metadata"] == {"k": [{"a": [1]}]}
        assert json.loads(item.to_json())["metadata"] == {"k": [{"a": [1]}]}

    def test_the_wire_form_holds_plain_mutable_containers(self) -> None:
        wire = ContextItem(content="x", tokens=1, metadata={"k": [{"a": [1]}]}).to_dict()
        metadata = wire["metadata"]
        assert type(metadata) is dict and type(metadata["k"]) is list
        assert type(metadata["k"][0]) is dict and type(metadata["k"][0]["a"]) is list
        metadata["k"][0]["a"].append(2)  # the caller's copy to change

    def test_freeze_metadata_is_the_validators_function(self) -> None:
        given = {"k": [1, {"n": (2, [3])}]}
        frozen = freeze_metadata(given)
        assert type(frozen) is FrozenDict and frozen == given
        assert type(frozen["k"]) is FrozenList and type(frozen["k"][1]["n"][1]) is FrozenList
        assert freeze_metadata(frozen) is frozen  # frozen by construction: kept as it is
        assert ContextItem(content="x", tokens=1, metadata=frozen).metadata == frozen
        assert freeze_metadata({}) == {} and type(freeze_metadata({})) is FrozenDict

    def test_frozen_dict_and_list_freeze_their_values_too(self) -> None:
        direct = FrozenDict({"k": {"n": [1]}})
        assert type(direct["k"]) is FrozenDict and type(direct["k"]["n"]) is FrozenList
        assert type(FrozenList([[1], {"a": 2}])[0]) is FrozenList

    @pytest.mark.parametrize("bad", [{1: "x"}, {None: "x"}, {("a",): 1}])
    def test_keys_must_be_strings(self, bad: dict[Any, Any]) -> None:
        with pytest.raises(ItemError, match=r"metadata"):
            ContextItem(content="x", tokens=1, metadata=bad)
        with pytest.raises(ItemError, match=r"^metadata: keys must be strings, got"):
            freeze_metadata(bad)

    def test_a_non_mapping_is_refused(self) -> None:
        with pytest.raises(ItemError, match=r"^metadata: must be a mapping"):
            freeze_metadata([("k", 1)])  # type: ignore[arg-type]

    def test_an_object_that_can_be_neither_frozen_nor_copied_is_refused_by_path(self) -> None:
        with pytest.raises(
            ItemError, match=r"ContextItem\.metadata\['outer'\]\[0\]: a lock can be neither"
        ) as info:
            ContextItem(content="x", tokens=1, metadata={"outer": [threading.Lock()]})
        assert info.value.field == "metadata['outer'][0]"

    def test_nesting_is_limited_and_refused_with_the_path(self) -> None:
        ok: Any = "leaf"
        for _ in range(MAX_METADATA_DEPTH):  # the metadata mapping is the outermost level
            ok = {"a": ok}
        assert ContextItem(content="x", tokens=1, metadata=ok).metadata == ok
        too_deep = {"a": ok}
        with pytest.raises(ItemError, match=r"ContextItem\.metadata\['a'\]\['a'\].*nested deeper"):
            ContextItem(content="x", tokens=1, metadata=too_deep)

    def test_a_container_holding_itself_is_refused_not_a_recursion_error(self) -> None:
        loop: list[Any] = [1]
        loop.append(loop)
        with pytest.raises(ItemError, match=r"nested deeper than 100 levels"):
            ContextItem(content="x", tokens=1, metadata={"loop": loop})

    def test_deeply_nested_json_is_an_item_error(self) -> None:
        deep = '{"content": "x", "tokens": 1, "metadata": {"a": ' + "[" * 100_000
        deep += "]" * 100_000 + "}}"
        with pytest.raises(ItemError, match=r"^ContextItem: the JSON document is nested too"):
            ContextItem.from_json(deep)
        nested = {"content": "x", "tokens": 1, "metadata": {"a": [[[[[[1]]]]]]}}
        assert ContextItem.from_json(json.dumps(nested)).metadata == {"a": [[[[[[1]]]]]]}
        with pytest.raises(BudgetError, match=r"nested too deeply"):
            ContextBudget.from_json('{"max_tokens": ' + "[" * 100_000 + "]" * 100_000 + "}")


class TestUnicodeText:
    SURROGATE = "bad \udc80 text"

    @pytest.mark.parametrize(
        ("field", "value", "where"),
        [
            ("kind", SURROGATE, r"ContextItem\.kind: ContextKind must be valid Unicode"),
            ("source", SURROGATE, r"ContextItem\.source: ContextSource must be valid Unicode"),
            ("tags", ("ok", SURROGATE), r"ContextItem\.tags\[1\]: text must be valid Unicode"),
            (
                "metadata",
                {"k": [{"n": SURROGATE}]},
                r"ContextItem\.metadata\['k'\]\[0\]\['n'\]: text must be valid Unicode",
            ),
            ("metadata", {SURROGATE: 1}, r"ContextItem\.metadata: key .* must be valid Unicode"),
            ("content", SURROGATE, r"ContextItem\.content"),
        ],
    )
    def test_lone_surrogates_are_refused_at_validation(
        self, field: str, value: Any, where: str
    ) -> None:
        fields: dict[str, Any] = {"content": "x", "tokens": 1, field: value}
        with pytest.raises(ItemError, match=where):
            ContextItem(**fields)

    def test_valid_non_ascii_text_is_accepted_and_serializes(self) -> None:
        item = ContextItem(
            content="café ☕", tokens=1, kind="Mémoire", tags=("日本",), metadata={"ключ": ["ü"]}
        )
        assert json.loads(item.to_json())["metadata"] == {"ключ": ["ü"]}
        item.to_json().encode("utf-8")  # every valid item encodes


class TestTimestampRange:
    @pytest.mark.parametrize(
        "text", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "0001-01-01T04:59+05:00"]
    )
    def test_instants_outside_the_utc_range_are_item_errors(self, text: str) -> None:
        with pytest.raises(
            ItemError, match=r"ContextItem\.timestamp: .* outside the range"
        ) as info:
            ContextItem(content="x", tokens=1, timestamp=datetime.fromisoformat(text))
        assert info.value.field == "timestamp"
        with pytest.raises(ItemError, match=r"outside the range"):
            ContextItem.from_json(json.dumps({"content": "x", "tokens": 1, "timestamp": text}))

    @pytest.mark.parametrize(
        "text",
        ["9999-12-31T23:59:59.999999+00:00", "9999-12-31T18:59:59+00:00", "0001-01-01T00:00:00Z"],
    )
    def test_the_extremes_of_the_utc_range_are_accepted(self, text: str) -> None:
        item = ContextItem(content="x", tokens=1, timestamp=datetime.fromisoformat(text))
        assert item.timestamp == datetime.fromisoformat(text)
        assert ContextItem.from_json(item.to_json()) == item

    def test_the_helper_is_shared_with_the_adapters(self) -> None:
        plus_two = timezone(timedelta(hours=2))
        assert utc_timestamp(datetime(2024, 1, 1, 14, tzinfo=plus_two)) == datetime(
            2024, 1, 1, 12, tzinfo=timezone.utc
        )
        assert utc_timestamp(datetime(2024, 1, 1)).tzinfo is timezone.utc
        with pytest.raises(ItemError, match=r"^Document\.timestamp: .* outside the range"):
            utc_timestamp(
                datetime.max.replace(tzinfo=timezone(-timedelta(hours=1))),
                where="Document.timestamp",
            )
        with pytest.raises(ItemError, match=r"must be a datetime"):
            utc_timestamp("2024-01-01")  # type: ignore[arg-type]


_FLAT_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.text(alphabet=st.sampled_from(["a", "é", "\ud800"])),
    st.tuples(st.integers(), st.text(alphabet=st.sampled_from(["x", "\udc00"]))),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


@settings(max_examples=examples(400), deadline=None)
@given(st.dictionaries(st.text(alphabet=st.sampled_from(["k", "é", "\ud800"])), _FLAT_VALUES))
def test_flat_metadata_freezes_as_the_walk_does(value: dict[str, object]) -> None:
    """A flat mapping skips the recursive walk; the result (or the error) is the walk's."""
    from cupel._frozen import _freeze

    def outcome(freeze: object) -> object:
        try:
            frozen = freeze()  # type: ignore[operator]
        except ItemError as error:
            return ("error", type(error))
        return (type(frozen), dict(frozen), {k: type(v) for k, v in frozen.items()})

    if value:  # (an empty mapping is the shared EMPTY)
        walked = outcome(lambda: _freeze(value, ["metadata"], 1))
        assert outcome(lambda: freeze_metadata(value)) == walked
