"""The chat mapping's shortcuts agree with the plain computation.

* the batch token count == 3 per message + one ``tokenizer_fn`` call per text part;
* the inlined text of a plain message == :func:`message_text`;
* counts remembered by a :class:`Counting` (by text) == counting again, and what it
  remembers is bounded by the history it serves;
* mapped items == items built by ``ContextItem(...)`` (the core's trusted constructor).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis_profiles import examples
from li_testkit import counting_split
from llama_index.core.base.llms.types import ChatMessage
from test_li_properties import histories

from cupel import ContextItem, ContextKind
from cupel_llamaindex import message_text, messages_to_items
from cupel_llamaindex._reading import Counting, message_parts, read_messages


@settings(max_examples=examples(100), deadline=None)
@given(history=histories())
def test_batch_counts_equal_one_call_per_message(history: list[ChatMessage]) -> None:
    batch = messages_to_items(history, tokenizer_fn=str.split)
    one_by_one = messages_to_items(  # 3 per message + each text part's words
        history,
        message_token_counter=lambda m: 3 + sum(len(p.split()) for p in message_parts(m)[0]),
    )
    assert batch.counts == one_by_one.counts
    assert batch.texts == [message_text(m) for m in history]  # the inlined plain case too
    assert [i.tokens for i in batch.items] == [i.tokens for i in one_by_one.items]


@settings(max_examples=examples(100), deadline=None)
@given(history=histories(), later=histories())
def test_remembered_counts_equal_counting_again(
    history: list[ChatMessage], later: list[ChatMessage]
) -> None:
    calls, tokenizer = counting_split()
    counting = Counting(tokenizer)
    fresh = Counting(str.split)

    first = counting.counts(read_messages(history))
    assert first == Counting(str.split).counts(read_messages(history))
    calls.clear()
    grown = [*history, *later]
    again = counting.counts(read_messages(grown))
    assert again == fresh.counts(read_messages(grown)) == list(map(fresh.message, grown))
    # only the text parts of messages not seen before were counted, each distinct one once
    seen = set(read_messages(history).keys)
    new = [key for key in dict.fromkeys(read_messages(grown).keys) if key not in seen]
    parts = [part for key in new for part in ((key,) if isinstance(key, str) else key)]
    assert sorted(calls) == sorted(part for part in parts if part)


def test_what_a_counting_remembers_is_bounded_by_the_history_it_serves() -> None:
    counting = Counting(str.split)
    big = [ChatMessage(role="user", content=f"message {i}") for i in range(3000)]
    assert counting.counts(read_messages(big)) == [5] * 3000
    assert len(counting.known) == 3000
    small = [ChatMessage(role="user", content=f"other {i}") for i in range(10)]
    assert counting.counts(read_messages(small)) == [5] * 10
    assert len(counting.known) == 10  # 3000 + 10 > 2 * 10 + 1000: started over


def test_mapping_items_equal_validated_items() -> None:
    history = [
        ChatMessage(role="system", content="rules"),
        ChatMessage(role="tool", content="orphan", additional_kwargs={"tool_call_id": "x"}),
        ChatMessage(role="user", content="hello there"),
        ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [{"id": "c1"}]}),
        ChatMessage(role="tool", content="result", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="done"),
    ]
    mapping = messages_to_items(history, tokenizer_fn=str.split)
    for items in (mapping.items, [item for item, _ in mapping.invalid]):
        for item in items:
            rebuilt = ContextItem(**{name: getattr(item, name) for name in item.model_fields_set})
            assert item == rebuilt and item.to_dict() == rebuilt.to_dict()
            assert type(item.metadata) is type(rebuilt.metadata)
    assert [i.kind for i in mapping.items] == [
        ContextKind.SYSTEM_PROMPT,
        ContextKind.MESSAGE,
        ContextKind.TOOL_OUTPUT,
        ContextKind.MESSAGE,
    ]
    assert [reason.problem for _, reason in mapping.invalid] == ["unknown_result"]
