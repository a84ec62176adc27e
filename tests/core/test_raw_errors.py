"""Mistakes that used to reach users as raw Python errors are one-line cupel errors naming
what was wrong and what is allowed (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cupel import ConfigurationError, ContextItem, ItemError, PolicyError, SelectionReport
from cupel.policy import Policy


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


def test_item_json_bytes_that_are_not_utf8() -> None:
    with pytest.raises(ItemError) as caught:
        ContextItem.from_json(b'{"content": "\xff", "tokens": 1}')
    assert one_line(caught.value) == (
        "ContextItem: the JSON bytes are not UTF-8 (invalid start byte at byte 13); "
        "pass text or UTF-8 bytes"
    )


def test_report_json_nested_too_deeply() -> None:
    with pytest.raises(ConfigurationError) as caught:
        SelectionReport.from_json("[" * 5000 + "]" * 5000)
    assert one_line(caught.value).startswith("SelectionReport: the JSON document is nested too")


def test_report_json_that_is_not_json() -> None:
    with pytest.raises(ConfigurationError, match=r"^SelectionReport: invalid JSON at line 1"):
        SelectionReport.from_json("{")


def test_policy_toml_as_bytes_is_read() -> None:
    policy = Policy.from_toml(b'scorer = "recency"\nslicer = "greedy"\n')
    assert policy == Policy.from_toml('scorer = "recency"\nslicer = "greedy"\n')
    with pytest.raises(PolicyError, match="TOML is not UTF-8 text"):
        Policy.from_toml(b"scorer = '\xff'")


def test_policy_load_of_a_directory_or_non_utf8_file(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(PolicyError) as caught:
        Policy.load(tmp_path / "dir.toml")
    assert one_line(caught.value).endswith("dir.toml' is a directory")
    (tmp_path / "bad.json").write_bytes(b'{"scorer": "\xff"}')
    with pytest.raises(PolicyError) as caught:
        Policy.load(tmp_path / "bad.json")
    assert one_line(caught.value).endswith("is not UTF-8 text (invalid start byte at byte 12)")


def test_a_conformance_vector_with_a_nan_score_fails(tmp_path: Path) -> None:
    from cupel.conformance import run_vector

    vector = tmp_path / "nan.toml"
    vector.write_text(
        '[test]\nname = "nan"\nstage = "placing"\nplacer = "chronological"\n\n'
        '[[items]]\ncontent = "a"\ntokens = 1\nscore = nan\ntimestamp = 2024-01-01T00:00Z\n\n'
        '[expected]\nordered_contents = ["a"]\n',
        encoding="utf-8",
    )
    assert run_vector(vector).messages == (
        "vector error: items[0].score must be a number, not NaN",
    )


def test_metadata_json_cannot_carry_is_named_when_serialised() -> None:
    """Metadata may hold any copyable value (sets, datetimes, ... from framework objects);
    serialising one JSON cannot carry names the key instead of raising json's TypeError."""
    item = ContextItem(content="a", tokens=1, metadata={"ok": [1, {"z": 2}], "x": {1, 2}})
    with pytest.raises(ItemError) as caught:
        item.to_json()
    message = one_line(caught.value)
    assert message.startswith("ContextItem.to_json: metadata['x'] is frozenset")
    assert "metadata values must be str, int, float, bool, None" in message
    assert caught.value.field == "metadata['x']"
    fine = ContextItem(content="a", tokens=1, metadata={"ok": [1, {"z": 2}]})
    assert ContextItem.from_json(fine.to_json()) == fine
