"""Strict JSON in and out (real processes): JSON Lines split on ``\\n`` only, numbers
strict parsers accept, errors that name the file, the line or item and the field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import ITEMS, cupel, write_items

from cupel import ContextItem
from cupel.cli._io import dump_json

SEPARATORS = "\u2028\u2029\u0085"


def strict_loads(text: str) -> Any:
    """``json.loads`` as strict parsers behave: NaN / Infinity are errors."""

    def refuse(token: str) -> None:
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
def test_jsonl_lines_written_by_cupel_with_unicode_separators_read_back(
    tmp_path: Path,
) -> None:
    items = [
        ContextItem(content=f"first{SEPARATORS}line", tokens=4, timestamp="2025-01-01T00:00:00Z"),
        ContextItem(
            content="second",
            tokens=3,
            metadata={"note": f"a{SEPARATORS}b"},
            timestamp="2025-01-02T00:00:00Z",
        ),
        ContextItem(content="third\r", tokens=2, timestamp="2025-01-03T00:00:00Z"),
    ]
    path = tmp_path / "items.jsonl"
    # One wire-form item per line, unescaped, as cupel writes JSON (ensure_ascii=False).
    path.write_text(
        "".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\r\n" for i in items),
        encoding="utf-8",
    )
    assert SEPARATORS in path.read_text(encoding="utf-8")
    proc = cupel("select", str(path), "--max-tokens", "100")
    assert proc.returncode == 0, proc.stderr
    window = json.loads(proc.stdout)
    assert [w["content"] for w in window] == [i.content for i in items]
    assert window[1]["metadata"] == {"note": f"a{SEPARATORS}b"}
    # cupel's own output, fed back in, is read back unchanged.
    again = tmp_path / "window.json"
    again.write_text(proc.stdout, encoding="utf-8")
    proc2 = cupel("select", str(again), "--max-tokens", "100")
    assert proc2.returncode == 0 and json.loads(proc2.stdout) == window


@pytest.mark.slow
def test_line_numbers_count_newlines_only(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    good = json.dumps({"content": f"x{SEPARATORS}y", "tokens": 1}, ensure_ascii=False)
    path.write_text(f"{good}\n{good}\n{{broken\n", encoding="utf-8")
    proc = cupel("select", str(path), "--max-tokens", "100")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"cupel: error: {path}, line 3: invalid JSON at column 2")


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_a_5000_digit_integer_is_one_clear_error_naming_the_place(
    tmp_path: Path, layout: str
) -> None:
    rows: list[Any] = [dict(ITEMS[1]), dict(ITEMS[2]), {**ITEMS[5], "metadata": {"big": 0}}]
    huge = "9" * 5000
    if layout == "jsonl":
        path = tmp_path / "items.jsonl"
        text = "".join(json.dumps(r) + "\n" for r in rows).replace('"big": 0', f'"big": {huge}')
        where = f"{path}, line 3"
    else:
        path = tmp_path / "items.json"
        text = json.dumps(rows).replace('"big": 0', f'"big": {huge}')
        where = f"{path}: item 2"
    path.write_text(text, encoding="utf-8")
    proc = cupel("select", str(path), "--max-tokens", "100")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"cupel: error: {where}: metadata.big: an integer of 5,000 digits is too long "
        "(at most 4,300)\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("NaN", "NaN is not a JSON number (strict JSON has no NaN or Infinity)"),
        ("Infinity", "Infinity is not a JSON number (strict JSON has no NaN or Infinity)"),
        ("-Infinity", "-Infinity is not a JSON number (strict JSON has no NaN or Infinity)"),
        ("1e400", "1e400 is out of range for a 64-bit float"),
    ],
)
def test_non_finite_numbers_are_refused_on_input(tmp_path: Path, token: str, why: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        json.dumps(ITEMS[1])
        + "\n"
        + f'{{"content": "c", "tokens": 2, "metadata": {{"scores": [1.5, {token}]}}}}\n',
        encoding="utf-8",
    )
    proc = cupel("select", str(path), "--max-tokens", "100", "--report", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"cupel: error: {path}, line 2: metadata.scores[1]: {why}\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["select", "{items}", "--max-tokens", "0"],
        ["select", "{items}", "--max-tokens", "0", "--report", "json"],
        ["explain", "{items}", "--max-tokens", "0", "--report", "json"],
        ["explain", "{items}", "--max-tokens", "100", "--report", "json"],
        [
            "compare",
            "{items}",
            "--max-tokens",
            "0",
            "--policy",
            "chat",
            "--policy",
            "rag",
            "--report",
            "json",
        ],
        ["min-budget", "{items}", "--item", "Use systemctl", "--report", "json"],
        ["demo", "--report", "json"],
        ["conformance", "--report", "json"],
    ],
)
def test_json_output_parses_strictly(tmp_path: Path, argv: list[str]) -> None:
    rows = [{k: v for k, v in row.items() if k != "pinned"} for row in ITEMS]
    path = write_items(tmp_path, rows)
    repo = Path(__file__).resolve().parents[3]
    proc = cupel(*(a.replace("{items}", str(path)) for a in argv), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    document = strict_loads(proc.stdout)
    assert isinstance(document, list if argv[-1] != "json" else dict)


def test_non_finite_floats_are_written_as_null() -> None:
    document = {"a": math.nan, "b": [1.0, math.inf, -math.inf], "c": {"d": 0.5}}
    text = dump_json(document)
    assert strict_loads(text) == {"a": None, "b": [1.0, None, None], "c": {"d": 0.5}}
    assert "NaN" not in text and "Infinity" not in text


@pytest.mark.slow
def test_empty_input_says_so_on_stderr(tmp_path: Path) -> None:
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n \n"), ("empty.json", "[]")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        proc = cupel("select", str(path), "--max-tokens", "100")
        assert proc.returncode == 0
        assert json.loads(proc.stdout) == []
        assert proc.stderr.splitlines()[0] == (
            f"cupel: warning: {path} holds no items: there is nothing to select"
        )
    proc = cupel("explain", "-", "--max-tokens", "100", "--report", "json", stdin="")
    assert proc.returncode == 0 and strict_loads(proc.stdout)["summary"]["candidates"] == 0
    assert proc.stderr == "cupel: warning: <stdin> holds no items: there is nothing to select\n"
