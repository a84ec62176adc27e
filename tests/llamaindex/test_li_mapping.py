"""Mapping LlamaIndex nodes and chat messages to cupel items and back."""

from __future__ import annotations

import pytest
from li_testkit import counting_split
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from cupel import ConfigurationError, ContextItem, ContextKind, ContextSource
from cupel_llamaindex import message_text, messages_to_items, nodes_to_items, tool_call_ids
from cupel_llamaindex._reading import message_parts


def _node(text: str, score: float | None, **metadata: str) -> NodeWithScore:
    return NodeWithScore(node=TextNode(text=text, metadata=metadata), score=score)


# -- nodes ------------------------------------------------------------------------------
def test_node_tokens_are_counted_on_the_llm_view_including_metadata() -> None:
    node = _node("alpha beta gamma", 0.5, source="guide.md")
    llm_view = node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "guide.md" in llm_view

    (item,) = nodes_to_items([node], tokenizer_fn=str.split).items

    assert item.content == "alpha beta gamma"  # deduplication compares the text alone
    assert item.tokens == len(llm_view.split()) == 5
    (seen,) = nodes_to_items([node], tokenizer_fn=str.split, dedup_on="content").items
    assert seen.content == llm_view and seen.tokens == 5
    assert item.kind == ContextKind.DOCUMENT and item.source == ContextSource.RAG


def test_metadata_mode_none_counts_the_bare_text() -> None:
    node = _node("alpha beta gamma", 0.5, source="guide.md")
    (item,) = nodes_to_items([node], tokenizer_fn=str.split, metadata_mode=MetadataMode.NONE).items
    assert item.content == "alpha beta gamma" and item.tokens == 3


def test_node_id_and_metadata_travel_on_the_item_without_touching_the_node() -> None:
    node = _node("text", 0.5, source="a.md")
    (item,) = nodes_to_items([node], tokenizer_fn=str.split).items
    assert item.metadata == {"source": "a.md", "llamaindex_node_id": node.node.node_id}
    assert node.node.metadata == {"source": "a.md"}


def test_scores_in_the_unit_interval_become_relevance_hints_unchanged() -> None:
    items = nodes_to_items(
        [_node("a", 0.9), _node("b", 0.1), _node("c", 0.0)], tokenizer_fn=str.split
    ).items
    assert [i.future_relevance_hint for i in items] == [0.9, 0.1, 0.0]


def test_missing_scores_fall_back_to_the_retrieval_rank() -> None:
    items = nodes_to_items(
        [_node("a", None), _node("b", 0.3), _node("c", None), _node("d", None)],
        tokenizer_fn=str.split,
    ).items
    assert [i.future_relevance_hint for i in items] == [1.0, 0.3, 0.5, 0.25]


def test_out_of_range_scores_are_min_max_scaled_in_auto_mode_and_kept_in_score_mode() -> None:
    nodes = [_node("a", 12.0), _node("b", 4.0), _node("c", 8.0)]
    auto = nodes_to_items(nodes, tokenizer_fn=str.split).items
    raw = nodes_to_items(nodes, tokenizer_fn=str.split, relevance="score").items
    assert [i.future_relevance_hint for i in auto] == [1.0, 0.0, 0.5]
    assert [i.future_relevance_hint for i in raw] == [12.0, 4.0, 8.0]


def test_rank_mode_ignores_scores() -> None:
    nodes = [_node("a", 0.1), _node("b", 0.9)]
    items = nodes_to_items(nodes, tokenizer_fn=str.split, relevance="rank").items
    assert [i.future_relevance_hint for i in items] == [1.0, 0.5]


def test_empty_node_becomes_a_zero_token_placeholder() -> None:
    node = _node("", 0.5)
    (item,) = nodes_to_items([node], tokenizer_fn=str.split, metadata_mode=MetadataMode.NONE).items
    assert item.tokens == 0 and node.node.node_id in item.content


def test_mapping_back_returns_the_same_node_objects_in_the_given_order() -> None:
    nodes = [_node("a", 0.1), _node("b", 0.2), _node("c", 0.3)]
    mapping = nodes_to_items(nodes, tokenizer_fn=str.split)
    back = mapping.to_nodes([mapping.items[2], mapping.items[0]])
    assert back[0] is nodes[2] and back[1] is nodes[0]


def test_mapping_back_rejects_foreign_items() -> None:
    mapping = nodes_to_items([_node("a", 0.1)], tokenizer_fn=str.split)
    with pytest.raises(ConfigurationError, match="not built by this mapping"):
        mapping.to_nodes([ContextItem(content="a", tokens=1)])


def test_node_mapping_rejects_bad_relevance_and_non_nodes() -> None:
    with pytest.raises(ConfigurationError, match="relevance must be one of"):
        nodes_to_items([], tokenizer_fn=str.split, relevance="best")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"nodes\[0\] must be a NodeWithScore"):
        nodes_to_items([TextNode(text="x")], tokenizer_fn=str.split)  # type: ignore[list-item]


def test_a_tokenizer_returning_a_count_is_a_text_counter_and_anything_else_is_explained() -> None:
    (item,) = nodes_to_items([_node("a b", 0.1)], tokenizer_fn=lambda s: 2).items
    assert item.tokens == 2  # a node is billed as its text: nothing added
    with pytest.raises(ConfigurationError, match="must return a non-negative int or a list"):
        nodes_to_items([_node("a b", 0.1)], tokenizer_fn=lambda s: "two")
    with pytest.raises(ConfigurationError, match="tokenizer_fn must be 'approximate', a tiktoken"):
        nodes_to_items([_node("a b", 0.1)], tokenizer_fn=5)


# -- chat messages ------------------------------------------------------------------------
def _call(call_id: str | None, name: str = "lookup", text: str | None = None) -> ChatMessage:
    blocks: list[TextBlock | ToolCallBlock] = [] if text is None else [TextBlock(text=text)]
    blocks.append(ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs={"q": "x"}))
    return ChatMessage(role="assistant", blocks=blocks)


def _result(call_id: str | None, text: str = "found it") -> ChatMessage:
    extra = {} if call_id is None else {"tool_call_id": call_id}
    return ChatMessage(role="tool", content=text, additional_kwargs=extra)


def _units(history: list[ChatMessage]) -> list[tuple[int, ...]]:
    return [u.indices for u in messages_to_items(history, tokenizer_fn=str.split).units]


def test_tool_call_blocks_and_their_results_form_one_unit_with_summed_tokens() -> None:
    history = [
        ChatMessage(role="user", content="find x please"),
        _call("c1", text="looking"),
        _result("c1", "x is here"),
        ChatMessage(role="assistant", content="done"),
    ]
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    unit = mapping.units[1]
    assert unit.indices == (1, 2)
    assert unit.item.kind == ContextKind.TOOL_OUTPUT
    # 3 per message; the call: "looking", its name, JSON arguments and id; the result: its
    # text and call id
    assert message_text(history[1]) == 'looking lookup {"q": "x"} c1'
    assert unit.item.tokens == (3 + 5) + (3 + 4)
    assert mapping.to_messages([unit.item]) == [history[1], history[2]]
    assert all(a is b for a, b in zip(mapping.to_messages([unit.item]), history[1:3], strict=True))


def test_openai_style_tool_calls_in_additional_kwargs_link_by_id_even_when_interleaved() -> None:
    caller = ChatMessage(
        role="assistant",
        content=None,
        additional_kwargs={
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ]
        },
    )
    history = [
        ChatMessage(role="user", content="go"),
        caller,
        _result("b"),
        ChatMessage(role="user", content="meanwhile"),
        _result("a"),
    ]
    assert tool_call_ids(caller) == (["a", "b"], True)
    # providers need every result right after its call: "a" came after another message
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    assert [u.indices for u in mapping.units] == [(0,), (3,)]
    assert [(r.problem, r.tool_call_ids) for _, r in mapping.invalid] == [
        ("partial_answers", ("a",)),
        ("late_result", ("a",)),
    ]
    both = [ChatMessage(role="user", content="go"), caller, _result("b"), _result("a")]
    assert _units(both) == [(0,), (1, 2, 3)]  # answered in any order, right after the call


def test_tool_message_without_an_id_answers_the_call_right_before_it() -> None:
    history = [ChatMessage(role="user", content="go"), _call(None), _result(None)]
    assert _units(history) == [(0,), (1, 2)]


def test_a_tool_message_answering_no_call_is_left_out() -> None:
    history = [ChatMessage(role="user", content="go"), _result("nobody")]
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    assert [u.indices for u in mapping.units] == [(0,)]
    assert [(r.problem, r.tool_call_ids) for _, r in mapping.invalid] == [
        ("unknown_result", ("nobody",))
    ]


def test_leading_tool_messages_are_orphans_and_never_offered() -> None:
    history = [
        ChatMessage(role="system", content="rules"),
        _result("lost"),
        ChatMessage(role="user", content="hi"),
    ]
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    assert [u.indices for u in mapping.units] == [(0,), (2,)]
    ((orphan, reason),) = mapping.invalid
    assert orphan.kind == ContextKind.TOOL_OUTPUT and reason.problem == "unknown_result"


def test_system_is_pinned_and_so_is_the_latest_user_message() -> None:
    history = [
        ChatMessage(role="system", content="rules"),
        ChatMessage(role="user", content="first"),
        ChatMessage(role="assistant", content="reply"),
        ChatMessage(role="user", content="second"),
        ChatMessage(role="assistant", content="reply"),
    ]
    pinned = [u.item.pinned for u in messages_to_items(history, tokenizer_fn=str.split).units]
    assert pinned == [True, False, False, True, False]
    unpinned = messages_to_items(
        history, tokenizer_fn=str.split, pin_system=False, pin_last_user=False
    ).units
    assert not any(u.item.pinned for u in unpinned)
    assert unpinned[0].item.kind == ContextKind.SYSTEM_PROMPT


def test_identical_turns_get_distinct_contents_so_they_never_deduplicate() -> None:
    history = [ChatMessage(role="user", content="ok"), ChatMessage(role="user", content="ok")]
    items = messages_to_items(history, tokenizer_fn=str.split).items
    assert items[0].content != items[1].content


def test_timestamps_follow_history_order() -> None:
    history = [ChatMessage(role="user", content=str(i)) for i in range(5)]
    stamps = [
        i.timestamp
        for i in messages_to_items(history, tokenizer_fn=str.split).items
        if i.timestamp is not None
    ]
    assert stamps == sorted(stamps) and len(set(stamps)) == 5


def test_each_text_part_is_tokenized_exactly_once() -> None:
    calls, tokenizer = counting_split()

    history = [ChatMessage(role="user", content=f"m{i} words here") for i in range(50)]
    history[10:12] = [_call("c"), _result("c")]
    messages_to_items(history, tokenizer_fn=tokenizer)
    parts = [part for message in history for part in message_parts(message)[0]]
    assert len(parts) == 48 + 3 + 2  # the call: name, arguments, id; the result: text, id
    assert sorted(calls) == sorted(parts)


def test_message_token_counter_overrides_the_tokenizer() -> None:
    history = [ChatMessage(role="user", content="a b c"), _call("c"), _result("c")]
    items = messages_to_items(history, message_token_counter=lambda m: 7).items
    assert [i.tokens for i in items] == [7, 14]


def test_message_token_counter_must_return_a_non_negative_int() -> None:
    with pytest.raises(ConfigurationError, match=r"non-negative int, got -1 for messages\[0\]"):
        messages_to_items(
            [ChatMessage(role="user", content="a")], message_token_counter=lambda m: -1
        )


def test_messages_need_a_counter_and_must_be_chat_messages() -> None:
    with pytest.raises(ConfigurationError, match="needs tokenizer_fn or message_token_counter"):
        messages_to_items([])
    with pytest.raises(ConfigurationError, match=r"messages\[0\] must be a ChatMessage"):
        messages_to_items(["hi"], tokenizer_fn=str.split)  # type: ignore[list-item]


def test_message_text_counts_tool_calls_which_chat_memory_buffer_ignores() -> None:
    call_only = _call("c1")
    assert call_only.content is None
    assert message_text(call_only) == 'lookup {"q": "x"} c1'


def test_messages_come_back_unmodified() -> None:
    history = [ChatMessage(role="user", content="go"), _call("c"), _result("c")]
    before = [m.model_dump() for m in history]
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    mapping.to_messages(mapping.items)
    assert [m.model_dump() for m in history] == before
