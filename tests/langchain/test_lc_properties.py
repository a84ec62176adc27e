"""Property tests: random histories with tool calls, and the adapter's fast paths."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from cupel import ConfigurationError, ContextItem, ContextKind, ContextSource, PinnedBudgetError
from cupel.presets import PRESET_NAMES
from cupel_langchain import (
    MessageItems,
    _items,
    approximate_message_tokens,
    messages_to_items,
    select_messages_with_report,
    tool_call_problems,
)
from cupel_langchain._items import _fast_items, _validated_items, item_fields
from cupel_langchain._selection import MessageSelection

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=120
)
WORDS = st.text(alphabet="abcdefgh xyz", min_size=0, max_size=300)


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """A conversation: maybe a system prompt, turns, tool rounds (answers possibly in any
    order, several calls per AI message), plus the malformed rounds real histories carry:
    orphan results, unanswered calls, an answer arriving after another message, a
    duplicate answer, a stray result inside a round. Messages may have ids, names, empty
    or block content."""
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(WORDS.filter(lambda s: len(s) < 80))))
    counter = 0
    late: list[str] = []  # call ids whose answer is held back until after another message

    def content() -> Any:
        return draw(
            st.one_of(
                WORDS,
                WORDS,
                WORDS,
                st.lists(
                    st.fixed_dictionaries({"type": st.just("text"), "text": WORDS}), max_size=2
                ),
            )
        )

    def extras() -> dict[str, Any]:
        out: dict[str, Any] = {}
        if draw(st.integers(0, 3)) == 0:
            out["name"] = draw(st.sampled_from(["ann", "bot", ""]))
        if draw(st.booleans()):
            out["id"] = f"m{len(messages)}"
        return out

    for _ in range(draw(st.integers(0, 25))):
        shape = draw(
            st.sampled_from(
                [
                    "human",
                    "human",
                    "ai",
                    "ai",
                    "tools",
                    "tools",
                    "orphan",
                    "unanswered",
                    "system",
                    "late",
                    "duplicate",
                    "stray",
                ]
            )
        )
        if shape == "human":
            messages.append(HumanMessage(content(), **extras()))
        elif shape == "ai":
            messages.append(AIMessage(content(), **extras()))
        elif shape == "system":
            messages.append(SystemMessage(draw(WORDS.filter(lambda s: len(s) < 40))))
        elif shape == "orphan":
            messages.append(ToolMessage(draw(WORDS), tool_call_id=f"ghost{counter}"))
            counter += 1
        else:
            ids = [f"c{counter + i}" for i in range(draw(st.integers(1, 3)))]
            counter += len(ids)
            calls = [{"name": "tool", "args": {"n": i}, "id": i} for i in ids]
            messages.append(AIMessage(content(), tool_calls=calls, **extras()))
            if shape == "unanswered":
                answered = ids[: draw(st.integers(0, len(ids) - 1))]
            elif shape == "late":
                answered, late = ids[:-1], [*late, ids[-1]]
            else:
                answered = ids
            order = draw(st.permutations(answered))
            for position, call_id in enumerate(order):
                messages.append(ToolMessage(draw(WORDS), tool_call_id=call_id, **extras()))
                if shape == "stray" and position == 0:
                    messages.append(ToolMessage("stray", tool_call_id=f"ghost{counter}"))
                    counter += 1
            if shape == "duplicate" and order:
                messages.append(ToolMessage("again", tool_call_id=order[-1]))
        if late and shape in ("human", "ai"):
            messages.append(ToolMessage("late answer", tool_call_id=late.pop()))
    return messages


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=histories(),
    budget=st.integers(0, 800),
    policy=st.sampled_from(PRESET_NAMES),
    start_on=st.sampled_from([None, "human"]),
    keep_system=st.booleans(),
)
def test_every_selection_is_a_valid_in_order_within_budget_subset_of_the_same_objects(
    messages: list[BaseMessage],
    budget: int,
    policy: str,
    start_on: str | None,
    keep_system: bool,
) -> None:
    pinned = sum(
        i.tokens for i in messages_to_items(messages, keep_system=keep_system).items if i.pinned
    )
    before = [m.model_dump() for m in messages]
    try:
        selected, report = select_messages_with_report(
            messages, max_tokens=budget, policy=policy, start_on=start_on, keep_system=keep_system
        )
    except PinnedBudgetError as error:
        assert (error.pinned_tokens, error.available_tokens) == (pinned, budget)
        assert pinned > budget
        return
    assert pinned <= budget
    # same objects, conversation order
    positions = [next(i for i, m in enumerate(messages) if m is s) for s in selected]
    assert positions == sorted(set(positions))
    # valid tool calls, within budget
    assert tool_call_problems(selected) == []
    assert count_tokens_approximately(selected) <= budget
    # system messages are kept whenever they are pinned
    if keep_system:
        assert [m for m in selected if isinstance(m, SystemMessage)] == [
            m for m in messages if isinstance(m, SystemMessage)
        ]
    if start_on is not None:
        first = next((m for m in selected if not isinstance(m, SystemMessage)), None)
        assert first is None or isinstance(first, HumanMessage)
    else:  # the latest sendable non-system unit is always there
        mapped = messages_to_items(messages)
        latest = [
            mapped.unit_of(i)
            for i in mapped.items
            if i.pinned and i.metadata["langchain.type"] != "system"
        ]
        for unit in latest:
            assert all(any(m is s for s in selected) for m in unit)
    # the report accounts for every unit and agrees with the output
    assert report.included_tokens == count_tokens_approximately(selected)
    assert report.total_tokens_considered == count_tokens_approximately(messages)
    included_ids = sorted(
        i for e in report.included for i in e.item.metadata.get("langchain.indices", [])
    ) + sorted(
        e.item.metadata["langchain.index"]
        for e in report.included
        if "langchain.indices" not in e.item.metadata
    )
    assert sorted(included_ids) == positions
    assert [m.model_dump() for m in messages] == before


@settings(max_examples=300, deadline=None)
@given(
    cls=st.sampled_from([HumanMessage, AIMessage, SystemMessage, ToolMessage]),
    content=st.one_of(
        TEXT,
        st.lists(
            st.one_of(
                TEXT,
                st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
                st.fixed_dictionaries({"type": st.just("image_url"), "image_url": TEXT}),
            ),
            max_size=3,
        ),
    ),
    name=st.one_of(st.none(), TEXT),
    calls=st.lists(
        st.fixed_dictionaries(
            {"name": TEXT.filter(bool), "args": st.dictionaries(TEXT, TEXT, max_size=2)}
        ),
        max_size=3,
    ),
    role=st.one_of(st.none(), st.sampled_from(["developer", "system"])),
)
def test_the_approximate_fast_path_equals_count_tokens_approximately(
    cls: type[BaseMessage],
    content: Any,
    name: str | None,
    calls: list[dict[str, Any]],
    role: str | None,
) -> None:
    kwargs: dict[str, Any] = {"content": content, "name": name}
    if cls is AIMessage:
        kwargs["tool_calls"] = [{**c, "id": f"id{i}"} for i, c in enumerate(calls)]
    if cls is ToolMessage:
        kwargs["tool_call_id"] = "call-" + str(len(calls))
    if cls is SystemMessage and role is not None:
        kwargs["additional_kwargs"] = {"__openai_role__": role}
    message = cls(**kwargs)
    assert approximate_message_tokens(message) == count_tokens_approximately([message])


@settings(max_examples=100, deadline=None)
@given(histories())
def test_unit_tokens_add_up_to_counting_the_whole_history_once(
    messages: list[BaseMessage],
) -> None:
    mapped = messages_to_items(messages)
    total = sum(i.tokens for i in mapped.items) + sum(i.tokens for i, _ in mapped.invalid)
    assert total == count_tokens_approximately(messages)


@settings(max_examples=300, deadline=None)
@given(
    content=TEXT.filter(bool),
    tokens=st.integers(0, 10**9),
    kind=st.sampled_from(["Message", "ToolOutput", "SystemPrompt", "Document", "custom"]),
    source=st.sampled_from(["Chat", "Tool", "Rag"]),
    timestamp=st.one_of(
        st.none(), st.datetimes(timezones=st.just(timezone.utc), min_value=datetime(1971, 1, 1))
    ),
    metadata=st.dictionaries(TEXT, st.one_of(st.integers(), TEXT, st.none()), max_size=3),
    pinned=st.booleans(),
    hint=st.one_of(st.none(), st.floats(allow_nan=False)),
    from_template=st.booleans(),
)
def test_the_fast_item_constructor_builds_what_validation_builds(
    content: str,
    tokens: int,
    kind: str,
    source: str,
    timestamp: datetime | None,
    metadata: dict[str, Any],
    pinned: bool,
    hint: float | None,
    from_template: bool,
) -> None:
    args = (content, tokens, ContextKind(kind), ContextSource(source))
    fields = item_fields(*args, timestamp, metadata, pinned, hint)
    if from_template:  # the key-sharing template the message fast path copies
        fields = _items.fields_template(args[2], args[3]).copy()
        for name, value in item_fields(*args, timestamp, metadata, pinned, hint).items():
            fields[name] = value
    hinted = hint is not None
    (fast,) = _fast_items([fields], hinted)
    (slow,) = _validated_items([fields], hinted)
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.to_dict() == slow.to_dict()
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert ContextItem.from_dict(fast.to_dict()) == slow
    copied = fast.model_copy(update={"tokens": tokens + 1})
    assert copied.tokens == tokens + 1 and fast.tokens == tokens
    assert "tokens" in copied.model_fields_set and fast.model_fields_set == slow.model_fields_set


def test_the_fast_item_constructor_is_the_one_in_use() -> None:
    # the import-time self-check passed with the installed pydantic: a silent fallback to
    # validation would still be correct, but several times slower
    assert _items.new_items is _fast_items


@settings(max_examples=100, deadline=None)
@given(messages=histories(), keep_system=st.booleans(), keep_last=st.integers(0, 3))
def test_mapped_message_items_are_what_validation_builds(
    messages: list[BaseMessage], keep_system: bool, keep_last: int
) -> None:
    mapped = messages_to_items(messages, keep_system=keep_system, keep_last=keep_last)
    for item in [*mapped.items, *(i for i, _ in mapped.invalid)]:
        fields = {name: getattr(item, name) for name in item.model_fields_set}
        rebuilt = ContextItem(**fields)
        assert item == rebuilt and hash(item) == hash(rebuilt)
        assert item.model_dump(exclude_unset=True) == rebuilt.model_dump(exclude_unset=True)
        assert item.to_dict() == rebuilt.to_dict()
    assert sum(i.pinned for i in mapped.items) == len(mapped.pinned)


def _same_mapping(fast: MessageItems, plain: MessageItems) -> None:
    def dumped(items: Any) -> list[dict[str, Any]]:
        return [{**i.model_dump(), "fields_set": i.model_fields_set} for i in items]

    assert dumped(fast.items) == dumped(plain.items)
    assert dumped(i for i, _ in fast.invalid) == dumped(i for i, _ in plain.invalid)
    assert [r for _, r in fast.invalid] == [r for _, r in plain.invalid]
    assert fast.units == plain.units and list(fast.pinned) == list(plain.pinned)


@settings(max_examples=200, deadline=None)
@given(messages=histories(), keep_system=st.booleans(), keep_last=st.integers(0, 3))
def test_the_message_fast_path_maps_what_the_plain_path_maps(
    messages: list[BaseMessage], keep_system: bool, keep_last: int
) -> None:
    """With the approximate counter, plain human/AI messages are mapped inline; any other
    counter takes the general path for every message. Counting with a callable wrapping
    count_tokens_approximately must give the very same mapping."""

    def plain_counter(unit: list[BaseMessage]) -> int:
        return count_tokens_approximately(unit)

    options: dict[str, Any] = {"keep_system": keep_system, "keep_last": keep_last}
    fast = messages_to_items(messages, **options)
    plain = messages_to_items(messages, token_counter=plain_counter, **options)
    _same_mapping(fast, plain)


@settings(max_examples=200, deadline=None)
@given(messages=histories(), data=st.data())
def test_mapping_back_finds_each_item_by_identity_and_refuses_strangers(
    messages: list[BaseMessage], data: st.DataObject
) -> None:
    mapped = messages_to_items(messages)
    other = messages_to_items(messages)
    positions = data.draw(st.lists(st.integers(0, max(len(mapped.items) - 1, 0)), unique=True))
    if not mapped.items:
        positions = []
    chosen = [mapped.items[k] for k in positions]
    assert mapped.unit_positions(reversed(chosen)) == sorted(positions)
    back = mapped.messages_for(chosen)
    expected = sorted(i for k in positions for i in mapped.units[k])
    assert len(back) == len(expected)
    assert all(b is messages[i] for b, i in zip(back, expected, strict=True))
    if other.items:  # an equal item of another mapping is still a stranger
        stranger = data.draw(st.sampled_from(other.items))
        with pytest.raises(ConfigurationError, match="not one of this mapping's items"):
            mapped.unit_positions([*chosen, stranger])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=histories(),
    budget=st.integers(0, 800),
    policy=st.sampled_from(PRESET_NAMES),
    start_on=st.sampled_from([None, "human"]),
)
def test_selections_without_metadata_equal_the_full_ones(
    messages: list[BaseMessage], budget: int, policy: str, start_on: str | None
) -> None:
    """Without a report, a preset's selection skips the per-message metadata (the pipeline
    never reads it); with a report it builds everything. The messages must not differ."""
    selection = MessageSelection(max_tokens=budget, policy=policy, start_on=start_on)
    assert selection.metadata_unread
    try:
        lean, none = selection.select(messages, with_report=False)
    except PinnedBudgetError:
        with pytest.raises(PinnedBudgetError):
            selection.select(messages, with_report=True)
        return
    full, report = selection.select(messages, with_report=True)
    assert none is None and report is not None
    assert len(lean) == len(full) and all(a is b for a, b in zip(lean, full, strict=True))
    assert all("langchain.index" in e.item.metadata for e in report.included)


@settings(max_examples=200, deadline=None)
@given(messages=histories())
def test_tool_groups_follow_the_providers_rule(messages: list[BaseMessage]) -> None:
    """A group is valid exactly when its messages, sent alone in order, are a valid
    sequence; orphans and unanswered calls are what tool_call_problems would flag."""
    mapped = messages_to_items(messages)
    for item in mapped.items:
        unit = list(mapped.unit_of(item))
        assert tool_call_problems(unit) == []
    everything = mapped.messages_for(mapped.items)
    assert tool_call_problems(everything) == []
    invalid = {
        i
        for item, _ in mapped.invalid
        for i in item.metadata.get("langchain.indices", [item.metadata["langchain.index"]])
    }
    kept = {i for unit in mapped.units for i in unit}
    assert kept | invalid == set(range(len(messages))) and not kept & invalid
