"""select_messages and CupelMessageSelector in real LCEL chains with LangChain's fake models."""

from __future__ import annotations

import asyncio
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
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField

from cupel import (
    PRESET_NAMES,
    ChronologicalPlacer,
    CompositeScorer,
    ConfigurationError,
    GreedySlice,
    ItemError,
    KindScorer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    PinnedBudgetError,
    Pipeline,
    PriorityScorer,
    RecencyScorer,
    SelectionReport,
)
from cupel.presets import preset
from cupel_langchain import (
    REPORT_EVENT,
    CupelMessageSelector,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)
from cupel_langchain._selection import metadata_unread


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
    return count_tokens_approximately(messages)


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
def test_the_selection_fits_the_budget_and_keeps_the_newest_turns() -> None:
    messages = conversation()
    selected = select_messages(messages, max_tokens=120)
    assert tokens(selected) <= 120
    assert [m.id for m in selected] == ["sys", "a2", "t1", "a3", "h3"]
    assert all(any(s is m for m in messages) for s in selected)


def test_everything_is_kept_when_it_fits() -> None:
    messages = conversation()
    selected = select_messages(messages, max_tokens=10_000)
    assert len(selected) == len(messages) and all(
        a is b for a, b in zip(selected, messages, strict=True)
    )


def test_a_tool_call_and_its_result_are_kept_or_dropped_together() -> None:
    messages = conversation()
    for budget in range(23, 400, 7):  # 23: the system prompt + the last turn
        selected = select_messages(messages, max_tokens=budget)
        ids = [m.id for m in selected]
        assert ("a2" in ids) == ("t1" in ids), budget
        assert tool_call_problems(selected) == [], budget
        assert tokens(selected) <= budget


def test_output_reserve_and_target_tokens_shrink_the_room() -> None:
    messages = conversation()
    assert tokens(select_messages(messages, max_tokens=200, output_reserve=80)) <= 120
    assert tokens(select_messages(messages, max_tokens=200, target_tokens=120)) <= 120


def test_start_on_human_drops_leading_non_human_units_but_keeps_the_system_prompt() -> None:
    messages = conversation()
    selected = select_messages(messages, max_tokens=120, start_on="human")
    assert [m.id for m in selected] == ["sys", "h3"]
    same = select_messages(messages, max_tokens=120, start_on=[HumanMessage])
    assert [m.id for m in same] == ["sys", "h3"]


def test_start_on_reports_what_it_dropped_as_filtered() -> None:
    _, report = select_messages_with_report(conversation(), max_tokens=120, start_on="human")
    filtered = report.excluded_by("Filtered")
    assert [e.reason.filter_name for e in filtered] == ["start_on:human"] * 2  # type: ignore[attr-defined]
    assert {e.item.metadata["langchain.type"] for e in filtered} == {"tool_group", "ai"}
    assert [e.item.metadata["langchain.type"] for e in report.included] == ["system", "human"]


def test_the_system_prompt_is_pinned_and_a_too_large_one_is_a_clear_error() -> None:
    messages = conversation()
    assert [m.id for m in select_messages(messages, max_tokens=23)] == ["sys", "h3"]
    with pytest.raises(PinnedBudgetError) as err:
        select_messages(messages, max_tokens=30, output_reserve=10)
    assert (err.value.pinned_tokens, err.value.available_tokens) == (23, 20)
    assert str(err.value) == (
        "The messages that are always kept need 23 tokens (system messages: 11, the latest 1 "
        "unit(s) kept by keep_last: 12), but the budget allows 20 (max_tokens - output_reserve);"
        " raise max_tokens, shorten them, or pass keep_system=False / keep_last=0"
    )
    assert [m.id for m in select_messages(messages, max_tokens=11, keep_last=0)] == ["sys"]
    unpinned = select_messages(messages, max_tokens=12, keep_system=False)
    assert [m.id for m in unpinned] == ["h3"]  # the system prompt competes like any turn


def test_a_policy_reading_metadata_sees_the_mapped_metadata() -> None:
    # Without a report, preset selections skip the per-message metadata; a pipeline that
    # reads metadata must still get it: here it boosts the human turns.
    messages = conversation()
    boost_humans = Pipeline(
        CompositeScorer(
            [(RecencyScorer(), 1.0), (MetadataKeyScorer("langchain.type", "human", 100.0), 1.0)]
        )
    )
    assert not metadata_unread(boost_humans) and metadata_unread(preset("chat").build())
    kept = select_messages(messages, max_tokens=160, pipeline=boost_humans)
    assert [m.id for m in kept] == ["sys", "h1", "h2", "h3"]
    kept, _ = select_messages_with_report(messages, max_tokens=160, pipeline=boost_humans)
    assert [m.id for m in kept] == ["sys", "h1", "h2", "h3"]
    by_recency = select_messages(messages, max_tokens=160)
    assert [m.id for m in by_recency] == ["sys", "a1", "a2", "t1", "a3", "h3"]


def test_only_pipelines_made_of_cupels_metadata_free_components_skip_metadata() -> None:
    class Custom(RecencyScorer):  # a subclass could read anything
        pass

    assert metadata_unread(Pipeline(CompositeScorer([(KindScorer(), 1), (RecencyScorer(), 2)])))
    assert not metadata_unread(Pipeline(Custom()))
    assert not metadata_unread(Pipeline(RecencyScorer(), on_overflow=lambda event: None))
    assert not metadata_unread(Pipeline(CompositeScorer([(MetadataTrustScorer(), 1)])))
    for name in PRESET_NAMES:
        assert metadata_unread(preset(name).build()), name


def test_equal_turns_are_distinct_messages_unless_deduplication_is_asked() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("ok", id="1"),
        AIMessage("ok", id="2"),
        HumanMessage("ok", id="3"),
    ]
    assert [m.id for m in select_messages(messages, max_tokens=100)] == ["1", "2", "3"]
    deduplicated = select_messages(messages, max_tokens=100, deduplicate=True, keep_last=0)
    assert [m.id for m in deduplicated] == ["3"]
    # pinned messages (here the latest turn) are never deduplicated away
    assert [m.id for m in select_messages(messages, max_tokens=100, deduplicate=True)] == [
        "2",
        "3",
    ]


def test_orphans_and_unanswered_calls_never_reach_the_output() -> None:
    messages: list[BaseMessage] = [
        ToolMessage("stale", tool_call_id="gone", id="orphan"),
        HumanMessage("hi", id="h"),
        AIMessage("", tool_calls=[call("never")], id="pending"),
        HumanMessage("hello?", id="h2"),
    ]
    selected, report = select_messages_with_report(messages, max_tokens=1000)
    assert [m.id for m in selected] == ["h", "h2"]
    reasons = {
        e.item.metadata.get("langchain.id") or e.item.metadata["langchain.ids"][0]: e.reason
        for e in report.excluded
    }
    assert reasons["orphan"].filter_name == "orphan_tool_message"  # type: ignore[attr-defined]
    assert reasons["pending"].filter_name == "unanswered_tool_calls"  # type: ignore[attr-defined]
    assert report.total_candidates == 4
    assert report.total_tokens_considered == tokens(messages)


def test_the_report_accounts_for_every_unit() -> None:
    messages = conversation()
    selected, report = select_messages_with_report(messages, max_tokens=120)
    assert report.total_candidates == 7  # the tool group is one unit
    assert report.included_tokens == tokens(selected)
    assert len(report.included) + len(report.excluded) == 7
    assert {e.reason.name for e in report.excluded} == {"BudgetExceeded"}


def test_a_policy_preset_or_an_explicit_pipeline_can_be_chosen() -> None:
    messages = conversation()
    by_name = select_messages(messages, max_tokens=120, policy="tool_use")
    by_policy = select_messages(messages, max_tokens=120, policy=preset("tool_use"))
    assert [m.id for m in by_name] == [m.id for m in by_policy]
    oldest_first = Pipeline(PriorityScorer(), GreedySlice(), ChronologicalPlacer())
    explicit = select_messages(messages, max_tokens=120, pipeline=oldest_first)
    assert tokens(explicit) <= 120 and tool_call_problems(explicit) == []


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
            ["'approximate', a chat model", "None"],
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
    assert tokens(sent) <= 60
    assert sent[0].content == "You are terse." and sent[-1].content == "And the Amazon?"
    assert tool_call_problems(sent) == []


def test_invoke_returns_the_same_objects_and_keeps_the_last_report() -> None:
    messages = conversation()
    selector = CupelMessageSelector(max_tokens=120)
    assert selector.last_report is None
    selected = selector.invoke(messages)
    assert [m.id for m in selected] == ["sys", "a2", "t1", "a3", "h3"]
    assert all(any(s is m for m in messages) for s in selected)
    report = selector.last_report
    assert isinstance(report, SelectionReport)
    assert report.included_tokens == tokens(selected)


def test_the_report_is_emitted_as_a_custom_callback_event() -> None:
    recorder = Recorder()
    selector = CupelMessageSelector(max_tokens=120)
    selector.invoke(conversation(), config={"callbacks": [recorder]})
    ((name, data),) = recorder.events
    assert name == REPORT_EVENT == "cupel_selection"
    assert data["report"] is selector.last_report
    assert data["component"] == "CupelMessageSelector"
    assert (data["included"], data["excluded"], data["max_tokens"]) == (4, 3, 120)
    assert data["included_tokens"] == selector.last_report.included_tokens  # type: ignore[union-attr]


def test_the_report_event_shows_in_astream_events() -> None:
    chain = CupelMessageSelector(max_tokens=120) | GenericFakeChatModel(
        messages=iter([AIMessage("fine")])
    )

    async def collect() -> list[dict[str, Any]]:
        return [event async for event in chain.astream_events(conversation(), version="v2")]

    events = asyncio.run(collect())
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == ["cupel_selection"]
    assert isinstance(custom[0]["data"]["report"], SelectionReport)


def test_report_false_skips_the_report_and_the_event() -> None:
    recorder = Recorder()
    selector = CupelMessageSelector(max_tokens=120, report=False)
    selected = selector.invoke(conversation(), config={"callbacks": [recorder]})
    assert [m.id for m in selected] == ["sys", "a2", "t1", "a3", "h3"]
    assert selector.last_report is None and recorder.events == []


def test_ainvoke_batch_and_abatch_agree_with_invoke() -> None:
    histories = [conversation(), conversation()[:4], conversation()[3:]]
    selector = CupelMessageSelector(max_tokens=90)
    expected = [[m.id for m in selector.invoke(h)] for h in histories]
    assert [[m.id for m in out] for out in selector.batch(histories)] == expected
    assert [[m.id for m in out] for out in asyncio.run(selector.abatch(histories))] == expected
    recorder = Recorder()
    one = asyncio.run(selector.ainvoke(histories[0], config={"callbacks": [recorder]}))
    assert [m.id for m in one] == expected[0]
    assert [name for name, _ in recorder.events] == ["cupel_selection"]


def test_batch_and_abatch_emit_one_report_event_per_input() -> None:
    histories = [conversation(), conversation()[:4], conversation()[3:]]
    selector = CupelMessageSelector(max_tokens=90)
    for run in (
        lambda config: selector.batch(histories, config=config),
        lambda config: asyncio.run(selector.abatch(histories, config=config)),
    ):
        recorder = Recorder()
        outputs = run({"callbacks": [recorder]})
        assert [name for name, _ in recorder.events] == ["cupel_selection"] * 3
        reports = [data["report"] for _, data in recorder.events]
        # each event carries the report of one input (the batch runs concurrently)
        assert sorted(r.included_tokens for r in reports) == sorted(tokens(out) for out in outputs)
        assert sorted(r.total_candidates for r in reports) == [4, 4, 7]


def test_the_selector_streams_its_single_result() -> None:
    chunks = list(CupelMessageSelector(max_tokens=120).stream(conversation()))
    assert len(chunks) == 1 and [m.id for m in chunks[0]] == ["sys", "a2", "t1", "a3", "h3"]


def test_the_budget_can_be_made_configurable_per_call() -> None:
    selector = CupelMessageSelector(max_tokens=1000).configurable_fields(
        max_tokens=ConfigurableField(id="history_tokens")
    )
    full = selector.invoke(conversation())
    small = selector.invoke(conversation(), config={"configurable": {"history_tokens": 40}})
    assert len(full) == 8 and tokens(small) <= 40


def test_the_selector_counts_with_a_chat_model() -> None:
    model = GenericFakeChatModel(
        messages=iter([]), custom_get_token_ids=lambda text: list(range(len(text) // 4))
    )
    selector = CupelMessageSelector(max_tokens=60, token_counter=model)
    selected = selector.invoke(conversation())
    assert model.get_num_tokens_from_messages(selected) <= 60
    assert selector.last_report is not None
    assert selector.last_report.included_tokens == sum(
        model.get_num_tokens_from_messages([m]) for m in selected
    )


def test_bad_selector_settings_fail_at_construction_with_the_field_named() -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector(max_tokens="100")
    assert raised.value.field == "max_tokens"
    assert str(raised.value) == (
        "CupelMessageSelector.max_tokens: Input should be a valid integer, got '100'"
    )
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector()
    assert str(raised.value) == "CupelMessageSelector.max_tokens: Field required, got {}"
    with pytest.raises(ConfigurationError) as raised:
        CupelMessageSelector(max_tokens=100, keep_sytem=False)  # a typo is not ignored
    assert raised.value.field == "keep_sytem"
    assert str(raised.value).startswith(
        "CupelMessageSelector.keep_sytem: unknown option, got False; allowed: name, max_tokens,"
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
    assert not CupelMessageSelector.is_lc_serializable()
