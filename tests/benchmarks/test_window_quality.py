"""The window-quality benchmark: its quick run, its metrics and its generators.

The metrics must detect what they claim (hand-made windows with a hole, a lost task, an
invalid tool pair, over budget...), the generators must be deterministic and carry the
defects they claim, and on the quick run cupel's components must score the zeros of
issue 10 (no holes, no lost task, a reply and content when due, valid, within budget).
"""

from __future__ import annotations

import doctest
import importlib
import json
from collections import Counter
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from llama_index.core.base.llms.types import ChatMessage

from benchmarks import window_quality
from benchmarks.bill import Bill
from benchmarks.window_cases import (
    CATEGORIES,
    Case,
    approximate_tokens,
    generate_case,
    generate_cases,
    to_langchain,
    to_llamaindex,
)
from benchmarks.window_metrics import (
    align,
    expectations,
    last_complete_exchange,
    newest_unit,
    score_window,
)
from benchmarks.window_quality import (
    COMPONENTS,
    Component,
    Outcome,
    compare,
    prepare_langchain,
    prepare_llamaindex,
    run,
    run_case,
    summarize,
    targets,
)
from cupel.conversation import Conversation
from cupel_langchain import select_messages

ROOT = Path(__file__).resolve().parents[2]
CUPEL = [c.name for c in COMPONENTS if c.cupel]
INCUMBENTS = [c.name for c in COMPONENTS if not c.cupel]


@pytest.mark.parametrize(
    "name", ["benchmarks.window_cases", "benchmarks.window_metrics", "benchmarks.window_quality"]
)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


# -- the quick run --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """``python -m benchmarks.window_quality --quick --json ...``, run in process."""
    path = tmp_path_factory.mktemp("window-quality") / "quick.json"
    assert window_quality.main(["--quick", "--json", str(path)]) == 0
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.slow
def test_the_quick_run_scores_every_component_on_every_category(
    quick: dict[str, object],
) -> None:
    summary = quick["summary"]
    assert isinstance(summary, list)
    cells = {(row["component"], row["category"]) for row in summary}
    assert cells == {(c.name, category) for c in COMPONENTS for category in CATEGORIES}
    for row in summary:
        assert row["windows"] + row["errors"] == window_quality.QUICK_CASES
    outcomes = quick["outcomes"]
    assert isinstance(outcomes, list)
    assert len(outcomes) == len(COMPONENTS) * len(CATEGORIES) * window_quality.QUICK_CASES


@pytest.mark.slow
def test_cupel_components_score_the_zeros_and_the_budget_targets_on_the_quick_run(
    quick: dict[str, object],
) -> None:
    summary = quick["summary"]
    assert isinstance(summary, list)
    rows = [row for row in summary if row["cupel"]]
    assert {row["component"] for row in rows} == set(CUPEL)
    for row in rows:
        for metric in (
            "errors",
            "holes",
            "task_lost",
            "no_reply",
            "empty",
            "invalid",
            "over_budget",
            "system_lost",
        ):
            assert row[metric] == 0, (row["component"], row["category"], metric, row[metric])
        target = (
            window_quality.CHAT_TARGET
            if row["category"].startswith("chat")
            else window_quality.AGENT_TARGET
        )
        assert row["budget_use"] >= target, row
    checks = quick["targets"]
    assert isinstance(checks, list) and checks
    assert [c["check"] for c in checks if not c["met"]] == []


@pytest.mark.slow
def test_the_quick_run_shows_the_incumbents_failures_it_is_built_to_show(
    quick: dict[str, object],
) -> None:
    """Not a target: a check that the cases exercise what the benchmark claims to measure
    (if no incumbent ever failed, the messy and agent cases would not be doing their job)."""
    summary = quick["summary"]
    assert isinstance(summary, list)

    def total(component: str, metric: str, prefix: str = "") -> int:
        return sum(
            row[metric]
            for row in summary
            if row["component"] == component and row["category"].startswith(prefix)
        )

    assert total("trim_messages", "invalid", "chat messy") > 0  # passes broken units through
    assert total("trim_messages", "task_lost", "agent") > 0  # start_on="human" drops a run
    assert total("ChatMemoryBuffer", "system_lost") > 0
    assert total("Memory", "over_budget", "agent") > 0  # flushes whole user turns only


@pytest.mark.slow
def test_the_command_prints_the_tables_and_the_targets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"intro\n{window_quality.TABLE_START}\nold\n{window_quality.TABLE_END}\nend\n",
        encoding="utf-8",
    )
    assert window_quality.main(["--cases", "1", "--seed", "5", "--docs", str(doc)]) == 0
    out = capsys.readouterr().out
    assert "reproduce: python -m benchmarks.window_quality --cases 1 --seed 5" in out
    assert "| framework | component | category |" in out
    assert "| cupel component | incumbent | category |" in out
    assert "Targets (cupel components):" in out
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("end\n") and "old" not in text
    assert "`python -m benchmarks.window_quality --cases 1 --seed 5`" in text
    assert text.count("| select_messages | trim_messages |") == len(CATEGORIES)


def test_the_docs_hold_a_table_block_and_are_linked() -> None:
    doc = (ROOT / "docs" / "window-quality.md").read_text(encoding="utf-8")
    assert window_quality.TABLE_START in doc and window_quality.TABLE_END in doc
    assert "python -m benchmarks.window_quality" in doc
    for name in [c.name for c in COMPONENTS]:
        assert f"| {name} |" in doc or f"| **{name}** |" in doc, name
    for page in ("README.md", "docs/langchain.md", "docs/llamaindex.md"):
        assert "window-quality.md" in (ROOT / page).read_text(encoding="utf-8"), page


# -- the metrics detect what they claim --------------------------------------------------------
# system, Q1, A1, Q2, call(c1), result(c1), A2, Q3
ROLES = ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]
CHAT = Conversation(ROLES, calls={4: ["c1"]}, answers={5: "c1"})
SIZES = [10, 5, 20, 5, 8, 30, 20, 5]


def tokens(indices: list[int]) -> int:
    return sum(SIZES[i] for i in indices)


def score(kept: list[int], budget: int = 200) -> dict[str, object]:
    result = score_window(CHAT, kept, tokens=tokens, budget=budget)
    return {
        name: getattr(result, name)
        for name in (
            "holes",
            "task_lost",
            "no_reply",
            "empty",
            "invalid",
            "system_lost",
            "over_budget",
        )
    }


CLEAN = dict.fromkeys(
    ("holes", "task_lost", "no_reply", "empty", "invalid", "system_lost", "over_budget"), False
)


def test_a_sound_window_scores_clean() -> None:
    assert score([0, 3, 4, 5, 6, 7]) == CLEAN
    assert score(list(range(8))) == CLEAN
    result = score_window(CHAT, [0, 3, 4, 5, 6, 7], tokens=tokens, budget=200)
    assert result.tokens == 10 + 5 + 8 + 30 + 20 + 5 and result.use == pytest.approx(78 / 200)


@pytest.mark.parametrize(
    ("kept", "flagged"),
    [
        ([0, 1, 2, 7], {"holes"}),  # turn 2 missing between kept turns
        ([0, 4, 5, 6, 7], {"holes"}),  # the answer without its question
        ([0, 3, 4, 5, 6], {"task_lost", "holes"}),  # (the task is the newest message)
        ([0, 3, 5, 6, 7], {"invalid", "holes"}),  # a result without its call
        ([0, 3, 4, 6, 7], {"invalid", "holes"}),  # a call without its result
        ([0, 7], {"no_reply"}),  # the previous exchange fits but is not there
        ([3, 4, 5, 6, 7], {"system_lost"}),
    ],
)
def test_each_metric_flags_the_window_it_claims(kept: list[int], flagged: set[str]) -> None:
    assert {name for name, value in score(kept).items() if value} == flagged


def test_over_budget_and_use_above_one() -> None:
    result = score_window(CHAT, [0, 3, 4, 5, 6, 7], tokens=tokens, budget=50)
    assert result.over_budget and result.use > 1


def test_a_reply_or_content_is_due_only_when_it_fits() -> None:
    # system 10 + task 5 + the last complete exchange (Q2..A2: 63) = 78; the newest unit
    # is the task itself (Q3), so content is due when system + task fit (15)
    assert last_complete_exchange(CHAT) == [3, 4, 5, 6] and newest_unit(CHAT) == [7]
    due = expectations(CHAT, lambda indices: tokens(indices) <= 78)
    assert (due.reply, due.content) == (True, True)
    due = expectations(CHAT, lambda indices: tokens(indices) <= 77)
    assert (due.reply, due.content) == (False, True)
    assert score([0, 7], budget=78)["no_reply"] is True
    assert score([0, 7], budget=77)["no_reply"] is False  # not due: not counted
    assert score([0], budget=15)["empty"] is True
    assert score([0], budget=14)["empty"] is False  # not due


def test_an_agent_task_is_kept_apart_from_its_newest_rounds_without_a_hole() -> None:
    # system, task, (call, result) x 3: the task then the newest round is the allowed gap
    roles = ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    run = Conversation(
        roles, calls={2: ["a"], 4: ["b"], 6: ["c"]}, answers={3: "a", 5: "b", 7: "c"}
    )
    ok = score_window(run, [0, 1, 6, 7], tokens=len, budget=8)
    assert not (ok.holes or ok.invalid or ok.task_lost or ok.empty)
    gap = score_window(run, [0, 1, 2, 3, 6, 7], tokens=len, budget=8)
    assert gap.holes  # round b left out between kept rounds
    lost = score_window(run, [0], tokens=len, budget=8)
    assert lost.task_lost and lost.empty
    rounds_only = score_window(run, [0, 6, 7], tokens=len, budget=8)
    assert rounds_only.task_lost and not (rounds_only.holes or rounds_only.empty)


def test_invalid_units_of_the_history_left_out_are_not_holes_but_kept_ones_are_invalid() -> None:
    # a late result (index 4) answering the call at 2, after the question at 3
    messy = Conversation(
        ["user", "assistant", "assistant", "user", "tool"], calls={2: ["x"]}, answers={4: "x"}
    )
    assert not score_window(messy, [0, 1, 3], tokens=len, budget=9).holes
    kept_late = score_window(messy, [0, 1, 3, 4], tokens=len, budget=9)
    assert kept_late.invalid and not kept_late.holes


def test_align_maps_copies_by_order_and_equality_and_refuses_strangers() -> None:
    history = [
        ChatMessage(role="user", content="q1"),
        ChatMessage(role="assistant", content="a1"),
        ChatMessage(role="user", content="q1"),  # equal to the first
        ChatMessage(role="user", content="q2"),
    ]
    copies = [m.model_copy(deep=True) for m in history[1:]]
    assert align(copies, history) == ([1, 2, 3], "equality")
    assert align(history[1:], history) == ([1, 2, 3], "identity")
    assert align([history[0].model_copy()], history) == ([2], "equality")  # the newest match
    with pytest.raises(ValueError, match="matches no history message"):
        align([ChatMessage(role="user", content="other")], history)
    with pytest.raises(ValueError, match="matches no history message"):
        align([copies[2], copies[0]], history)  # out of order


# -- running and summarizing -------------------------------------------------------------------
def test_a_failing_component_is_counted_as_an_error_not_a_window() -> None:
    def broken(history: list[object], budget: int) -> list[object]:
        raise RuntimeError(f"cannot select {len(history)} messages within {budget}")

    component = Component("broken", "langchain", False, broken, "raises")
    case = generate_case("chat clean", 0, seed=1)
    (outcome,) = run_case(case, [component], Bill())
    assert outcome.score is None and outcome.error is not None
    assert outcome.error.startswith("RuntimeError: cannot select")
    (row,) = [s for s in summarize([outcome], [component]) if s.category == "chat clean"]
    assert (row.windows, row.errors) == (0, 1)


def test_the_summary_counts_what_the_scores_flag() -> None:
    case = generate_case("chat clean", 0, seed=1)
    prepared = prepare_langchain(case, Bill())
    last = len(prepared.messages) - 1
    windows = {"whole": list(range(last + 1)), "only task": [last], "nothing": []}
    outcomes = [
        Outcome(
            name,
            case.name,
            case.category,
            case.budget,
            kept,
            "identity",
            score_window(prepared.conversation, kept, tokens=prepared.count, budget=case.budget),
        )
        for name, kept in windows.items()
    ]
    components = [
        Component(name, "langchain", name == "whole", lambda history, budget: history, "")
        for name in windows
    ]
    rows = {s.component: s for s in summarize(outcomes, components)}
    assert rows["only task"].system_lost == 1 and rows["only task"].no_reply == 1
    assert rows["nothing"].task_lost == 1 and rows["nothing"].empty == 1
    assert rows["whole"].over_budget == (prepared.count(windows["whole"]) > case.budget)
    checks = dict(targets(list(rows.values()), compare(outcomes, components)))
    assert any(label.startswith("whole:") for label in checks)


def test_the_middleware_is_driven_through_its_hook_and_sends_what_select_messages_selects() -> None:
    middleware = next(c for c in COMPONENTS if c.name == "CupelContextMiddleware")
    for category in CATEGORIES:
        case = generate_case(category, 1, seed=3)
        history = to_langchain(case)
        sent = middleware.select(history, case.budget)
        expected = select_messages(history, max_tokens=case.budget)
        assert len(sent) == len(expected)
        assert all(a is b for a, b in zip(sent, expected, strict=True))


def test_memory_returns_copies_that_align_by_equality() -> None:
    case = generate_case("agent clean", 0, seed=2)
    outcomes = {
        o.component: o
        for o in run([case], [c for c in COMPONENTS if c.name in ("Memory", "CupelChatMemory")])
    }
    assert outcomes["Memory"].alignment == "equality"
    assert outcomes["CupelChatMemory"].alignment == "identity"


# -- the generators ------------------------------------------------------------------------------
def _neutral_problems(case: Case) -> Counter[str]:
    messages = case.messages
    conversation = Conversation(
        [m.role for m in messages],
        calls={i: [c.id for c in m.calls] for i, m in enumerate(messages) if m.calls},
        answers={i: m.answers for i, m in enumerate(messages) if m.role == "tool"},
    )
    return Counter(str(conversation.unit(k).problem) for k in conversation.invalid_units)


def test_generation_is_deterministic_and_seeded() -> None:
    first = generate_cases(3, seed=11)
    assert first == generate_cases(3, seed=11)
    assert first != generate_cases(3, seed=12)
    assert [case.name for case in first[:3]] == ["chat clean #0", "chat clean #1", "chat clean #2"]
    # a case depends on (seed, category, number) alone, not on how many are generated
    assert generate_cases(5, seed=11)[5 + 1] == first[3 + 1]
    lc_a, lc_b = to_langchain(first[4]), to_langchain(first[4])
    assert [m.model_dump() for m in lc_a] == [m.model_dump() for m in lc_b]
    li_a, li_b = to_llamaindex(first[4]), to_llamaindex(first[4])
    assert [m.model_dump() for m in li_a] == [m.model_dump() for m in li_b]


def test_the_cases_carry_the_problems_they_claim_in_both_frameworks() -> None:
    cases = generate_cases(12, seed=20261122)
    bill = Bill()
    totals: Counter[str] = Counter()
    invalid_calls = 0
    for case in cases:
        assert _neutral_problems(case) == case.problems, case.name
        lc = prepare_langchain(case, bill)
        li = prepare_llamaindex(case, bill)
        for conversation in (lc.conversation, li.conversation):
            found = Counter(str(conversation.unit(k).problem) for k in conversation.invalid_units)
            assert found == case.problems, case.name
        counted = sum(len(m.invalid_tool_calls) for m in lc.messages if isinstance(m, AIMessage))
        assert counted == case.invalid_calls, case.name
        if case.category.endswith("clean"):
            assert not case.problems and case.invalid_calls == 0, case.name
        else:
            assert case.problems or case.invalid_calls, case.name
        totals.update(case.problems)
        invalid_calls += case.invalid_calls
    assert set(totals) == {
        "partial_answers",
        "unanswered_calls",
        "late_result",
        "duplicate_result",
        "unknown_result",
    }
    assert min(totals.values()) >= 5 and invalid_calls >= 5, (totals, invalid_calls)


def test_the_cases_look_like_chats_and_agent_runs_of_realistic_sizes() -> None:
    cases = generate_cases(12, seed=20261122)
    for case in cases:
        roles = [m.role for m in case.messages]
        assert roles[0] == "system" and "user" in roles
        sizes = [approximate_tokens(m) for m in case.messages if m.role != "system"]
        assert min(sizes) >= 3 and max(sizes) <= 450, case.name
        assert 1500 <= case.budget <= 6000
        if case.category == "chat clean":
            assert roles[-1] == "user"  # the question being answered
        if case.category == "agent clean":
            assert roles[-1] == "tool" and roles.count("user") >= 1
            calls = [len(m.calls) for m in case.messages if m.calls]
            assert len(calls) >= 3
    agent_calls = [
        len(m.calls) for c in cases if c.category.startswith("agent") for m in c.messages
    ]
    assert max(agent_calls) >= 3  # parallel calls
    cut = [c for c in cases if sum(approximate_tokens(m) for m in c.messages) > c.budget]
    assert len(cut) >= 0.75 * len(cases)  # budgets cut most histories
    styles = Counter(c.style for c in cases if c.category.startswith("chat"))
    assert set(styles) == {"short user", "long user", "balanced"}
    assert {c.call_style for c in cases} == {"blocks", "openai"}


def test_the_conversions_build_real_framework_messages() -> None:
    case = next(
        c
        for c in generate_cases(6, seed=4)
        if c.category == "agent messy" and c.call_style == "openai"
    )
    lc = to_langchain(case)
    assert isinstance(lc[0], SystemMessage) and isinstance(lc[1], HumanMessage)
    assert any(isinstance(m, AIMessage) and m.tool_calls for m in lc)
    assert any(isinstance(m, ToolMessage) for m in lc)
    li = to_llamaindex(case)
    callers = [m for m in li if m.additional_kwargs.get("tool_calls")]
    assert callers and all(
        c["type"] == "function" for m in callers for c in m.additional_kwargs["tool_calls"]
    )
    assert all("tool_call_id" in m.additional_kwargs for m in li if m.role.value == "tool")
    texts = [m.content for m in li if m.content]
    assert len(set(texts)) == len(texts)  # every text is tagged: copies align unambiguously
