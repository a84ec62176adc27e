"""The chat mapping's shortcuts agree with the plain computation.

* the batch token count == 3 per message + one ``tokenizer_fn`` call per text part;
* the inlined text of a plain message == :func:`message_text`;
* counts remembered by a :class:`TokenCache` == counting again, and the cache is dropped
  when the counter changes or it outgrows the history;
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
from cupel_llamaindex._reading import TokenCache, message_parts, read_messages


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
def test_cached_counts_equal_counting_again(
    history: list[ChatMessage], later: list[ChatMessage]
) -> None:
    cache = TokenCache()
    calls, tokenizer = counting_split()

    first = messages_to_items(history, tokenizer_fn=tokenizer, cache=cache)
    assert first.counts == messages_to_items(history, tokenizer_fn=str.split).counts
    calls.clear()
    grown = [*history, *later]
    again = messages_to_items(grown, tokenizer_fn=tokenizer, cache=cache)
    assert again.counts == messages_to_items(grown, tokenizer_fn=str.split).counts
    # only the text parts of messages not seen before were counted, each message once
    seen = set(read_messages(history).keys)
    fresh = [key for key in dict.fromkeys(read_messages(grown).keys) if key not in seen]
    parts = [part for key in fresh for part in ((key,) if isinstance(key, str) else key)]
    assert sorted(calls) == sorted(part for part in parts if part)


def test_a_cache_filled_by_another_counter_is_not_used() -> None:
    history = [ChatMessage(role="user", content="one two three")]
    cache = TokenCache()
    assert messages_to_items(history, tokenizer_fn=str.split, cache=cache).counts == [3 + 3]
    assert messages_to_items(history, tokenizer_fn=list, cache=cache).counts == [13 + 3]
    per_message = messages_to_items(history, message_token_counter=lambda m: 7, cache=cache)
    assert per_message.counts == [7]


def test_the_cache_is_bounded_by_the_history_it_serves() -> None:
    cache = TokenCache()
    big = [ChatMessage(role="user", content=f"message {i}") for i in range(3000)]
    messages_to_items(big, tokenizer_fn=str.split, cache=cache)
    assert len(cache.for_counter(str.split, 3000)) == 3000
    small = big[:10]
    messages_to_items(small, tokenizer_fn=str.split, cache=cache)
    assert len(cache.for_counter(str.split, 10)) == 10  # 3000 > 2 * 10 + 1000: started over


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
