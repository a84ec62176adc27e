"""select_messages and CupelMessageSelector in real LCEL chains with LangChain's fake models."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ConfigurationError,
    GreedySlice,
    ItemError,
    MetadataKeyScorer,
    PinnedBudgetError,
    Pipeline,
    PriorityScorer,
    RecencyScorer,
    SelectionReport,
)
from cupel.counting import MESSAGE_TOKENS, REPLY_TOKENS
from cupel.presets import preset
from cupel_langchain import (
    REPORT_EVENT,
    CupelMessageSelector,
    approximate_message_tokens,
    report_from_event,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)


def call(call_id: str) -> dict[str, object]:
    return {"name": "lookup", "args": {"q": call_id}, "id": call_id}


def conversation() -> list[BaseMessage]:
    """A system prompt, 3 old turns, a tool round trip and a fresh question."""
    return [
        SystemMessage("You are a terse assistant.", id="sys"),
        HumanMessage("Tell me about rivers. " * 10, id="h1"),
        AIMessage("Rivers flow downhill. " * 10, id="a1"),
        HumanMessage("And the Nile? " * 20, id="h2"),
        AIMessage("", tool_calls=[call("c1")], id="a2"),
        ToolMessage("The Nile is 6,650 km long. " * 4, tool_call_id="c1", id="t1"),
        AIMessage("About 6,650 km.", id="a3"),
        HumanMessage("Thanks! What about the Amazon?", id="h3"),
    ]


def tokens(messages: list[BaseMessage]) -> int:
    """The messages' tokens by cupel's default count (what their units' items hold)."""
    return sum(approximate_message_tokens(m) for m in messages)


def request_tokens(messages: list[BaseMessage]) -> int:
    """What a request sending ``messages`` costs by that count: the messages and the
    reply's tokens. A window within budget: ``request_tokens(window) <= max_tokens``."""
    return tokens(messages) + REPLY_TOKENS


def ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


class Recorder(BaseCallbackHandler):
    """Collects custom events and what chat models were sent."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.model_inputs: list[list[BaseMessage]] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: Any = None,
        metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data))

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.model_inputs.extend(messages)


# -- the function ------------------------------------------------------------------------
def test_the_window_is_the_system_prompt_the_question_and_the_newest_whole_turns() -> None:
    messages = conversation()
    # the system prompt and the question, then turn 2 (with its tool round), then turn 1;
    # a turn that does not fit whole keeps its question and its newest messages that fit
    with_turn_2 = request_tokens([messages[0], *messages[3:]])
    assert [m.id for m in select_messages(messages, max_tokens=with_turn_2 - 1)] == [
        "sys",
        "h2",
        "a3",
        "h3",
    ]
    turn_2 = select_messages(messages, max_tokens=with_turn_2)
    assert [m.id for m in turn_2] == ["sys", "h2", "a2", "t1", "a3", "h3"]
    assert request_tokens(turn_2) == with_turn_2
    assert all(any(s is m for m in messages) for s in turn_2)
    everything = request_tokens(messages)
    assert ids(select_messages(messages, max_tokens=everything)) == ids(messages)
    assert ids(select_messages(messages, max_tokens=everything - 1)) == ids(turn_2)


def test_everything_is_kept_when_it_fits() -> None:
    messages = conversation()
    selected = select_messages(messages, max_tokens=10_000)
    assert len(selected) == len(messages) and all(
        a is b for a, b in zip(selected, messages, strict=True)
    )


def test_every_budget_gives_a_window_without_holes_and_with_valid_tool_calls() -> None:
    messages = conversation()
    ids = [m.id for m in messages]
    pinned = request_tokens([messages[0], messages[-1]])  # the system prompt + the question
    for budget in range(pinned, 400, 7):
        selected = [m.id for m in select_messages(messages, max_tokens=budget)]
        assert tool_call_problems(select_messages(messages, max_tokens=budget)) == [], budget
        assert selected[0] == "sys" and selected[-1] == "h3", budget
        # the rest is a turn's question, then one contiguous stretch of that turn and the
        # newer ones ending just before the question (the whole turn, when it fits)
        middle = selected[1:-1]
        if middle:
            head = ids.index(middle[0])
            assert messages[head].type == "human", budget  # a turn starts with its question
            rest = middle[1:]
            if rest:
                start = ids.index(rest[0])
                assert rest == ids[start : start + len(rest)] and start + len(rest) == 7
                assert not any(m.type == "human" for m in messages[head + 1 : start]), budget
        assert request_tokens(select_messages(messages, max_tokens=budget)) <= budget


def test_output_reserve_and_target_tokens_shrink_the_room() -> None:
    messages = conversation()
    assert request_tokens(select_messages(messages, max_tokens=300, output_reserve=140)) <= 160
    # target_tokens is what the history aims for; the reply is reserved from max_tokens
    by_target = select_messages(messages, max_tokens=300, target_tokens=160)
    assert tokens(by_target) <= 160 and request_tokens(by_target) <= 300
    assert len(by_target) < len(messages)
    with_turn_2 = request_tokens([messages[0], *messages[3:]])
    reserve = 300 - with_turn_2
    assert ids(select_messages(messages, max_tokens=300, output_reserve=reserve)) == [
        "sys",
        "h2",
        "a2",
        "t1",
        "a3",
        "h3",
    ]
    assert ids(select_messages(messages, max_tokens=300, output_reserve=reserve + 1)) == [
        "sys",
        "h2",
        "a3",
        "h3",
    ]


def test_an_agent_run_keeps_its_task_and_the_newest_tool_rounds() -> None:
    task = HumanMessage("Find the longest river and check its length twice.", id="task")
    run: list[BaseMessage] = [SystemMessage("You are an agent.", id="sys"), task]
    for i in range(12):
        run += [
            AIMessage("", tool_calls=[call(f"c{i}")], id=f"a{i}"),
            ToolMessage(f"result {i} " * 20, tool_call_id=f"c{i}", id=f"t{i}"),
        ]
    selected = select_messages(run, max_tokens=300)
    ids = [m.id for m in selected]
    assert ids[:2] == ["sys", "task"]  # the task is never lost
    rounds = ids[2:]
    assert rounds == [f"{x}{i}" for i in range(12 - len(rounds) // 2, 12) for x in "at"]
    assert len(rounds) >= 4 and tool_call_problems(selected) == []
    # start_on="human" keeps the same window: the task is a human message
    assert select_messages(run, max_tokens=300, start_on="human") == selected


def test_start_on_human_drops_leading_non_human_units_but_keeps_the_system_prompt() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("Be brief.", id="sys"),
        AIMessage("Hello! How can I help?", id="greeting"),
        HumanMessage("Hi", id="h"),
    ]
    assert [m.id for m in select_messages(messages, max_tokens=100)] == ["sys", "greeting", "h"]
    selected = select_messages(messages, max_tokens=100, start_on="human")
    assert [m.id for m in selected] == ["sys", "h"]
    same = select_messages(messages, max_tokens=100, start_on=[HumanMessage])
    assert [m.id for m in same] == ["sys", "h"]


def test_start_on_reports_what_it_dropped_as_filtered() -> None:
    messages: list[BaseMessage] = [
        SystemMessage("Be brief.", id="sys"),
        AIMessage("Hello! How can I help?", id="greeting"),
        HumanMessage("Hi", id="h"),
    ]
    _, report = select_messages_with_report(messages, max_tokens=100, start_on="human")
    filtered = report.excluded_by("Filtered")
    assert [e.reason.filter_name for e in filtered] == ["start_on"]  # type: ignore[attr-defined]
    assert filtered[0].item.metadata["langchain.id"] == "greeting"
    assert [e.item.metadata["langchain.type"] for e in report.included] == ["system", "human"]


def test_pinned_messages_over_budget_are_a_clear_error_naming_this_components_options() -> None:
    messages = conversation()
    system, question = messages[0], messages[-1]
    assert ids(select_messages(messages, max_tokens=request_tokens([system, question]))) == [
        "sys",
        "h3",
    ]
    with pytest.raises(PinnedBudgetError):
        select_messages(messages, max_tokens=request_tokens([system, question]) - 1)
    with pytest.raises(PinnedBudgetError) as err:
        select_messages(messages, max_tokens=30, output_reserve=10)
    need = tokens([system, question])
    available = 30 - 10 - REPLY_TOKENS
    assert (err.value.pinned_tokens, err.value.available_tokens) == (need, available)
    assert str(err.value) == (
        f"The messages that are always kept need {need} tokens (system messages: "
        f"{tokens([system])}, the latest user message: {tokens([question])}), but the budget "
        f"allows {available} (max_tokens 30 - output_reserve 10 - {REPLY_TOKENS} for the "
        "reply); raise the budget, shorten them, pass keep_system=False or pass "
        "keep_last_human=False"
    )
    last = rf"the latest units kept: {tokens([question])}\), .*keep_last=0"
    with pytest.raises(PinnedBudgetError, match=last):
        select_messages(messages, max_tokens=20, keep_last_human=False, keep_last=1)
    only_system = select_messages(
        messages, max_tokens=request_tokens([system]), keep_last_human=False
    )
    assert [m.id for m in only_system] == ["sys"]
    unpinned = select_messages(messages, max_tokens=request_tokens([question]), keep_system=False)
    assert [m.id for m in unpinned] == ["h3"]


def test_a_policy_reading_metadata_sees_the_mapped_metadata() -> None:
    # A scored pipeline boosting the human turns by their metadata (a gappy selection,
    # by choice): every human message fits, the answers do not.
    messages = conversation()
    boost_humans = Pipeline(
        CompositeScorer(
            [(RecencyScorer(), 1.0), (MetadataKeyScorer("langchain.type", "human", 100.0), 1.0)]
        )
    )
    kept = select_messages(messages, max_tokens=185, pipeline=boost_humans)
    assert [m.id for m in kept] == ["sys", "h1", "h2", "h3"]
    kept, report = select_messages_with_report(messages, max_tokens=185, pipeline=boost_humans)
    assert [m.id for m in kept] == ["sys", "h1", "h2", "h3"]
    turn = {
        e.item.metadata["langchain.id"]: e.item.metadata.get("cupel:turn") for e in report.included
    }
    assert turn == {"sys": 0, "h1": 1, "h2": 2, "h3": None}  # the latest turn has no block


def test_equal_turns_are_distinct_messages_unless_deduplication_is_asked() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("ok", id="1"),
        AIMessage("ok", id="2"),
        HumanMessage("ok", id="3"),
    ]
    assert [m.id for m in select_messages(messages, max_tokens=100)] == ["1", "2", "3"]
    # a scored policy that deduplicates: the pinned latest question is never dropped; of
    # the other two copies the better scored (newer) one stays
    deduplicated = select_messages(messages, max_tokens=100, deduplicate=True, policy="debugging")
    assert [m.id for m in deduplicated] == ["2", "3"]


def test_invalid_tool_calls_never_reach_the_output_and_are_reported() -> None:
    messages: list[BaseMessage] = [
        ToolMessage("stale", tool_call_id="gone", id="orphan"),
        HumanMessage("hi", id="h"),
        AIMessage("", tool_calls=[call("never")], id="pending"),
        HumanMessage("hello?", id="h2"),
        AIMessage("", tool_calls=[call("p1"), call("p2")], id="partial"),
        ToolMessage("one", tool_call_id="p1", id="p1-result"),
        ToolMessage("one again", tool_call_id="p1", id="p1-duplicate"),
        HumanMessage("still there?", id="h3"),
        ToolMessage("two, late", tool_call_id="p2", id="p2-late"),
        AIMessage("", tool_calls=[call("ok")], id="good"),
        ToolMessage("fine", tool_call_id="ok", id="good-result"),
    ]
    selected, report = select_messages_with_report(messages, max_tokens=1000)
    assert [m.id for m in selected] == ["h", "h2", "h3", "good", "good-result"]
    assert tool_call_problems(selected) == []
    reasons = {
        e.item.metadata.get("langchain.id") or e.item.metadata["langchain.ids"][0]: e.reason
        for e in report.excluded
    }
    assert {k: r.name for k, r in reasons.items()} == dict.fromkeys(
        ["orphan", "pending", "partial", "p1-duplicate", "p2-late"], "InvalidToolCall"
    )
    problems = {k: (r.problem, r.tool_call_ids) for k, r in reasons.items()}  # type: ignore[attr-defined]
    assert problems == {
        "orphan": ("unknown_result", ("gone",)),
        "pending": ("unanswered_calls", ("never",)),
        "partial": ("partial_answers", ("p2",)),
        "p1-duplicate": ("duplicate_result", ("p1",)),
        "p2-late": ("late_result", ("p2",)),
    }
    assert report.total_candidates == 9  # 11 messages: two groups of two are one unit each
    assert report.total_tokens_considered == tokens(messages)


def test_an_answer_to_an_invalid_tool_call_keeps_the_call_and_its_answer_together() -> None:
    # langchain-openai sends invalid_tool_calls to the provider as tool calls: their
    # answer must travel with the AIMessage, or the provider rejects the request.
    broken = AIMessage(
        "",
        invalid_tool_calls=[{"name": "f", "args": "{oops", "id": "bad", "error": "JSON"}],
        id="broken",
    )
    messages: list[BaseMessage] = [
        HumanMessage("go", id="h"),
        broken,
        ToolMessage("Error: invalid arguments", tool_call_id="bad", id="answer"),
        HumanMessage("retry", id="h2"),
    ]
    selected = select_messages(messages, max_tokens=1000)
    assert [m.id for m in selected] == ["h", "broken", "answer", "h2"]
    unanswered = select_messages(messages[:2] + messages[3:], max_tokens=1000)
    assert [m.id for m in unanswered] == ["h", "h2"]
    # the same with text content (a plain-looking AIMessage: the fast path must see the call)
    worded = AIMessage("Let me try.", invalid_tool_calls=broken.invalid_tool_calls, id="worded")
    history = [messages[0], worded, messages[2], messages[3]]
    assert [m.id for m in select_messages(history, max_tokens=1000)] == [
        "h",
        "worded",
        "answer",
        "h2",
    ]
    lone = select_messages([messages[0], worded, messages[3]], max_tokens=1000)
    assert [m.id for m in lone] == ["h", "h2"]


def test_the_report_accounts_for_every_unit() -> None:
    messages = conversation()
    selected, report = select_messages_with_report(messages, max_tokens=200)
    assert report.total_candidates == 7  # the tool group is one unit
    assert report.included_tokens == tokens(selected)
    assert len(report.included) + len(report.excluded) == 7
    assert {e.reason.name for e in report.excluded} == {"OutsideWindow"}
    turn_1 = tokens(messages[1:3])  # the next unit at the cut: turn 1's block
    left = 200 - REPLY_TOKENS - tokens(selected)
    assert turn_1 > left
    assert report.excluded[0].reason.describe() == (
        f"OutsideWindow: not in the recency window, whose next unit needs {turn_1} tokens, "
        f"{left} available"
    )


def test_a_policy_preset_or_an_explicit_pipeline_can_be_chosen() -> None:
    messages = conversation()
    by_name = select_messages(messages, max_tokens=120, policy="code_review")
    by_policy = select_messages(messages, max_tokens=120, policy=preset("code_review"))
    assert [m.id for m in by_name] == [m.id for m in by_policy]
    oldest_first = Pipeline(PriorityScorer(), GreedySlice(), ChronologicalPlacer())
    explicit = select_messages(messages, max_tokens=120, pipeline=oldest_first)
    assert request_tokens(explicit) <= 120 and tool_call_problems(explicit) == []


def test_output_keeps_conversation_order_even_with_a_u_shaped_policy() -> None:
    messages = conversation()
    selected = select_messages(messages, max_tokens=10_000, policy="rag")
    assert [m.id for m in selected] == [m.id for m in messages]


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"max_tokens": -1}, "max_tokens", ["max_tokens", "must be >= 0", "-1"]),
        ({"max_tokens": "10"}, "max_tokens", ["max_tokens", "must be an integer", "'10'"]),
        (
            {"max_tokens": 10, "target_tokens": 20},
            "target_tokens",
            ["target_tokens", "must be <= max_tokens (10)", "20"],
        ),
        ({"max_tokens": 10, "output_reserve": -2}, "output_reserve", ["output_reserve", "-2"]),
        (
            {"max_tokens": 10, "policy": "summarize"},
            "policy",
            ["policy", "'summarize'", "chat, code_review, rag"],
        ),
        ({"max_tokens": 10, "policy": 3}, "policy", ["policy", "Policy or a preset name", "3"]),
        ({"max_tokens": 10, "pipeline": "chat"}, "pipeline", ["cupel.Pipeline", "'chat'"]),
        ({"max_tokens": 10, "start_on": "robot"}, "start_on", ["'robot'", "human, ai, system"]),
        ({"max_tokens": 10, "start_on": 5}, "start_on", ["int 5", "a message class"]),
        ({"max_tokens": 10, "keep_system": "yes"}, "keep_system", ["a bool", "'yes'"]),
        ({"max_tokens": 10, "keep_last": True}, "keep_last", ["non-negative int", "True"]),
        ({"max_tokens": 10, "deduplicate": 1}, "deduplicate", ["a bool", "got 1"]),
        ({"max_tokens": 10, "timestamp_key": ""}, "timestamp_key", ["non-empty string", "''"]),
        (
            {"max_tokens": 10, "token_counter": None},
            "token_counter",
            ["'approximate', a tokenizer, a chat model", "got NoneType None"],
        ),
        ({"max_tokens": 10, "token_counter": "exact"}, "token_counter", ["'exact'", "approximate"]),
        (
            {"max_tokens": 10, "token_counter_input": "words"},
            "token_counter_input",
            ["'words'", "'messages', 'message', 'text'"],
        ),
        (
            {"max_tokens": 10, "kinds": {"bot": "Message"}},
            "kinds['bot']",
            ["'bot'", "system, human, ai, tool_group"],
        ),
        ({"max_tokens": 10, "kinds": {"ai": " "}}, "kinds['ai']", ["non-empty kind name", "' '"]),
    ],
)
def test_bad_settings_raise_a_configuration_error_naming_field_value_and_what_is_allowed(
    kwargs: dict[str, Any], field: str, says: list[str]
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        select_messages(conversation(), **kwargs)
    assert raised.value.field == field
    for fragment in says:
        assert fragment in str(raised.value), fragment
    if "max_tokens" in kwargs and field != "max_tokens":  # the Runnable says the same, at once
        with pytest.raises(ConfigurationError) as at_construction:
            CupelMessageSelector(**kwargs)
        assert at_construction.value.field == field


def test_bad_message_inputs_name_the_message() -> None:
    with pytest.raises(ItemError) as raised:
        select_messages([HumanMessage("hi"), 42], max_tokens=100)  # type: ignore[list-item]
    assert raised.value.field == "messages[1]"
    assert "messages[1] must be a message or a message-like" in str(raised.value)
    assert "got int 42" in str(raised.value)
    with pytest.raises(ConfigurationError, match="sequence of messages or a prompt value"):
        select_messages("hello", max_tokens=100)  # type: ignore[arg-type]


def test_inputs_are_not_modified() -> None:
    messages = conversation()
    dumped = [m.model_dump() for m in messages]
    select_messages_with_report(messages, max_tokens=50)
    assert [m.model_dump() for m in messages] == dumped and len(messages) == 8


# -- the Runnable ------------------------------------------------------------------------
def test_the_selector_sits_between_a_prompt_and_a_model_in_an_lcel_chain() -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    selector = CupelMessageSelector(max_tokens=60)
    model = FakeListChatModel(responses=["The Amazon is ~6,400 km."])
    chain = prompt | selector | model | StrOutputParser()
    recorder = Recorder()
    answer = chain.invoke(
        {"history": conversation()[1:], "question": "And the Amazon?"},
        config={"callbacks": [recorder]},
    )
    assert answer == "The Amazon is ~6,400 km."
    (sent,) = recorder.model_inputs
    assert request_tokens(sent) <= 60
    assert sent[0].content == "You are terse." and sent[-1].content == "And the Amazon?"
    assert tool_call_problems(sent) == []


def test_invoke_returns_the_same_objects_and_keeps_the_last_report() -> None:
    messages = conversation()
    selector = CupelMessageSelector(max_tokens=200)
    assert selector.last_report is None
    selected = selector.invoke(messages)
    assert [m.id for m in selected] == ["sys", "h2", "a2", "t1", "a3", "h3"]
    assert all(any(s is m for m in messages) for s in selected)
    report = selector.last_report
    assert isinstance(report, SelectionReport)
    assert report.included_tokens == tokens(selected)


def test_the_report_is_emitted_as_a_custom_callback_event() -> None:
    recorder = Recorder()
    selector = CupelMessageSelector(max_tokens=200)
    selector.invoke(conversation(), config={"callbacks": [recorder]})
    ((name, data),) = recorder.events
    assert name == REPORT_EVENT == "cupel_selection"
    assert data.selection_report is selector.last_report  # the object, in-process
    assert data["report"] == selector.last_report.to_dict()  # type: ignore[union-attr]
    wire = json.loads(json.dumps(data))  # JSON-ready data
    assert wire["report"]["total_candidates"] == 7 and len(wire["report"]["excluded"]) == 2
    assert data["component"] == "CupelMessageSelector"
    assert (data["included"], data["excluded"], data["max_tokens"]) == (5, 2, 200)
    assert data["included_tokens"] == selector.last_report.included_tokens  # type: ignore[union-attr]


def test_without_listeners_the_report_is_built_when_read_and_is_the_eager_one() -> None:
    """Nobody listens to custom events: the selection runs without a trace and
    ``last_report`` builds the report on first read; it is the report a listened-to
    run sends."""
    messages = conversation()
    quiet = CupelMessageSelector(max_tokens=200)
    listened = CupelMessageSelector(max_tokens=200)
    recorder = Recorder()
    assert quiet.invoke(messages) == listened.invoke(messages, config={"callbacks": [recorder]})
    ((_, data),) = recorder.events
    lazy = quiet.last_report
    assert lazy is not None and lazy is quiet.last_report  # built once
    eager = select_messages_with_report(messages, max_tokens=200)[1]
    assert timeless(lazy) == timeless(data.selection_report) == timeless(eager)


def timeless(report: SelectionReport) -> dict[str, Any]:
    """The report's wire form without the stage timings."""
    wire = report.to_dict()
    wire["events"] = [{k: v for k, v in e.items() if k != "duration_ms"} for e in wire["events"]]
    return wire


class IgnoresCustomEvents(BaseCallbackHandler):
    ignore_custom_event = True

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.events.append(name)  # pragma: no cover - never called


def test_a_handler_that_ignores_custom_events_is_not_a_listener() -> None:
    handler = IgnoresCustomEvents()
    selector = CupelMessageSelector(max_tokens=200)
    selector.invoke(conversation(), config={"callbacks": [handler]})
    assert handler.events == []
    report = selector.last_report
    assert report is not None and report.included_tokens <= 200


def test_the_functions_reuse_a_checked_selection_for_settings_of_equal_content() -> None:
    """The checked configuration is shared by settings of equal content (key order,
    a copied ``kinds`` dict, an equal ``Policy``); an edited ``kinds`` dict, another
    counter or another policy is a new configuration."""
    from cupel_langchain._selection import build_selection

    kinds = {"human": "message"}
    first = build_selection({"max_tokens": 200, "kinds": kinds})
    assert build_selection({"kinds": dict(kinds), "max_tokens": 200}) is first
    kinds["ai"] = "message"
    assert build_selection({"max_tokens": 200, "kinds": kinds}) is not first
    assert build_selection({"max_tokens": 200, "token_counter": len}) is not first
    assert build_selection({"max_tokens": 200}) is build_selection({"max_tokens": 200})
    assert build_selection({"max_tokens": 200, "headroom": 0}) is not build_selection(
        {"max_tokens": 200, "headroom": 0.0}
    )
    policy = build_selection({"max_tokens": 200, "policy": preset("long_running")})
    assert build_selection({"max_tokens": 200, "policy": preset("long_running")}) is policy
    assert build_selection({"max_tokens": 200, "policy": preset("chat")}) is not policy
    assert select_messages([HumanMessage("x")], max_tokens=1, keep_last_human=False) == []  # 1 ...
    with pytest.raises(ConfigurationError, match="max_tokens"):
        select_messages([HumanMessage("x")], max_tokens=True, keep_last_human=False)  # not True
    with pytest.raises(ConfigurationError, match="keep_system"):
        select_messages(conversation(), max_tokens=200, keep_system=1)  # type: ignore[typeddict-item]
    messages = conversation()
    assert select_messages(messages, max_tokens=200) == select_messages(messages, max_tokens=200)
    assert [m.id for m in select_messages(messages, max_tokens=200)] == [
        "sys",
        "h2",
        "a2",
        "t1",
        "a3",
        "h3",
    ]


def test_the_report_event_shows_in_astream_events() -> None:
    chain = CupelMessageSelector(max_tokens=120) | GenericFakeChatModel(
        messages=iter([AIMessage("fine")])
    )

    async def collect() -> list[dict[str, Any]]:
        return [event async for event in chain.astream_events(conversation(), version="v2")]

    events = asyncio.run(collect())
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == ["cupel_selection"]
    json.dumps(custom[0]["data"])  # forwarding the event (SSE, logs) needs JSON
    assert isinstance(report_from_event(custom[0]), SelectionReport)


def test_report_false_skips_the_report_and_the_event() -> None:
    recorder = Recorder()
    selector = CupelMessageSelector(max_tokens=200, report=False)
    selected = selector.invoke(conversation(), config={"callbacks": [recorder]})
    assert [m.id for m in selected] == ["sys", "h2", "a2", "t1", "a3", "h3"]
    assert selector.last_report is None and recorder.events == []


def test_ainvoke_batch_and_abatch_agree_with_invoke() -> None:
    histories = [conversation(), conversation()[:4], conversation()[3:]]
    selector = CupelMessageSelector(max_tokens=120)
    expected = [[m.id for m in selector.invoke(h)] for h in histories]
    assert [[m.id for m in out] for out in selector.batch(histories)] == expected
    assert [[m.id for m in out] for out in asyncio.run(selector.abatch(histories))] == expected
    recorder = Recorder()
    one = asyncio.run(selector.ainvoke(histories[0], config={"callbacks": [recorder]}))
    assert [m.id for m in one] == expected[0]
    assert [name for name, _ in recorder.events] == ["cupel_selection"]


def test_batch_and_abatch_emit_one_report_event_per_input() -> None:
    histories = [conversation(), conversation()[:4], conversation()[3:]]
    selector = CupelMessageSelector(max_tokens=120)
    for run in (
        lambda config: selector.batch(histories, config=config),
        lambda config: asyncio.run(selector.abatch(histories, config=config)),
    ):
        recorder = Recorder()
        outputs = run({"callbacks": [recorder]})
        assert [name for name, _ in recorder.events] == ["cupel_selection"] * 3
        reports = [report_from_event(data) for _, data in recorder.events]
        # each event carries the report of one input (the batch runs concurrently)
        assert sorted(r.included_tokens for r in reports) == sorted(tokens(out) for out in outputs)
        assert sorted(r.total_candidates for r in reports) == [4, 4, 7]


def test_the_selector_streams_its_single_result() -> None:
    chunks = list(CupelMessageSelector(max_tokens=200).stream(conversation()))
    assert len(chunks) == 1 and [m.id for m in chunks[0]] == ["sys", "h2", "a2", "t1", "a3", "h3"]


def test_the_budget_can_be_made_configurable_per_call() -> None:
    selector = CupelMessageSelector(max_tokens=1000).configurable_fields(
        max_tokens=ConfigurableField(id="history_tokens")
    )
    full = selector.invoke(conversation())
    small = selector.invoke(conversation(), config={"configurable": {"history_tokens": 40}})
    assert len(full) == 8 and request_tokens(small) <= 40


def test_the_selector_counts_with_a_chat_model() -> None:
    model = GenericFakeChatModel(
        messages=iter([]), custom_get_token_ids=lambda text: list(range(len(text) // 4))
    )
    selector = CupelMessageSelector(max_tokens=60, token_counter=model)
    selected = selector.invoke(conversation())
    # the model counts each unit; the reply's tokens are reserved as with any counter
    assert model.get_num_tokens_from_messages(selected) + REPLY_TOKENS <= 60
    assert selector.last_report is not None
    assert selector.last_report.included_tokens == sum(
        model.get_num_tokens_from_messages([m]) for m in selected
    )


def test_bad_selector_settings_fail_at_construction_with_the_field_named() -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector(max_tokens="100")
    assert raised.value.field == "max_tokens"
    assert str(raised.value) == (
        "CupelMessageSelector.max_tokens: must be an integer, or ('fraction', f) with "
        "0 < f <= 1 (a share of the chat model's input window), got '100'"
    )
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector()
    assert str(raised.value) == "CupelMessageSelector.max_tokens: is required"
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector(max_tokens=100, keep_sytem=False)  # a typo is not ignored
    assert raised.value.field == "keep_sytem"
    assert str(raised.value).startswith(
        "CupelMessageSelector: unknown option 'keep_sytem'; allowed: name, max_tokens,"
    )
    assert "keep_system" in str(raised.value)
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector(max_tokens=100, report="yes")
    assert raised.value.field == "report"
    message = str(raised.value)
    assert message == "CupelMessageSelector.report: Input should be a valid boolean, got 'yes'"


def test_the_selector_has_langchain_names_and_types() -> None:
    selector = CupelMessageSelector(max_tokens=10)
    assert selector.get_name() == "CupelMessageSelector"
    assert selector.OutputType == list[BaseMessage]
    assert selector.get_input_jsonschema()["title"] == "CupelMessageSelectorInput"
    assert CupelMessageSelector.is_lc_serializable()  # see test_lc_citizenship.py


def test_a_new_counter_is_never_served_a_freed_one_s_selection() -> None:
    """Counters made and dropped one after another (a freed object's address is
    reused at once) each count with themselves: a selection is shared only by settings
    of equal content, and a counter is its own key, held while the selection is kept."""
    history = [HumanMessage("one two three four"), AIMessage("five six"), HumanMessage("seven")]

    def words_times(factor: int) -> Any:
        return lambda text: factor * len(text.split())

    for factor in range(1, 40):
        kept, report = select_messages_with_report(
            history, max_tokens=10_000, token_counter=words_times(factor)
        )
        assert kept == history
        expected = sum(factor * len(str(m.content).split()) + MESSAGE_TOKENS for m in history)
        assert report.included_tokens == expected


def test_selector_copies_and_edited_settings_take_effect() -> None:
    history = conversation()
    selector = CupelMessageSelector(max_tokens=10_000)
    wide = selector.invoke(history)
    narrow = selector.model_copy(update={"max_tokens": 60})
    assert len(narrow.invoke(history)) < len(wide) == len(selector.invoke(history))
    selector.kinds = {}
    assert selector.kinds is not None
    selector.kinds["human"] = "Question"  # edited in place: the next run reads it
    selector.invoke(history)
    report = selector.last_report
    assert report is not None
    assert {str(e.item.kind) for e in report.included} >= {"Question"}
