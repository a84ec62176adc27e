"""The prompt-cache benchmark: its metric on hand-made request sequences, its sessions, the
plot, a quick run in which the cache-stable components beat the minimal fit, and the
deployment modes (issue 27)."""

from __future__ import annotations

import doctest
import importlib
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import prompt_cache as pc
from benchmarks.cache_selectors import COMPONENTS, MODES, RESTART_EVERY
from benchmarks.prompt_cache import (
    PRICINGS,
    Pricing,
    Result,
    cached_tokens,
    common_prefix,
    generate_session,
    request_cost,
)

ROOT = Path(__file__).resolve().parents[2]
ANTHROPIC, OPENAI = PRICINGS


def test_docstring_examples() -> None:
    module = importlib.import_module("benchmarks.prompt_cache")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# -- the metric, on requests with known prefixes ---------------------------------------------------
def _result(requests: list[list[int]], tokens: list[int], budget: int = 10_000) -> Result:
    """A Result built the way replay builds it, from requests as message ids."""
    result = Result("x", "s", "chat", budget)
    previous: list[int] = []
    for request in requests:
        result.totals.append(sum(tokens[i] for i in request))
        shared = common_prefix(previous, request)
        result.prefixes.append(sum(tokens[i] for i in request[:shared]))
        previous = request
    return result


def test_an_append_only_sequence_reads_everything_it_sent_before() -> None:
    tokens = [2000, 500, 500, 500]
    result = _result([[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]], tokens)
    assert result.prefixes == [0, 2000, 2500, 3000]
    assert result.totals == [2000, 2500, 3000, 3500]
    read = 2000 + 2500 + 3000
    assert result.read_share(ANTHROPIC) == pytest.approx(read / 11000)
    cost = read * 0.1 + (11000 - read) * 1.25
    assert result.cost(ANTHROPIC) == pytest.approx(cost / 11000)
    assert result.window() == pytest.approx(11000 / 4 / 10_000)


def test_a_sliding_window_shares_only_the_system_prompt() -> None:
    tokens = [1500, 700, 700, 700, 700]
    result = _result([[0, 1, 2], [0, 2, 3], [0, 3, 4]], tokens)
    assert result.prefixes == [0, 1500, 1500]
    # OpenAI reads in 128-token steps past 1,024: 1,408 of the 1,500 shared
    assert result.read_share(OPENAI) == pytest.approx(2 * 1408 / 8700)
    assert result.cost(OPENAI) == pytest.approx((8700 - 2 * 1408 * 0.5) / 8700)


def test_prefixes_below_the_providers_minimum_are_not_cached() -> None:
    tokens = [300, 400, 400]
    result = _result([[0, 1], [0, 1, 2]], tokens)
    assert result.prefixes == [0, 700]
    assert result.read_share(ANTHROPIC) == 0.0
    assert result.cost(ANTHROPIC) == pytest.approx(1.25)  # everything written
    assert result.cost(OPENAI) == pytest.approx(1.0)


def test_a_changed_first_message_shares_nothing() -> None:
    assert common_prefix([0, 1, 2], [5, 1, 2]) == 0
    assert common_prefix([], [1]) == 0
    assert common_prefix([0, 1], [0, 1]) == 2


def test_cost_and_cache_rules() -> None:
    custom = Pricing("x", read=0.25, write=1.0, minimum=10, step=5, source="test")
    assert [cached_tokens(n, custom) for n in (9, 10, 14, 15)] == [0, 10, 10, 15]
    assert request_cost(100, 40, custom) == pytest.approx(40 * 0.25 + 60)
    assert request_cost(100, 0, ANTHROPIC) == pytest.approx(125)


# -- sessions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["chat", "agent"])
def test_sessions_are_deterministic_and_long_enough(kind: str) -> None:
    session = generate_session(kind, 0, seed=5, calls=40, budget=3000)
    assert session == generate_session(kind, 0, seed=5, calls=40, budget=3000)
    assert len(session.at_budget()) >= 40
    assert list(session.calls) == sorted(session.calls)
    assert session.messages[0].role == "system"
    assert all(session.messages[c - 1].role in ("user", "tool") for c in session.calls)
    with pytest.raises(ValueError, match="kind"):
        generate_session("email", 0, seed=5, calls=1, budget=10)


# -- the quick run --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("prompt-cache") / "quick.json"
    assert pc.main(["--quick", "--modes", "one", "--json", str(path)]) == 0
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.slow
def test_the_quick_run_replays_every_selector_on_both_kinds(quick: dict[str, object]) -> None:
    summary = quick["summary"]
    assert isinstance(summary, list)
    assert {(r["selector"], r["kind"]) for r in summary} == {
        (s.name, kind) for s in pc.SELECTORS for kind in ("chat", "agent")
    }
    assert all(r["calls"] >= pc.QUICK_CALLS and r["errors"] == 0 for r in summary)


@pytest.mark.slow
def test_cupel_windows_stay_coherent_and_stable_ones_read_more_from_the_cache(
    quick: dict[str, object],
) -> None:
    rows = {(r["selector"], r["kind"]): r for r in quick["summary"]}  # type: ignore[union-attr]
    for (name, kind), row in rows.items():
        if row["cupel"]:
            assert sum(row["failures"].values()) == 0, (name, kind, row["failures"])
    for kind in ("chat", "agent"):
        default = rows[("select_messages", kind)]
        trim = rows[("trim_messages", kind)]
        for name in (s.name for s in pc.SELECTORS if s.stable):
            stable = rows[(name, kind)]
            assert stable["read"]["Anthropic"] > default["read"]["Anthropic"] + 0.2, name
            assert stable["cost"]["Anthropic"] < default["cost"]["Anthropic"], name
            assert stable["read"]["Anthropic"] > trim["read"]["Anthropic"], name
            assert stable["window"] >= 0.5, name
    assert rows[("trim_messages", "agent")]["failures"]["task_lost"] > 0


def test_the_plot_is_written_from_the_sweep_data(tmp_path: Path) -> None:
    from scripts.plot_cache_tradeoff import main as plot

    session = generate_session("chat", 0, seed=3, calls=12, budget=2500)
    points, defaults = pc.sweep([session], (0.5, 0.8))
    data = {
        "budget": 2500,
        "sweep": [asdict(p) for p in points],
        "sweep_default": [asdict(r) for r in defaults],
    }
    source = tmp_path / "sweep.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "plot.svg"
    assert plot(["--from", str(source), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
    assert text.count("<circle") == len(PRICINGS) * (2 + 1) + 1  # 2 marks + off; the legend
    assert ">0.5<" in text and ">0.8<" in text


def test_the_committed_plot_exists() -> None:
    assert (
        (ROOT / "docs" / "images" / "cache-tradeoff.svg")
        .read_text(encoding="utf-8")
        .startswith("<svg")
    )


def test_the_docs_page_example_runs_and_its_window_stays_within_budget() -> None:
    import re

    text = (ROOT / "docs" / "cache-stable.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert blocks
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "docs/cache-stable.md", "exec"), namespace)
    from cupel.counting import REPLY_TOKENS
    from cupel_langchain import approximate_message_tokens

    window = namespace["window"]
    assert isinstance(window, list) and window[0].content == "Be brief."
    assert sum(map(approximate_message_tokens, window)) + REPLY_TOKENS <= 400


# -- deployment modes (issue 27) ------------------------------------------------------------------
DEPLOY_CALLS = 12
"""Calls at the budget per session in the deployment tests (every session makes more calls
than :data:`~benchmarks.cache_selectors.RESTART_EVERY`, so the restart mode restarts)."""


@pytest.fixture(scope="module")
def deployed() -> list[pc.Row]:
    """The deployment-mode rows on one short session per kind."""
    sessions = pc.generate_sessions(1, seed=pc.SEED, calls=DEPLOY_CALLS, budget=pc.BUDGET)
    assert all(len(s.calls) > RESTART_EVERY for s in sessions)
    _, rows = pc.deployments(sessions)
    return rows


@pytest.mark.slow
def test_every_history_component_runs_in_every_deployment_mode(deployed: list[pc.Row]) -> None:
    assert [(r.component, r.kind, r.mode) for r in deployed] == [
        (c.name, kind, mode) for c in COMPONENTS for kind in ("chat", "agent") for mode in MODES
    ]
    assert all(r.calls >= DEPLOY_CALLS and r.errors == 0 for r in deployed)
    checks = pc.deployment_targets(deployed)
    # per row: failures, the read and cost; per row but one process: one process's
    assert len(checks) == len(deployed) * 3 + len(deployed) * 3 // 4


@pytest.mark.slow
def test_the_quick_run_has_the_one_process_rows_of_the_plain_components(
    quick: dict[str, object],
) -> None:
    """``--modes one`` adds the one-process deployment rows, which give the plain
    selectors' figures (the shared stores and agent state change nothing in one process)."""
    assert quick["modes"] == ["one"]
    rows = quick["deployments"]
    assert isinstance(rows, list)
    assert [(r["component"], r["kind"], r["mode"]) for r in rows] == [
        (c.name, kind, "one") for c in COMPONENTS for kind in ("chat", "agent")
    ]
    assert quick["deployment_targets"]
    plain = {(r["selector"], r["kind"]): r for r in quick["summary"]}  # type: ignore[union-attr]
    compared = 0
    for row in rows:
        same = plain.get((f"{row['component']} cache_stable", row["kind"]))
        if same is None:  # the persistent middleware has no plain row
            continue
        for key in ("read", "cost", "window", "failures"):
            assert row[key] == same[key], (row["component"], row["kind"], key)
        compared += 1
    assert compared == 2 * (len(COMPONENTS) - 1)


def test_the_modes_option() -> None:
    assert pc.parse_modes("all") == list(MODES)
    with pytest.raises(ValueError, match="unknown modes"):
        pc.parse_modes("one,sometimes")
    with pytest.raises(SystemExit):
        pc.main(["--quick", "--modes", "sometimes"])


# Issue 27: the window is a function of the history, so every deployment mode (four
# round-robin workers, a restart every 20 calls, a component per call) gets the one-process
# figures, with no window failure.
@pytest.mark.slow
def test_every_deployment_mode_gets_the_one_process_window(deployed: list[pc.Row]) -> None:
    unmet = [label for label, met in pc.deployment_targets(deployed, fixed=False) if not met]
    assert not unmet, unmet


def test_the_retention_measurement_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import cache_retention

    name = "CupelMessageSelector"
    assert (
        cache_retention.main(["--conversations", "3", "--messages", "7", "--components", name]) == 0
    )
    assert f"| {name} | 3 | 7 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cache_retention.main(["--components", "trim_messages"])
