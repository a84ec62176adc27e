"""docs/cli.md stays true: its ``console`` examples run against the files it defines.

A fenced block whose info string is ``<lang> file=NAME`` defines a file. In a ``console``
block, each ``$ cupel ...`` line is run in-process (in a directory holding those files); the
lines after it must appear, in order, in the command's stdout followed by its stderr; a line
``...`` stands for any number of lines.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from cli_testkit import run

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
FENCE = re.compile(r"^```(\S+)([^\n]*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def fenced() -> list[tuple[str, str, str]]:
    return [(m[1], m[2].strip(), m[3]) for m in FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def examples() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for lang, _, body in fenced():
        if lang != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            else:
                out[-1][1].append(line)
    return out


def matches_in_order(expected: list[str], actual: list[str]) -> bool:
    position = 0
    for line in expected:
        if line == "...":
            continue
        while position < len(actual) and actual[position].rstrip() != line.rstrip():
            position += 1
        if position == len(actual):
            return False
        position += 1
    return True


@pytest.fixture
def doc_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for _, info, body in fenced():
        if info.startswith("file="):
            (tmp_path / info.removeprefix("file=")).write_text(body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_page_documents_every_command() -> None:
    commands = {shlex.split(command)[1] for command, _ in examples()}
    assert commands == {"select", "explain", "compare", "min-budget", "demo"}
    assert {"items.jsonl", "newest.toml", "relevant.json"} <= {
        info.removeprefix("file=") for _, info, _ in fenced() if info.startswith("file=")
    }


@pytest.mark.parametrize(("command", "expected"), examples(), ids=[c for c, _ in examples()])
def test_console_example_runs_as_shown(
    capsys: pytest.CaptureFixture[str], doc_files: Path, command: str, expected: list[str]
) -> None:
    argv = shlex.split(command)
    assert argv[0] == "cupel"
    status, out, err = run(capsys, *argv[1:])
    actual = (out + err).splitlines()
    assert matches_in_order(expected, actual), "\n".join(actual)
    is_error = any(line.startswith("cupel: error: ") for line in expected)
    assert status == (2 if is_error else 0)
