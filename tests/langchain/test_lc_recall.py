"""The ``recall`` preset through the LangChain components: an early fact comes back with
its question when the latest human message asks about it, as the same message objects,
valid and within budget, and the report says why."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from test_lc_middleware import Recorder, river_length, scripted_model

from cupel import SelectionReport
from cupel_langchain import (
    CupelContextMiddleware,
    CupelMessageSelector,
    report_from_event,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)

SMALL_TALK = [
    ("It rained all day again.", "Grey skies here too, I stayed in."),
    ("I tried a new pasta recipe.", "Nice, was it any good?"),
    ("Work was busy this week.", "Hope the weekend is calmer."),
    ("The train was late this morning.", "Classic Monday."),
]


def conversation(rounds: int = 12) -> list[BaseMessage]:
    """A system prompt, a fact stated early (with a tool round), small talk, then a
    question about the fact."""
    history: list[BaseMessage] = [
        SystemMessage("You are a friendly assistant.", id="s"),
        HumanMessage("My sister Mara moved to Lisbon in March.", id="fact"),
        AIMessage(
            "",
            id="call",
            tool_calls=[{"name": "save_note", "args": {"note": "sister in Lisbon"}, "id": "c1"}],
        ),
        ToolMessage("saved", tool_call_id="c1", id="result"),
        AIMessage("Lisbon is lovely, I noted it.", id="answer"),
    ]
    for i in range(rounds):
        question, reply = SMALL_TALK[i % len(SMALL_TALK)]
        history.append(HumanMessage(f"{question} ({i})", id=f"q{i}"))
        history.append(AIMessage(f"{reply} ({i})", id=f"a{i}"))
    history.append(HumanMessage("Which city does my sister live in now?", id="question"))
    return history


def tokens(messages: list[BaseMessage]) -> int:
    from cupel_langchain import approximate_message_tokens

    return sum(approximate_message_tokens(m) for m in messages)


BUDGET = 140


def test_the_early_turn_comes_back_whole_as_the_same_objects() -> None:
    history = conversation()
    chat = select_messages(history, max_tokens=BUDGET)
    assert "fact" not in [m.id for m in chat]  # the chat default: recency only
    kept, report = select_messages_with_report(history, max_tokens=BUDGET, policy="recall")
    ids = [m.id for m in kept]
    assert ids[:5] == ["s", "fact", "call", "result", "answer"]  # the whole turn, in place
    assert ids[-1] == "question"
    assert all(any(m is h for h in history) for m in kept)  # the same objects
    assert tool_call_problems(kept) == []
    (unit,) = report.recalled
    assert [item.content for item in unit.items][-1] == history[1].content
    assert "sister" in unit.terms and unit.score > 0
    assert report.to_dict()["recalled"][0]["terms"] == list(unit.terms)
    assert SelectionReport.from_dict(report.to_dict()).recalled == report.recalled


def test_a_long_latest_answer_leaves_the_share_what_it_does_not_use() -> None:
    """The previous answer is long (more than half the budget, less than all of it): it is
    the recent window, and the share still recalls the fact with what it leaves — the
    chat default, and recall before this rule, spent those tokens on the small talk just
    before it."""
    history = conversation(rounds=2)
    history.insert(-1, HumanMessage("Tell me about volcanoes.", id="vq"))
    history.insert(-1, AIMessage("Volcanoes erupt when magma rises. " * 12, id="va"))
    fact_turn = tokens(history[1:5])
    latest = tokens(history[-3:-1])
    budget = tokens([history[0], history[-1]]) + 3 + latest + fact_turn + 2  # (+3: the reply)
    assert latest > (budget - tokens([history[0], history[-1]]) - 3) / 2
    chat = [m.id for m in select_messages(history, max_tokens=budget)]
    assert "fact" not in chat and "a1" in chat  # recency: the small talk
    kept = [m.id for m in select_messages(history, max_tokens=budget, policy="recall")]
    assert kept == ["s", "fact", "call", "result", "answer", "vq", "va", "question"]


def test_the_selector_emits_the_recalled_units_in_its_event() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, policy="recall")
    recorder = Recorder()
    kept = selector.invoke(conversation(), config={"callbacks": [recorder]})
    assert [m.id for m in kept][1] == "fact"
    (name, data) = recorder.events[-1]
    assert name == "cupel_selection"
    assert data["report"]["recalled"][0]["terms"][0] == "sister"
    terms = data["report"]["recalled"][0]["terms"]
    assert list(report_from_event(data).recalled[0].terms) == terms


def test_cache_stable_recall_puts_the_recalled_turn_before_the_question() -> None:
    history = conversation()
    kept = select_messages(history, max_tokens=BUDGET, policy="recall", cache_stable=True)
    ids = [m.id for m in kept]
    assert ids[0] == "s" and ids[-1] == "question"
    at = ids.index("fact")
    assert ids[at : at + 4] == ["fact", "call", "result", "answer"]
    assert ids[at + 4] == "question"  # right before the latest human message
    assert tool_call_problems(kept) == []
    # the next request (the answer and a new question appended) starts with this one's
    # recent window: the cached prefix holds
    answer = AIMessage("Lisbon, since March.", id="reply")
    follow = HumanMessage("And the weather today?", id="next")
    again = select_messages(
        [*history, answer, follow], max_tokens=BUDGET, policy="recall", cache_stable=True
    )
    recent = [i for i in ids if i not in ("fact", "call", "result", "answer")]
    assert [m.id for m in again][: len(recent)] == recent


def test_the_middleware_selects_with_recall() -> None:
    earlier: list[BaseMessage] = conversation()[1:-1]
    middleware = CupelContextMiddleware(max_tokens=260, policy="recall")
    agent = create_agent(
        scripted_model(), [river_length], system_prompt="Be brief.", middleware=[middleware]
    )
    recorder = Recorder()
    question = HumanMessage("How long is the river my sister lives by in Lisbon?", id="task")
    agent.invoke({"messages": [*earlier, question]}, config={"callbacks": [recorder]})
    first = recorder.model_inputs[0]
    assert [m.id for m in first[1:3]] == ["fact", "call"]
    assert tool_call_problems(first) == []
    report = report_from_event(recorder.events[0][1])
    assert report.recalled and "sister" in report.recalled[0].terms


@settings(max_examples=examples(60), deadline=None)
@given(
    rounds=st.integers(0, 30),
    budget=st.integers(40, 400),
    cache_stable=st.booleans(),
)
def test_recall_windows_are_valid_within_budget_and_keep_the_question(
    rounds: int, budget: int, cache_stable: bool
) -> None:
    history = conversation(rounds)
    try:
        kept = select_messages(
            history, max_tokens=budget, policy="recall", cache_stable=cache_stable
        )
    except Exception as error:  # pinned messages over the budget: the same as the chat default
        from cupel import PinnedBudgetError

        assert isinstance(error, PinnedBudgetError)
        return
    assert tool_call_problems(kept) == []
    assert kept[0] is history[0] and history[-1] in kept
    assert tokens(kept) + 3 <= budget  # the reply's 3 tokens are reserved
    ids = [m.id for m in kept]
    if "fact" in ids and "call" in ids:  # recalled: the fact's turn whole
        at = ids.index("fact")
        assert ids[at : at + 4] == ["fact", "call", "result", "answer"]
    elif "fact" in ids:  # the oldest turn of the recency window, kept in part (the chat
        # default's rule): its question, then everything from its newest messages on
        assert ids[1] == "fact"
        assert ids[2:] == [m.id for m in history[history.index(kept[2]) :]]
