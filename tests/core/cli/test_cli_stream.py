"""``--report json`` streams long arrays (the window, a report's entries) one element a
line as they are made; the document parses to what the indented, all-at-once form was."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import ITEMS, run, write_items
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    BudgetExceeded,
    ContextBudget,
    ContextItem,
    ExcludedItem,
    GreedySlice,
    IncludedItem,
    InclusionReason,
    KnapsackSlice,
    OverflowStrategy,
    Pipeline,
    RecencyScorer,
    UShapedPlacer,
)
from cupel.cli._commands import _entry_texts, _streamed
from cupel.cli._io import Lines, dump_json, write_json


def _items() -> list[ContextItem]:
    return [
        ContextItem(
            content=f'item {i} \u2028 café "quoted" \\ {"x" * (i % 7)}',
            tokens=10 + i % 13,
            kind=("Message", "Document", "ToolOutput")[i % 3],
            tags=("a", "b")[: i % 3],
            metadata={"score": math.nan, "n": [i, {"deep": None}]} if i % 5 == 0 else {},
            timestamp=f"2025-01-01T00:{i % 60:02d}:00Z",
            pinned=i == 3,
        )
        for i in range(60)
    ]


def _streamed_text(document: Any) -> str:
    out = io.StringIO()
    write_json(document, out)
    return out.getvalue()


@pytest.mark.parametrize(
    "pipeline",
    [
        Pipeline(RecencyScorer(), GreedySlice(), UShapedPlacer()),
        Pipeline(
            RecencyScorer(),
            KnapsackSlice(bucket_size=7),
            UShapedPlacer(),
            overflow_strategy=OverflowStrategy.PROCEED,
        ),
    ],
)
def test_the_streamed_report_parses_to_the_indented_document(pipeline: Pipeline) -> None:
    items = _items()
    report = pipeline.dry_run(items, ContextBudget(max_tokens=300, target_tokens=250)).report
    assert report is not None and report.included and report.excluded
    window = [entry.item.to_dict() for entry in report.included]
    whole = dump_json({"window": window, "report": report.to_dict()})
    streamed = _streamed_text({"window": Lines(window), "report": _streamed(report)})
    assert json.loads(streamed) == json.loads(whole)
    assert list(json.loads(streamed)["report"]) == list(report.to_dict())
    assert "NaN" not in streamed and streamed.endswith("}\n")
    assert streamed != whole + "\n"  # the entries are one a line, not indented


@settings(max_examples=examples(200), deadline=None)
@given(
    scores=st.lists(st.floats() | st.integers(-3, 3).map(float), min_size=1, max_size=8),
    reuse=st.booleans(),
)
def test_entry_texts_are_the_entries_wire_form_as_json(scores: list[float], reuse: bool) -> None:
    """Each entry's text is exactly ``dump_json(entry.to_dict(), indent=None)`` — a
    non-finite score written as ``null``, a shared reason as often as it is shared, the
    item's text taken from the texts given (the window's) when there are any."""
    items = _items()[: len(scores)]
    shared = BudgetExceeded(item_tokens=9, available_tokens=4)
    excluded = [
        ExcludedItem(item, score, shared) for item, score in zip(items, scores, strict=False)
    ]
    included = [IncludedItem(e.item, e.score, InclusionReason.SCORED) for e in excluded]
    for entries in (excluded, included):
        texts = [dump_json(e.item.to_dict(), indent=None) for e in entries] if reuse else None
        assert list(_entry_texts(entries, texts)) == [
            dump_json(e.to_dict(), indent=None) for e in entries
        ]


def test_encoded_lines_are_written_as_given() -> None:
    texts = [dump_json({"a": [1, math.nan]}, indent=None), dump_json("\u2028", indent=None)]
    assert _streamed_text({"x": Lines(texts, encoded=True)}) == _streamed_text(
        {"x": Lines([{"a": [1, None]}, "\u2028"])}
    )


def test_a_document_without_streamed_arrays_is_written_as_before() -> None:
    document = {"a": [1, {"b": []}], "c": {}, "d": {"e": math.inf, "f": "\u2028"}, "g": []}
    assert _streamed_text(document) == dump_json(document) + "\n"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: Lines([]), []),
        (lambda: {"empty": Lines(iter(())), "then": 1}, {"empty": [], "then": 1}),
        (
            lambda: {"outer": {"inner": Lines([[], {}, [1, [2]], "s", None, math.nan])}, "t": []},
            {"outer": {"inner": [[], {}, [1, [2]], "s", None, None]}, "t": []},
        ),
        (lambda: Lines(iter([{"k": "\u2028\n"}])), [{"k": "\u2028\n"}]),
    ],
)
def test_streamed_arrays_parse_as_arrays(make: Any, expected: Any) -> None:
    assert json.loads(_streamed_text(make())) == expected


class _Recorder(io.StringIO):
    """A stream noting how many elements had been made at each write."""

    def __init__(self, made: list[int]) -> None:
        super().__init__()
        self.made = made
        self.at: list[int] = []

    def write(self, text: str) -> int:
        self.at.append(self.made[0])
        return super().write(text)


def test_elements_are_written_as_they_are_made() -> None:
    made = [0]

    def elements() -> Iterator[dict[str, int]]:
        for i in range(10_000):
            made[0] += 1
            yield {"i": i}

    out = _Recorder(made)
    write_json({"entries": Lines(elements())}, out)
    assert min(n for n in out.at if n) < 2_000  # the first lines left before the last was made
    assert json.loads(out.getvalue()) == {"entries": [{"i": i} for i in range(10_000)]}


def test_select_report_json_holds_the_window_select_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = str(write_items(tmp_path, ITEMS))
    status, text_out, _ = run(capsys, "select", path, "--max-tokens", "100")
    assert status == 0
    status, json_out, err = run(capsys, "select", path, "--max-tokens", "100", "--report", "json")
    assert status == 0 and err == ""
    document = json.loads(json_out)
    assert document["window"] == json.loads(text_out)
    report = document["report"]
    assert list(report)[:5] == [
        "events",
        "included",
        "excluded",
        "total_candidates",
        "total_tokens_considered",
    ]
    assert [e["item"] for e in report["included"]] == document["window"]
    assert report["total_candidates"] == len(report["included"]) + len(report["excluded"])
