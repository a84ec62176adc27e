"""Property tests: random histories with tool calls, and the adapter's fast paths."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

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

from cupel import ContextItem, ContextKind, ContextSource, PinnedBudgetError
from cupel.presets import PRESET_NAMES
from cupel_langchain import (
    approximate_message_tokens,
    messages_to_items,
    select_messages_with_report,
    tool_call_problems,
)
from cupel_langchain._items import _fast_item, _validated_item

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=120
)
WORDS = st.text(alphabet="abcdefgh xyz", min_size=0, max_size=300)


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """A conversation: maybe a system prompt, turns, tool rounds (answers possibly in any
    order, several calls per AI message), plus occasional orphans and unanswered calls."""
    messages: list[BaseMessage] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(draw(WORDS.filter(lambda s: len(s) < 80))))
    counter = 0
    for _ in range(draw(st.integers(0, 25))):
        shape = draw(
            st.sampled_from(["human", "ai", "tools", "tools", "orphan", "unanswered", "system"])
        )
        if shape == "human":
            messages.append(HumanMessage(draw(WORDS)))
        elif shape == "ai":
            messages.append(AIMessage(draw(WORDS)))
        elif shape == "system":
            messages.append(SystemMessage(draw(WORDS.filter(lambda s: len(s) < 40))))
        elif shape == "orphan":
            messages.append(ToolMessage(draw(WORDS), tool_call_id=f"ghost{counter}"))
            counter += 1
        else:
            ids = [f"c{counter + i}" for i in range(draw(st.integers(1, 3)))]
            counter += len(ids)
            calls = [{"name": "tool", "args": {"n": i}, "id": i} for i in ids]
            messages.append(AIMessage(draw(WORDS), tool_calls=calls))
            answered = ids if shape == "tools" else ids[: draw(st.integers(0, len(ids) - 1))]
            for call_id in draw(st.permutations(answered)):
                messages.append(ToolMessage(draw(WORDS), tool_call_id=call_id))
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
) -> None:
    args = (content, tokens, ContextKind(kind), ContextSource(source))
    kwargs = {"timestamp": timestamp, "metadata": metadata, "pinned": pinned, "hint": hint}
    fast = _fast_item(*args, **kwargs)  # type: ignore[arg-type]
    slow = _validated_item(*args, **kwargs)  # type: ignore[arg-type]
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.to_dict() == slow.to_dict()
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert ContextItem.from_dict(fast.to_dict()) == slow
    copied = fast.model_copy(update={"tokens": tokens + 1})
    assert copied.tokens == tokens + 1 and fast.tokens == tokens
    assert "tokens" in copied.model_fields_set and fast.model_fields_set == slow.model_fields_set


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
