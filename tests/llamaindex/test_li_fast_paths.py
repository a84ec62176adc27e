"""Each fast path of the chat mapping agrees with its plain twin.

* items installed without validation (``fast_items``) == items built by ``ContextItem(...)``;
* the shared synthetic timestamps == ``EPOCH + i`` seconds;
* the batch token count == one ``tokenizer_fn`` call per message;
* the inlined text of a plain message == :func:`message_text`;
* a mapping continued from ``previous`` == a mapping built from scratch, whatever happened
  to the history in between (appends, in-place edits of text, role or tool linkage, cuts).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from li_testkit import words
from llama_index.core.base.llms.types import ChatMessage, TextBlock
from pydantic import ValidationError
from test_li_properties import histories

from cupel import ContextItem, ContextKind, ContextSource
from cupel_llamaindex import MessageMapping, message_text, messages_to_items
from cupel_llamaindex._items import (
    EPOCH,
    FAST_PATH,
    SECOND,
    chat_fields,
    fast_items,
    new_items,
    synthetic_timestamps,
    validated_items,
)

_KINDS = st.sampled_from(
    [
        (ContextKind.MESSAGE, ContextSource.CHAT),
        (ContextKind.SYSTEM_PROMPT, ContextSource.CHAT),
        (ContextKind.TOOL_OUTPUT, ContextSource.TOOL),
    ]
)


def _same_items(fast: list[ContextItem], slow: list[ContextItem]) -> None:
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        assert type(a) is ContextItem
        assert a == b and hash(a) == hash(b)
        assert a.model_dump() == b.model_dump() and a.to_dict() == b.to_dict()
        assert list(a.__dict__) == list(b.__dict__)
        assert a.model_fields_set == b.model_fields_set
        assert a.model_copy(update={"tokens": 1}) == b.model_copy(update={"tokens": 1})


def test_the_fast_path_is_in_use_with_this_pydantic() -> None:
    assert FAST_PATH and new_items is fast_items


@settings(max_examples=200, deadline=None)
@given(
    content=st.text(min_size=1),
    tokens=st.integers(0, 10**9),
    role=st.sampled_from(["user", "assistant", "system", "tool", "développeur"]),
    position=st.integers(0, 100_000),
    kind_source=_KINDS,
    pinned=st.booleans(),
)
def test_fast_items_equal_validated_items(
    content: str,
    tokens: int,
    role: str,
    position: int,
    kind_source: tuple[ContextKind, ContextSource],
    pinned: bool,
) -> None:
    kind, source = kind_source
    fields = chat_fields(content, tokens, role, position, kind=kind, source=source, pinned=pinned)
    _same_items(fast_items([fields]), validated_items([dict(fields)]))


def test_fast_items_are_frozen_and_independent() -> None:
    first, second = fast_items([chat_fields("[0] user: a", 1, "user", 0) for _ in range(2)])
    with pytest.raises(ValidationError, match="frozen"):
        first.tokens = 5  # type: ignore[misc]
    assert first.metadata is not second.metadata
    copied = first.model_copy(update={"pinned": True})
    assert copied.pinned and not first.pinned and not second.pinned


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
    for items in (mapping.items, mapping.orphan_items):
        slow = validated_items(
            [{name: getattr(item, name) for name in ContextItem.model_fields} for item in items]
        )
        _same_items(items, slow)
    assert [i.kind for i in mapping.items] == [
        ContextKind.SYSTEM_PROMPT,
        ContextKind.MESSAGE,
        ContextKind.TOOL_OUTPUT,
        ContextKind.MESSAGE,
    ]


def test_synthetic_timestamps_are_epoch_plus_position_seconds() -> None:
    small = synthetic_timestamps(3)
    large = synthetic_timestamps(len(small) + 5000)
    assert len(large) >= len(small) + 5000
    assert all(stamp == EPOCH + SECOND * i for i, stamp in enumerate(large))
    assert all(stamp.tzinfo is timezone.utc for stamp in large[:10])
    assert synthetic_timestamps(2)[:2] == small[:2]
    assert datetime(2000, 1, 1, tzinfo=timezone.utc) == EPOCH


@settings(max_examples=100, deadline=None)
@given(history=histories())
def test_batch_counts_equal_one_call_per_message(history: list[ChatMessage]) -> None:
    batch = messages_to_items(history, tokenizer_fn=str.split)
    one_by_one = messages_to_items(
        history, message_token_counter=lambda m: len(message_text(m).split())
    )
    assert batch.counts == one_by_one.counts
    assert batch.texts == [message_text(m) for m in history]  # the inlined plain case too
    assert [i.tokens for i in batch.items] == [i.tokens for i in one_by_one.items]


def _same_mapping(got: MessageMapping, expected: MessageMapping) -> None:
    assert got.members == expected.members
    assert got.orphan_members == expected.orphan_members
    assert got.texts == expected.texts and got.counts == expected.counts
    assert [i.model_dump() for i in got.items] == [i.model_dump() for i in expected.items]
    assert [i.model_dump() for i in got.orphan_items] == [
        i.model_dump() for i in expected.orphan_items
    ]


_EDITS = st.lists(
    st.tuples(
        st.integers(0, 80),
        st.sampled_from(
            ["text", "role_user", "role_tool", "role_assistant", "link_c0", "unlink", "calls_c0"]
        ),
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    history=histories(),
    later=histories(),
    edits=_EDITS,
    cut=st.integers(0, 80),
    counter=st.booleans(),
    pin_last_user=st.booleans(),
)
def test_a_continued_mapping_equals_one_built_from_scratch(
    history: list[ChatMessage],
    later: list[ChatMessage],
    edits: list[tuple[int, str]],
    cut: int,
    counter: bool,
    pin_last_user: bool,
) -> None:
    def build(messages: list[ChatMessage], previous: MessageMapping | None) -> MessageMapping:
        if counter:
            return messages_to_items(
                messages,
                message_token_counter=words,
                pin_last_user=pin_last_user,
                previous=previous,
            )
        return messages_to_items(
            messages, tokenizer_fn=str.split, pin_last_user=pin_last_user, previous=previous
        )

    first = build(history, None)
    grown = [*history, *later]
    second = build(grown, first)  # resumed: only `later` is read
    _same_mapping(second, build(grown, None))
    for position, what in edits:  # edited in place: the same objects, changed
        if not grown:
            break
        message = grown[position % len(grown)]
        if what == "text":
            message.blocks = [TextBlock(text="edited text")]
        elif what.startswith("role_"):
            message.role = what[len("role_") :]  # type: ignore[assignment]
        elif what == "link_c0":
            message.additional_kwargs["tool_call_id"] = "c0"
        elif what == "unlink":
            message.additional_kwargs.clear()
        else:
            message.additional_kwargs["tool_calls"] = [{"id": "c0"}]
    third = build(grown, second)
    _same_mapping(third, build(grown, None))
    shorter = grown[: cut % (len(grown) + 1)]
    _same_mapping(build(shorter, third), build(shorter, None))


def test_a_previous_mapping_built_differently_is_ignored() -> None:
    history = [ChatMessage(role="user", content="one two"), ChatMessage(role="user", content="x")]
    split = messages_to_items(history, tokenizer_fn=str.split)
    doubled = messages_to_items(history, tokenizer_fn=lambda s: s.split() * 2, previous=split)
    assert doubled.counts == [4, 2]
    unpinned = messages_to_items(
        history, tokenizer_fn=str.split, pin_last_user=False, previous=split
    )
    assert not any(item.pinned for item in unpinned.items)


def test_a_continued_mapping_reads_only_the_new_messages() -> None:
    seen: list[str] = []

    def tokenizer(text: str) -> list[str]:
        seen.append(text)
        return text.split()

    history = [ChatMessage(role="user", content=f"m{i}") for i in range(100)]
    first = messages_to_items(history, tokenizer_fn=tokenizer)
    more = [*history, ChatMessage(role="assistant", content="new")]
    second = messages_to_items(more, tokenizer_fn=tokenizer, previous=first)
    assert seen[100:] == ["new"]
    # Units 0..98 keep their items; unit 99 lost nothing (it is still the latest user).
    assert all(a is b for a, b in zip(second.items, first.items, strict=False))
    assert len(second.items) == 101 and second.items[99].pinned


def _calls(*ids: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content="calling",
        additional_kwargs={"tool_calls": [{"id": i} for i in ids]},
    )


def _answer(call_id: str) -> ChatMessage:
    return ChatMessage(role="tool", content="result", additional_kwargs={"tool_call_id": call_id})


def _relink(history: list[ChatMessage]) -> None:
    history[4].additional_kwargs["tool_call_id"] = "b"  # now answers the second call


def _recall(history: list[ChatMessage]) -> None:
    history[1].additional_kwargs["tool_calls"] = [{"id": "b"}]  # the first call's id changes


def _recast(history: list[ChatMessage]) -> None:
    history[5].role = "user"  # type: ignore[assignment]


def _retext(history: list[ChatMessage]) -> None:
    history[0].blocks[0].text = "a much longer question than before"  # type: ignore[union-attr]


@pytest.mark.parametrize("edit", [_relink, _recall, _recast, _retext])
def test_each_kind_of_in_place_edit_is_noticed(edit: Callable[[list[ChatMessage]], None]) -> None:
    history = [
        ChatMessage(role="user", content="go"),
        _calls("a"),
        _answer("a"),
        _calls("b"),
        _answer("a"),
        ChatMessage(role="assistant", content="done"),
    ]
    before = messages_to_items(history, tokenizer_fn=str.split)
    edit(history)
    after = messages_to_items(history, tokenizer_fn=str.split, previous=before)
    expected = messages_to_items(history, tokenizer_fn=str.split)
    assert (after.members, after.texts) != (before.members, before.texts) or [
        i.model_dump() for i in after.items
    ] != [i.model_dump() for i in before.items]
    _same_mapping(after, expected)
