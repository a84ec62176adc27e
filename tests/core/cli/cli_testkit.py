"""Shared helpers for the CLI tests: a small realistic item set, runners and checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cupel import ContextItem
from cupel.cli import main

ITEMS: list[dict[str, Any]] = [
    {
        "content": "You are a helpful assistant.",
        "tokens": 10,
        "kind": "SystemPrompt",
        "pinned": True,
    },
    {"content": "How do I restart the service?", "tokens": 30, "timestamp": "2025-01-01T10:00:00Z"},
    {"content": "Use systemctl restart app.", "tokens": 40, "timestamp": "2025-01-01T10:01:00Z"},
    {
        "content": "Runbook: restarting app safely",
        "tokens": 50,
        "kind": "Document",
        "source": "Rag",
        "timestamp": "2025-01-01T10:02:00Z",
        "future_relevance_hint": 0.9,
        "tags": ["runbook"],
    },
    {
        "content": "Runbook: restarting app safely",
        "tokens": 50,
        "kind": "Document",
        "source": "Rag",
        "timestamp": "2025-01-01T10:03:00Z",
        "future_relevance_hint": 0.9,
        "tags": ["runbook"],
    },
    {
        "content": "It failed with exit code 3.",
        "tokens": 25,
        "timestamp": "2025-01-01T10:04:00Z",
        "priority": 5,
        "tags": ["error"],
    },
]
TOTAL_TOKENS = sum(i["tokens"] for i in ITEMS)

Run = tuple[int, str, str]


def write_items(tmp_path: Path, rows: list[dict[str, Any]], name: str = "items.json") -> Path:
    """``rows`` as a JSON array file in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return path


def context_items(rows: list[dict[str, Any]]) -> list[ContextItem]:
    """The items the CLI reads from ``rows``."""
    return [ContextItem.from_dict(row) for row in rows]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    """``cupel argv...`` in-process: (status, stdout, stderr)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def run_process(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m cupel.cli argv...`` as a real process."""
    return subprocess.run(
        [sys.executable, "-m", "cupel.cli", *argv], capture_output=True, text=True, check=False
    )


def assert_one_line_error(status: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, nothing on stdout, one ``cupel: error: ...`` line holding every needle."""
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("cupel: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
