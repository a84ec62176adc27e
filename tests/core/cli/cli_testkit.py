"""Shared helpers for the CLI tests: a small realistic item set, runners and checks."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
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


def many_items(count: int) -> list[dict[str, Any]]:
    """``count`` dated chat messages of varied sizes."""
    return [
        {
            "content": f"message {i}: " + "detail " * (i % 40),
            "tokens": 5 + i % 40,
            "timestamp": f"2025-01-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
        }
        for i in range(count)
    ]


def write_jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "items.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
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


def cupel(
    *argv: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m cupel argv...`` as a real process (stdout and stderr are pipes)."""
    return subprocess.run(
        [sys.executable, "-m", "cupel", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )


SLOW_STEPS = """\
import time

from cupel.cli import _progress

_step = _progress.Progress.step


def _slow_step(self, note=""):
    _step(self, note)
    time.sleep({pause})


_progress.Progress.step = _slow_step
"""
"""A ``sitecustomize`` that makes every progress step of the process take ``pause`` seconds
longer (a long search, so that a Ctrl-C sent once the bar shows lands during it)."""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cupel_on_terminal(
    *argv: str,
    interrupt_when: str | None = None,
    timeout: float = 120.0,
    step_pause: float | None = None,
    scratch: Path | None = None,
) -> tuple[int, str, str]:
    """``python -m cupel argv...`` with stderr on a pseudo-terminal (stdout a pipe), as
    a person runs it. With ``interrupt_when``, send SIGINT (Ctrl-C) as soon as that text
    shows on the terminal. ``step_pause``: seconds every progress step then sleeps
    (:data:`SLOW_STEPS`, installed from ``scratch``), so the work outlasts the signal's
    delivery on a loaded machine. Returns (status, stdout, what the terminal showed)."""
    env = None
    if step_pause is not None:
        if scratch is None:
            raise ValueError("step_pause needs a scratch directory")
        (scratch / "sitecustomize.py").write_text(SLOW_STEPS.format(pause=step_pause))
        paths = [str(scratch), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 x 100
    proc = subprocess.Popen(
        [sys.executable, "-m", "cupel", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        # Ctrl-C's default action, as in a terminal, even when this process was started
        # with SIGINT ignored (a background job of a script): Python then installs no
        # KeyboardInterrupt handler in the child and the signal would be lost.
        preexec_fn=_default_sigint,
    )
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + timeout
    interrupted = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: the process is gone
                    chunk = b""
                if not chunk:
                    break
                shown += chunk
            if interrupt_when is not None and not interrupted and interrupt_when.encode() in shown:
                proc.send_signal(signal.SIGINT)
                interrupted = True
            if not ready and proc.poll() is not None:
                break
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        status = proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return status, out, shown.decode(errors="replace")


def assert_one_line_error(status: int, out: str, err: str, *needles: str) -> None:
    """Exit 2, nothing on stdout, one ``cupel: error: ...`` line holding every needle."""
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("cupel: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
