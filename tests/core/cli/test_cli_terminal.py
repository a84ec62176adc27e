"""The command line as a person meets it, in real processes: ``python -m cupel``,
``--version``, no abbreviated options, progress on a terminal only, Ctrl-C, and
content that cannot take over the terminal."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest
from cli_testkit import ITEMS, cupel, cupel_on_terminal, many_items, write_items, write_jsonl

import cupel as cupel_package


@pytest.mark.slow
def test_python_dash_m_cupel_runs_the_cli(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = cupel("select", str(path), "--max-tokens", "100")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == 3
    assert proc.stderr.startswith("cupel: 3 of 6 items selected")


@pytest.mark.slow
def test_version_is_the_installed_distribution_version() -> None:
    proc = cupel("--version")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"cupel {version('cupel-context')}\n"
    assert version("cupel-context") == cupel_package.__version__


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "unknown"),
    [
        (["--max-token", "5"], "--max-token 5"),
        (["--max-tokens", "100", "--target", "50"], "--target 50"),
        (["--max-tokens", "100", "--slice", "knapsack"], "--slice knapsack"),
    ],
)
def test_abbreviated_options_are_refused(tmp_path: Path, argv: list[str], unknown: str) -> None:
    path = write_items(tmp_path, ITEMS)
    proc = cupel("select", str(path), "--max-tokens", "100", *argv)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"cupel: error: unrecognized arguments: {unknown} (see 'cupel --help')\n"


@pytest.mark.slow
def test_abbreviation_no_longer_overrides_the_full_option(tmp_path: Path) -> None:
    """``--max-token 5`` used to override ``--max-tokens 100`` silently."""
    path = write_items(tmp_path, ITEMS)
    proc = cupel("select", str(path), "--max-tokens", "100", "--max-token", "5")
    assert proc.returncode == 2 and "unrecognized arguments: --max-token 5" in proc.stderr


@pytest.mark.slow
def test_min_budget_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    # Probes reuse the scores and sort, so a search over a few thousand items can finish
    # before the bar's first refresh (0.05 s): each probe is made 0.1 s longer instead.
    path = write_jsonl(tmp_path, many_items(3000))
    status, out, shown = cupel_on_terminal(
        "min-budget", str(path), "--item", "message 7:", step_pause=0.1, scratch=tmp_path
    )
    assert status == 0, shown
    assert out.startswith("cupel min-budget: ")
    assert "min-budget: trying budgets" in shown
    assert "budget " in shown and "run" in shown  # the budget being tried, the unit


@pytest.mark.slow
def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path, many_items(3000))
    proc = cupel("min-budget", str(path), "--item", "message 7:")
    assert proc.returncode == 0
    assert proc.stderr == ""
    # Same answer as on a terminal.
    status, out, _ = cupel_on_terminal("min-budget", str(path), "--item", "message 7:")
    assert status == 0 and out == proc.stdout


def test_reading_a_large_file_shows_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cupel.cli import _progress, load_items

    path = write_jsonl(tmp_path, many_items(2000))
    assert len(load_items(str(path))) == 2000
    assert capsys.readouterr().err == ""  # not a terminal: silent
    monkeypatch.setattr(_progress, "on_terminal", lambda: True)
    monkeypatch.setattr(_progress, "READ_DELAY", 0.0)
    assert len(load_items(str(path))) == 2000
    shown = capsys.readouterr().err
    assert f"reading {path}" in shown and "/2.00k" in shown  # of 2,000 items


def test_ctrl_c_in_process_returns_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from cupel import cli
    from cupel.cli import _commands

    def interrupted(path: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_commands, "read_items", lambda path, **kw: interrupted(path))
    status = cli.main(["select", str(write_items(tmp_path, ITEMS)), "--max-tokens", "10"])
    out, err = capsys.readouterr()
    assert status == 130 and out == "" and err == "\ncupel: interrupted\n"


@pytest.mark.slow
def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    # Each probe of the search then takes 0.5 s longer: the search (about 15 probes)
    # outlasts the signal's delivery however loaded the machine is; without the pause
    # a fast search could finish first and exit 0 (so no large input is needed).
    path = write_jsonl(tmp_path, many_items(3000))
    status, out, shown = cupel_on_terminal(
        "min-budget",
        str(path),
        "--item",
        "message 7:",
        interrupt_when="trying budgets",
        step_pause=0.5,
        scratch=tmp_path,
    )
    assert status == 130
    assert out == ""
    assert "Traceback" not in shown and "KeyboardInterrupt" not in shown
    assert shown.rstrip().splitlines()[-1] == "cupel: interrupted"


@pytest.mark.slow
def test_ansi_escapes_in_content_do_not_reach_the_terminal(tmp_path: Path) -> None:
    hostile = "pwned \x1b[2J\x1b]0;title\x07 \x9b31m red \x1b[0m end"
    rows = [
        {
            "content": hostile,
            "tokens": 60,
            "kind": "Document",
            "source": "Rag",
            "future_relevance_hint": 0.95,
            "timestamp": "2025-01-01T00:00:00Z",
        },
        {"content": "recent question", "tokens": 50, "timestamp": "2025-01-03T00:00:00Z"},
        {"content": hostile + " again", "tokens": 60, "timestamp": "2025-01-04T00:00:00Z"},
        {
            "content": "reply",
            "tokens": 5,
            "kind": "Note\x1b[5m",
            "timestamp": "2025-01-05T00:00:00Z",
        },
    ]
    path = write_items(tmp_path, rows)
    runs = [
        ["select", str(path), "--max-tokens", "70"],
        ["select", str(path), "--max-tokens", "70", "--all"],
        ["explain", str(path), "--max-tokens", "70"],
        ["compare", str(path), "--max-tokens", "70", "--policy", "chat", "--policy", "rag"],
        ["min-budget", str(path), "--item", hostile],
        ["min-budget", str(path), "--item", "pwned \x1b[2J"],  # an error quoting it
    ]
    for argv in runs:
        proc = cupel(*argv)
        terminal = proc.stderr if argv[0] == "select" else proc.stdout + proc.stderr
        for control in ("\x1b", "\x07", "\x9b"):
            assert control not in terminal, (argv, terminal)
        assert "\\x1b[2J" in terminal, (argv, terminal)  # shown, visibly escaped
    # The JSON window keeps the content exactly (JSON escapes the control characters).
    proc = cupel("select", str(path), "--max-tokens", "1000")
    assert "\x1b" not in proc.stdout
    assert hostile in [item["content"] for item in json.loads(proc.stdout)]
