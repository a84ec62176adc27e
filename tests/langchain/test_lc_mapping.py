"""Mapping LangChain messages and documents to cupel items and back."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from cupel import ConfigurationError, ContextKind, ContextSource, ItemError
from cupel.counting import MESSAGE_TOKENS, estimate_tokens
from cupel_langchain import (
    DEFAULT_MESSAGE_KINDS,
    approximate_message_tokens,
    documents_to_items,
    messages_to_items,
    select_messages,
    tool_call_problems,
)


def call(call_id: str, name: str = "lookup") -> dict[str, object]:
    return {"name": name, "args": {"q": call_id}, "id": call_id}


def history() -> list[BaseMessage]:
    return [
        SystemMessage("You are terse.", id="s"),
        HumanMessage("What is the weather in Oslo and Bergen?", id="h1"),
        AIMessage("Checking.", tool_calls=[call("c1"), call("c2")], id="a1"),
        ToolMessage("Oslo: rain", tool_call_id="c1", id="t1"),
        ToolMessage("Bergen: sun", tool_call_id="c2", id="t2"),
        AIMessage("Rain in Oslo, sun in Bergen.", id="a2"),
        HumanMessage("Thanks", id="h2"),
    ]


def test_each_message_type_maps_to_its_kind_and_source() -> None:
    mapped = messages_to_items(history())
    assert [(str(i.kind), str(i.source)) for i in mapped.items] == [
        ("SystemPrompt", "Chat"),
        ("Message", "Chat"),
        ("ToolOutput", "Tool"),
        ("Message", "Chat"),
        ("Message", "Chat"),
    ]


def test_system_messages_and_the_latest_human_message_are_pinned_by_default() -> None:
    assert [i.pinned for i in messages_to_items(history()).items] == [True] + [False] * 3 + [True]
    unpinned = messages_to_items(history(), keep_system=False, keep_last_human=False).items
    assert not any(i.pinned for i in unpinned)
    assert unpinned[0].kind == ContextKind.SYSTEM_PROMPT


def test_the_latest_human_message_is_pinned_even_when_the_history_goes_on() -> None:
    # an agent run: the task is the latest human message, the tool rounds follow it
    group_last = history()[:5]
    assert [i.pinned for i in messages_to_items(group_last).items] == [True, True, False]


def test_keep_last_also_pins_the_latest_units() -> None:
    messages = [*history(), SystemMessage("late instruction")]
    pinned = [i.pinned for i in messages_to_items(messages, keep_last=1).items]
    assert pinned == [True, False, False, False, True, True]
    two = [
        i.pinned
        for i in messages_to_items(
            messages, keep_system=False, keep_last_human=False, keep_last=2
        ).items
    ]
    assert two == [False, False, False, True, True, False]
    with pytest.raises(ConfigurationError) as raised:
        messages_to_items(messages, keep_last=-1)
    assert raised.value.field == "keep_last"
    with pytest.raises(ConfigurationError) as raised:
        messages_to_items(messages, keep_last_human="yes")  # type: ignore[arg-type]
    assert raised.value.field == "keep_last_human"


def test_units_of_earlier_turns_carry_their_turn_for_the_recency_window() -> None:
    messages = [*history(), AIMessage("You're welcome.", id="a3")]
    mapped = messages_to_items(messages)
    turns = [i.metadata.get("cupel:turn") for i in mapped.items]
    # system (turn 0) and turn 1 are blocks; the latest turn (h2, a3) stands unit by unit
    assert turns == [0, 1, 1, 1, None, None]


def test_an_ai_tool_call_and_all_its_answers_form_one_item_with_summed_tokens() -> None:
    messages = history()
    mapped = messages_to_items(messages)
    group = mapped.items[2]
    assert mapped.unit_of(group) == tuple(messages[2:5])
    assert group.tokens == sum(approximate_message_tokens(m) for m in messages[2:5])
    assert group.content == "Checking.\nOslo: rain\nBergen: sun"
    assert group.metadata == {
        "langchain.index": 2,
        "langchain.type": "tool_group",
        "langchain.indices": (2, 3, 4),
        "langchain.ids": ("a1", "t1", "t2"),
        "cupel:turn": 1,
    }


def test_single_messages_keep_index_type_and_id_in_metadata() -> None:
    mapped = messages_to_items(history())
    assert mapped.items[1].metadata == {
        "langchain.index": 1,
        "langchain.type": "human",
        "langchain.id": "h1",
        "cupel:turn": 1,
    }
    assert type(mapped.items[1].metadata["cupel:turn"]) is int
    anonymous = messages_to_items([HumanMessage("no id")]).items[0]
    assert anonymous.metadata == {"langchain.index": 0, "langchain.type": "human"}


def test_each_unit_is_counted_once_with_the_approximate_counter() -> None:
    messages = history()
    mapped = messages_to_items(messages)
    assert sum(i.tokens for i in mapped.items) == sum(map(approximate_message_tokens, messages))


def test_mapping_back_returns_the_same_objects_in_conversation_order() -> None:
    messages = history()
    mapped = messages_to_items(messages)
    back = mapped.messages_for(reversed(mapped.items))
    assert len(back) == len(messages)
    assert all(a is b for a, b in zip(back, messages, strict=True))


def test_a_stray_result_inside_a_tool_round_is_left_out_and_the_round_kept() -> None:
    messages: list[BaseMessage] = [
        AIMessage("", tool_calls=[call("c1"), call("c2")]),
        ToolMessage("unrelated", tool_call_id="elsewhere"),
        ToolMessage("first", tool_call_id="c1"),
        ToolMessage("second", tool_call_id="c2"),
    ]
    mapped = messages_to_items(messages)
    assert [reason.problem for _, reason in mapped.invalid] == ["unknown_result"]
    (group,) = mapped.items
    back = mapped.messages_for([group])
    assert [m is o for m, o in zip(back, [messages[0], *messages[2:]], strict=True)] == [True] * 3
    assert group.metadata["langchain.indices"] == (0, 2, 3)


@pytest.mark.parametrize(
    ("messages", "reasons"),
    [
        (  # the answer arrives after the user spoke again: the provider sees an open call
            [
                AIMessage("", tool_calls=[call("c1")]),
                HumanMessage("interjection"),
                ToolMessage("late answer", tool_call_id="c1"),
            ],
            ["unanswered_calls", "late_result"],
        ),
        (  # a second answer to the same call
            [
                AIMessage("", tool_calls=[call("c1")]),
                ToolMessage("answer", tool_call_id="c1"),
                ToolMessage("answer again", tool_call_id="c1"),
            ],
            ["duplicate_result"],
        ),
        (  # two rounds interleaved: the second call arrives while the first is open
            [
                AIMessage("", tool_calls=[call("c1")]),
                AIMessage("", tool_calls=[call("c2")]),
                ToolMessage("one", tool_call_id="c1"),
                ToolMessage("two", tool_call_id="c2"),
            ],
            ["unanswered_calls", "late_result"],
        ),
        (  # an answer to a call nobody made
            [
                AIMessage("", tool_calls=[call("c1")]),
                ToolMessage("one", tool_call_id="c1"),
                ToolMessage("who?", tool_call_id="c9"),
            ],
            ["unknown_result"],
        ),
        (  # only some calls answered before the conversation moves on
            [
                AIMessage("", tool_calls=[call("c1"), call("c2")]),
                ToolMessage("one", tool_call_id="c1"),
                HumanMessage("hurry up"),
            ],
            ["partial_answers"],
        ),
    ],
)
def test_tool_messages_pair_with_calls_the_way_providers_check_them(
    messages: list[BaseMessage], reasons: list[str]
) -> None:
    before = tool_call_problems(messages)
    assert before  # each input would be refused as it is
    mapped = messages_to_items([HumanMessage("hi"), *messages])
    assert sorted(reason.problem for _, reason in mapped.invalid) == sorted(reasons)
    assert tool_call_problems(mapped.messages_for(mapped.items)) == []
    kept = select_messages([HumanMessage("hi"), *messages], max_tokens=10_000)
    assert tool_call_problems(kept) == [] and kept[0].content == "hi"


def test_foreign_items_are_refused_when_mapping_back() -> None:
    mapped = messages_to_items(history())
    other = messages_to_items(history())
    with pytest.raises(ConfigurationError, match="was not built from this history"):
        mapped.messages_for(other.items[:1])


def test_orphan_tool_messages_and_unanswered_calls_are_set_aside_with_a_reason() -> None:
    messages: list[BaseMessage] = [
        ToolMessage("stale result", tool_call_id="gone"),
        HumanMessage("hi"),
        AIMessage("", tool_calls=[call("c1"), call("c2")]),
        ToolMessage("only one answer", tool_call_id="c1"),
        AIMessage("", tool_calls=[call("c3")]),
    ]
    mapped = messages_to_items(messages)
    assert [m.content for i in mapped.items for m in mapped.unit_of(i)] == ["hi"]
    assert [(item.content, reason.problem) for item, reason in mapped.invalid] == [
        ("stale result", "unknown_result"),
        ("[tool calls: lookup, lookup]\nonly one answer", "partial_answers"),
        ("[tool calls: lookup]", "unanswered_calls"),
    ]


def test_timestamps_follow_message_order_by_default() -> None:
    stamps = [i.timestamp for i in messages_to_items(history()).items]
    assert all(s is not None and s.tzinfo == timezone.utc for s in stamps)
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_a_carried_timestamp_is_used_and_later_messages_follow_it() -> None:
    when = datetime(2025, 6, 1, 12, 0, tzinfo=timezone.utc)
    messages: list[BaseMessage] = [
        HumanMessage("first"),
        HumanMessage("stamped", additional_kwargs={"timestamp": "2025-06-01T14:00:00+02:00"}),
        AIMessage("reply"),
        AIMessage("meta", response_metadata={"timestamp": when.timestamp() + 60}),
    ]
    stamps = [i.timestamp for i in messages_to_items(messages, timestamp_key="timestamp").items]
    assert stamps[1] == when
    assert stamps[2] is not None and stamps[2] > when
    assert stamps[3] == datetime(2025, 6, 1, 12, 1, tzinfo=timezone.utc)
    assert stamps[0] is not None and stamps[0] < when
    ignored = messages_to_items(messages).items  # by default, message order only
    assert ignored[1].timestamp is not None and ignored[1].timestamp.year == 2000


def test_unusable_carried_timestamps_are_ignored() -> None:
    messages = [HumanMessage("a", additional_kwargs={"timestamp": "yesterday"}), HumanMessage("b")]
    stamps = [i.timestamp for i in messages_to_items(messages, timestamp_key="timestamp").items]
    assert stamps[0] is not None and stamps[1] is not None and stamps[0] < stamps[1]


@pytest.mark.parametrize(
    "value", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00", 1e20, float("nan")]
)
def test_timestamps_out_of_range_are_ignored_like_other_unusable_values(value: object) -> None:
    messages = [HumanMessage("a", additional_kwargs={"timestamp": value}), HumanMessage("b")]
    stamps = [i.timestamp for i in messages_to_items(messages, timestamp_key="timestamp").items]
    assert stamps[0] is not None and stamps[1] is not None and stamps[0] < stamps[1]
    assert stamps[0].year == 2000  # the synthetic order, as if no timestamp were carried


def test_carried_timestamps_out_of_order_still_follow_message_order() -> None:
    messages = [
        HumanMessage("late", additional_kwargs={"timestamp": "2025-06-02T00:00:00Z"}),
        HumanMessage("early", additional_kwargs={"timestamp": "2025-06-01T00:00:00Z"}),
    ]
    first, second = messages_to_items(messages, timestamp_key="timestamp").items
    assert first.timestamp is not None and second.timestamp is not None
    assert second.timestamp > first.timestamp  # message order wins: the window has no holes


def test_a_remove_message_is_refused_with_what_to_do_instead() -> None:
    messages = [HumanMessage("hi", id="1"), RemoveMessage(id="1")]
    with pytest.raises(ItemError) as raised:
        messages_to_items(messages)
    assert raised.value.field == "messages[1]"
    assert "RemoveMessage (id='1')" in str(raised.value)
    assert "apply it to the state first" in str(raised.value)
    with pytest.raises(ItemError, match="RemoveMessage"):
        select_messages(messages, max_tokens=100)


def test_kinds_can_be_overridden_per_unit_type() -> None:
    mapped = messages_to_items(history(), kinds={"tool_group": "Memory", "human": "Question"})
    assert [str(i.kind) for i in mapped.items][:3] == ["SystemPrompt", "Question", "Memory"]
    assert set(DEFAULT_MESSAGE_KINDS) >= {"system", "human", "ai", "tool_group"}


@pytest.mark.parametrize(
    ("kinds", "field"),
    [({"robot": "Message"}, "kinds['robot']"), ({"human": ""}, "kinds['human']")],
)
def test_bad_kind_overrides_name_the_field(kinds: dict[str, str], field: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        messages_to_items(history(), kinds=kinds)
    assert raised.value.field == field


def test_empty_content_gets_a_readable_placeholder() -> None:
    mapped = messages_to_items([AIMessage(""), AIMessage([{"type": "text", "text": "blocks"}])])
    assert [i.content for i in mapped.items] == ["[ai message]", "blocks"]


def test_message_likes_and_prompt_values_are_accepted() -> None:
    mapped = messages_to_items([("human", "hello"), {"role": "assistant", "content": "hi"}])
    assert [m.type for i in mapped.items for m in mapped.unit_of(i)] == ["human", "ai"]
    prompt = ChatPromptTemplate.from_messages([("system", "Be kind."), MessagesPlaceholder("h")])
    value = prompt.invoke({"h": [HumanMessage("x")]})
    assert [str(i.kind) for i in messages_to_items(value).items] == ["SystemPrompt", "Message"]


def test_a_string_is_not_taken_for_a_list_of_messages() -> None:
    with pytest.raises(ConfigurationError, match="sequence of messages"):
        messages_to_items("hello")  # type: ignore[arg-type]


def test_counters_per_message_per_text_and_per_list_are_applied_once_per_unit() -> None:
    messages = history()
    seen: list[int] = []

    def per_list(unit: list[BaseMessage]) -> int:
        seen.append(len(unit))
        return 10 * len(unit)

    mapped = messages_to_items(messages, token_counter=per_list)
    assert sorted(seen) == [1, 1, 1, 1, 3]  # once per unit, the tool round (3 messages) once
    seen.clear()
    pinned_group = messages_to_items(messages[:5], token_counter=per_list, keep_last=1)
    assert pinned_group.items[-1].pinned and sorted(seen) == [1, 1, 3]
    assert [i.tokens for i in mapped.items] == [10, 10, 30, 10, 10]

    def per_message(message: BaseMessage) -> int:
        return 7

    assert [i.tokens for i in messages_to_items(messages, token_counter=per_message).items] == [
        7,
        7,
        21,
        7,
        7,
    ]

    def per_text(text: str) -> int:
        return len(text)

    by_text = messages_to_items(messages, token_counter=per_text).items
    # the counter prices the text; the message's overhead is the model's
    assert by_text[1].tokens == len("What is the weather in Oslo and Bergen?") + MESSAGE_TOKENS
    forced = messages_to_items(messages, token_counter=len, token_counter_input="text").items
    assert forced[1].tokens == by_text[1].tokens


def test_a_chat_model_counts_each_unit_with_get_num_tokens_from_messages() -> None:
    model = GenericFakeChatModel(
        messages=iter([]), custom_get_token_ids=lambda text: list(range(len(text)))
    )
    messages = history()
    mapped = messages_to_items(messages, token_counter=model)
    assert mapped.items[2].tokens == model.get_num_tokens_from_messages(messages[2:5])
    assert mapped.items[1].tokens == model.get_num_tokens_from_messages(messages[1:2])


@pytest.mark.parametrize(
    ("counter", "counter_input", "match"),
    [
        ("exact", "auto", "unknown counter name 'exact'"),
        (42, "auto", "must be 'approximate', a tokenizer, a chat model .* got int 42"),
        ("approximate", "bytes", "token_counter_input must be one of"),
    ],
)
def test_bad_counters_are_refused_with_the_field_named(
    counter: object, counter_input: str, match: str
) -> None:
    with pytest.raises(ConfigurationError, match=match) as raised:
        messages_to_items(history(), token_counter=counter, token_counter_input=counter_input)
    assert raised.value.field in {"token_counter", "token_counter_input"}


@pytest.mark.parametrize("bad", [-1, 2.5, "3", None])
def test_a_counter_returning_a_non_count_is_reported(bad: object) -> None:
    # an unannotated callable is tried on a list of messages, then on a text: the message
    # names what it returned, what it must return and how to say what it takes
    says = re.escape(f"token_counter returned {bad!r} for a list of messages")
    with pytest.raises(ConfigurationError, match=says) as raised:
        messages_to_items(history(), token_counter=lambda unit: bad)
    assert raised.value.field == "token_counter"
    assert "must return a non-negative int" in str(raised.value)
    assert "token_counter_input=" in str(raised.value)
    # a list counter saying so is checked on each unit it counts
    per_unit = re.escape(f"token_counter returned {bad!r} for a unit of 1 message(s)")
    with pytest.raises(ConfigurationError, match=per_unit):
        messages_to_items(history(), token_counter=lambda unit: bad, token_counter_input="messages")


def test_input_messages_are_not_modified() -> None:
    messages = history()
    before = [m.model_dump() for m in messages]
    messages_to_items(messages)
    assert [m.model_dump() for m in messages] == before


# -- documents -------------------------------------------------------------------------
def test_documents_map_to_document_items_with_tokens_from_page_content() -> None:
    docs = [Document("alpha " * 10, id="d1"), Document("beta")]
    mapped = documents_to_items(docs)
    assert [(str(i.kind), str(i.source), i.tokens) for i in mapped.items] == [
        ("Document", "Rag", estimate_tokens("alpha " * 10)),
        ("Document", "Rag", estimate_tokens("beta")),
    ]
    assert mapped.items[0].metadata == {"langchain.index": 0, "langchain.id": "d1"}
    assert mapped.items[1].metadata == {"langchain.index": 1}


def test_relevance_comes_from_the_metadata_key_or_else_the_input_rank() -> None:
    docs = [
        Document("a", metadata={"relevance_score": 0.3}),
        Document("b"),
        Document("c", metadata={"score": 0.9}),
        Document("d"),
    ]
    assert [i.future_relevance_hint for i in documents_to_items(docs).items] == [
        0.3,
        0.75,
        0.5,
        0.25,
    ]
    by_score = documents_to_items(docs, relevance_key="score").items
    assert [i.future_relevance_hint for i in by_score] == [1.0, 0.75, 0.9, 0.25]
    by_rank = documents_to_items(docs, relevance_key=None).items
    assert [i.future_relevance_hint for i in by_rank] == [1.0, 0.75, 0.5, 0.25]


def test_a_non_numeric_relevance_score_is_an_item_error_naming_the_document() -> None:
    with pytest.raises(ItemError) as raised:
        documents_to_items([Document("a"), Document("b", metadata={"relevance_score": "high"})])
    assert raised.value.field == "documents[1].metadata['relevance_score']"


def test_document_mapping_back_is_by_identity_in_the_order_given() -> None:
    docs = [Document("same"), Document("same"), Document("other")]
    mapped = documents_to_items(docs)
    back = mapped.documents_for([mapped.items[2], mapped.items[1]])
    assert back[0] is docs[2] and back[1] is docs[1]


def test_document_counters_and_kind_are_configurable() -> None:
    model = GenericFakeChatModel(
        messages=iter([]), custom_get_token_ids=lambda text: list(range(len(text)))
    )
    docs = [Document("twelve chars")]
    assert documents_to_items(docs, token_counter=model).items[0].tokens == 12
    assert documents_to_items(docs, token_counter=lambda t: 2).items[0].tokens == 2
    assert documents_to_items(docs, kind="Memory").items[0].kind == ContextKind.MEMORY
    assert documents_to_items([Document("")]).items[0].content == "[empty document]"
    with pytest.raises(ConfigurationError) as raised:
        documents_to_items(docs, kind=" ")
    assert raised.value.field == "kind"
    with pytest.raises(ItemError) as raised_item:
        documents_to_items(["not a document"])  # type: ignore[list-item]
    assert raised_item.value.field == "documents[0]"
    assert documents_to_items(docs).items[0].source == ContextSource.RAG


# -- tool_call_problems ---------------------------------------------------------------
def test_tool_call_problems_accepts_valid_sequences_and_names_each_violation() -> None:
    assert tool_call_problems(history()) == []
    messages = history()
    assert tool_call_problems(messages[:3]) == [
        "message 2: tool call(s) ['c1', 'c2'] are unanswered (unanswered_calls)"
    ]
    assert tool_call_problems([messages[1], messages[2], messages[3], messages[5]]) == [
        "message 1: tool call(s) ['c2'] are unanswered (partial_answers)"
    ]
    assert tool_call_problems(messages[4:]) == [
        "message 0: tool result for 'c2' answers no call made just before it (unknown_result)"
    ]
    invalid_call = AIMessage(
        "", invalid_tool_calls=[{"name": "f", "args": "{", "id": "bad", "error": None}]
    )
    assert tool_call_problems([invalid_call]) == [
        "message 0: tool call(s) ['bad'] are unanswered (unanswered_calls)"
    ]
    assert tool_call_problems([invalid_call, ToolMessage("error", tool_call_id="bad")]) == []
