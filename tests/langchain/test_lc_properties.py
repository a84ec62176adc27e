"""Property tests: random histories with tool calls, and the adapter's fast paths."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)

from benchmarks.window_metrics import (
    expectations,
    last_complete_exchange,
    system_messages,
    task_message,
)
from cupel import ConfigurationError, ContextItem, PinnedBudgetError
from cupel.conversation import Conversation, reads_unit_metadata
from cupel.counting import REPLY_TOKENS, MessageCost, estimate_tokens
from cupel.presets import PRESET_NAMES
from cupel_langchain import (
    MessageItems,
    approximate_message_tokens,
    messages_to_items,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)
from cupel_langchain._messages import read_messages
from cupel_langchain._selection import MessageSelection
from cupel_langchain._tokens import message_parts, resolve_message_counter

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=120
)
WORDS = st.text(alphabet="abcdefgh xyz", min_size=0, max_size=300)

GENERAL = MessageCost("approximate")
"""The general path: any message read into its parts and priced by the model."""


def tokens(messages: list[BaseMessage]) -> int:
    """The messages' tokens by cupel's default count."""
    return sum(approximate_message_tokens(m) for m in messages)


def general_tokens(message: BaseMessage) -> int:
    return GENERAL(*message_parts(message))


@st.composite
def histories(draw: st.DrawFn) -> list[BaseMessage]:
    """A conversation: maybe a system prompt, turns, tool rounds (answers possibly in any
    order, several calls per AI message), plus the malformed rounds real histories carry:
    orphan results, unanswered calls, an answer arriving after another message, a
    duplicate answer, a stray result inside a round, invalid tool calls (answered or not).
    Messages may have ids, names, empty or block content."""
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
                    "invalid",
                ]
            )
        )
        if shape == "human":
            messages.append(HumanMessage(content(), **extras()))
        elif shape == "ai":
            messages.append(AIMessage(content(), **extras()))
        elif shape == "system":
            messages.append(SystemMessage(draw(WORDS.filter(lambda s: len(s) < 40))))
        elif shape == "invalid":  # a call the model got wrong: still a call for the provider
            call_id = f"c{counter}"
            counter += 1
            bad = {"name": "tool", "args": "{oops", "id": call_id, "error": "bad JSON"}
            messages.append(AIMessage(content(), invalid_tool_calls=[bad], **extras()))
            if draw(st.booleans()):
                messages.append(ToolMessage("error: bad arguments", tool_call_id=call_id))
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


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    room = max(budget - REPLY_TOKENS, 0)  # the history's room: max_tokens less the reply's
    try:
        selected, report = select_messages_with_report(
            messages, max_tokens=budget, policy=policy, start_on=start_on, keep_system=keep_system
        )
    except PinnedBudgetError as error:
        assert (error.pinned_tokens, error.available_tokens) == (pinned, room)
        assert pinned > room
        return
    assert pinned <= room
    # same objects, conversation order
    positions = [next(i for i, m in enumerate(messages) if m is s) for s in selected]
    assert positions == sorted(set(positions))
    # valid tool calls, within budget
    assert tool_call_problems(selected) == []
    assert tokens(selected) <= room  # (room >= 3: the request's bill is within the budget)
    # system messages are kept whenever they are pinned
    if keep_system:
        assert [m for m in selected if isinstance(m, SystemMessage)] == [
            m for m in messages if isinstance(m, SystemMessage)
        ]
    if start_on is not None and any(isinstance(m, HumanMessage) for m in selected):
        # (a window with no human message to start on is kept as it is)
        first = next((m for m in selected if not isinstance(m, SystemMessage)), None)
        assert first is None or isinstance(first, HumanMessage)
    # the latest human message is always there
    task = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    assert task is None or any(m is task for m in selected)
    # the report accounts for every unit and agrees with the output
    assert report.included_tokens == tokens(selected)
    assert report.total_tokens_considered == tokens(messages)
    included_ids = sorted(
        i for e in report.included for i in e.item.metadata.get("langchain.indices", ())
    ) + sorted(
        e.item.metadata["langchain.index"]
        for e in report.included
        if "langchain.indices" not in e.item.metadata
    )
    assert sorted(included_ids) == positions
    assert [m.model_dump() for m in messages] == before


IDS = st.one_of(st.none(), TEXT)


@settings(max_examples=examples(400), deadline=None)
@given(
    cls=st.sampled_from(
        [
            HumanMessage,
            AIMessage,
            SystemMessage,
            ToolMessage,
            ChatMessage,
            HumanMessageChunk,
            AIMessageChunk,
            SystemMessageChunk,
            ToolMessageChunk,
        ]
    ),
    content=st.one_of(
        TEXT,
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
    name=st.one_of(st.none(), st.none(), TEXT),
    calls=st.lists(
        st.fixed_dictionaries(
            {"name": TEXT, "args": st.dictionaries(TEXT, TEXT, max_size=2), "id": IDS}
        ),
        max_size=3,
    ),
    invalid=st.lists(
        st.fixed_dictionaries(
            {"name": IDS, "args": IDS, "id": IDS, "error": st.one_of(st.none(), TEXT)}
        ),
        max_size=2,
    ),
    function_call=st.one_of(st.none(), st.fixed_dictionaries({"name": TEXT, "arguments": TEXT})),
    call_id=TEXT,
)
def test_the_approximate_fast_path_equals_the_general_path(
    cls: type[BaseMessage],
    content: Any,
    name: str | None,
    calls: list[dict[str, Any]],
    invalid: list[dict[str, Any]],
    function_call: dict[str, str] | None,
    call_id: str,
) -> None:
    """Plain messages (a human or AI message of text, nothing else) are priced inline;
    every message, plain or not, costs what the general path prices: its parts
    (:func:`message_parts`: text, tool calls valid and invalid with their ids, a result's
    call id, a name) and media by :class:`~cupel.counting.MessageCost`. Its chunk costs
    the same."""
    kwargs: dict[str, Any] = {"content": content, "name": name}
    if cls in (AIMessage, AIMessageChunk):
        kwargs["tool_calls"] = calls
        kwargs["invalid_tool_calls"] = invalid
        if function_call is not None:
            kwargs["additional_kwargs"] = {"function_call": function_call}
    if cls in (ToolMessage, ToolMessageChunk):
        kwargs["tool_call_id"] = call_id
    if cls is ChatMessage:
        kwargs["role"] = "developer"
    message = cls(**kwargs)
    count = approximate_message_tokens(message)
    assert count == general_tokens(message)
    # the same count through the mapping, whichever unit the message makes
    mapped = messages_to_items([message])
    units = [*mapped.items, *(item for item, _ in mapped.invalid)]
    assert sum(item.tokens for item in units) == count
    # a counter on text counting as the default one takes the general path for every
    # message: the same numbers
    assert resolve_message_counter(estimate_tokens)([message]) == count
    chunk_of = {
        HumanMessage: HumanMessageChunk,
        AIMessage: AIMessageChunk,
        SystemMessage: SystemMessageChunk,
        ToolMessage: ToolMessageChunk,
    }.get(cls)
    if chunk_of is not None:
        assert approximate_message_tokens(chunk_of(**kwargs)) == count


@settings(max_examples=examples(100), deadline=None)
@given(histories())
def test_unit_tokens_add_up_to_counting_the_whole_history_once(
    messages: list[BaseMessage],
) -> None:
    mapped = messages_to_items(messages)
    total = sum(i.tokens for i in mapped.items) + sum(i.tokens for i, _ in mapped.invalid)
    assert total == tokens(messages) == sum(general_tokens(m) for m in messages)


@settings(max_examples=examples(100), deadline=None)
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


@settings(max_examples=examples(200), deadline=None)
@given(messages=histories(), keep_system=st.booleans(), keep_last=st.integers(0, 3))
def test_the_message_fast_path_maps_what_the_plain_path_maps(
    messages: list[BaseMessage], keep_system: bool, keep_last: int
) -> None:
    """With the approximate counter, plain human/AI messages are mapped inline; a counter
    on lists of messages counts each unit once the conversation layer has grouped them.
    One that counts a list as the default count does must give the very same mapping."""

    def plain_counter(unit: list[BaseMessage]) -> int:
        return tokens(unit)

    options: dict[str, Any] = {"keep_system": keep_system, "keep_last": keep_last}
    fast = messages_to_items(messages, **options)
    plain = messages_to_items(messages, token_counter=plain_counter, **options)
    _same_mapping(fast, plain)


@settings(max_examples=examples(200), deadline=None)
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
    assert mapped.history.positions(list(reversed(chosen))) == sorted(positions)
    back = mapped.messages_for(chosen)
    expected = sorted(i for k in positions for i in mapped.units[k])
    assert len(back) == len(expected)
    assert all(b is messages[i] for b, i in zip(back, expected, strict=True))
    if other.items:  # an equal item of another mapping is still a stranger
        stranger = data.draw(st.sampled_from(other.items))
        with pytest.raises(ConfigurationError, match="was not built from this history"):
            mapped.messages_for([*chosen, stranger])


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=histories(),
    budget=st.integers(0, 800),
    policy=st.sampled_from(PRESET_NAMES),
    start_on=st.sampled_from([None, "human"]),
)
def test_selections_without_metadata_equal_the_full_ones(
    messages: list[BaseMessage], budget: int, policy: str, start_on: str | None
) -> None:
    """Without a report, a preset's selection leaves the per-message metadata out (its
    pipeline reads none) or, for a plain recency window, builds no items at all; with a
    report it builds everything. The messages must not differ."""
    selection = MessageSelection({"max_tokens": budget, "policy": policy, "start_on": start_on})
    assert not reads_unit_metadata(selection.pipeline)
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


@settings(max_examples=examples(200), deadline=None)
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
        for i in item.metadata.get("langchain.indices", (item.metadata["langchain.index"],))
    }
    kept = {i for unit in mapped.units for i in unit}
    assert kept | invalid == set(range(len(messages))) and not kept & invalid


# -- the default window reads like a conversation -------------------------------------------
def conversation_of(messages: list[BaseMessage]) -> Conversation:
    record = read_messages(messages, None)
    return Conversation(record.roles, calls=record.calls, answers=record.answers)


def _fits(messages: list[BaseMessage], indices: list[int], budget: int) -> bool:
    """Whether a request of these messages is within ``budget``: them and the reply."""
    return tokens([messages[i] for i in indices]) + REPLY_TOKENS <= budget


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), budget=st.integers(0, 1200), start_on=st.sampled_from([None, "human"]))
def test_the_default_window_has_no_holes_keeps_the_task_and_a_reply_when_they_fit(
    messages: list[BaseMessage], budget: int, start_on: str | None
) -> None:
    """On random clean and messy histories: no holes, the task kept, valid for the
    provider, a reply whenever the system prompt, the task and the last complete exchange
    fit, and never empty when the system prompt, the task and the newest unit fit (the
    definitions the window-quality benchmark uses: benchmarks/window_metrics.py)."""
    conversation = conversation_of(messages)
    try:
        selected = select_messages(messages, max_tokens=budget, start_on=start_on)
    except PinnedBudgetError:
        pinned = system_messages(conversation) + task_message(conversation)
        assert not _fits(messages, pinned, budget)
        return
    kept = [next(i for i, m in enumerate(messages) if m is s) for s in selected]
    check = conversation.check_window(kept)
    assert check.problems == () and check.holes == () and check.task_kept, check
    due = expectations(conversation, lambda indices: _fits(messages, indices, budget))
    if due.reply:
        assert check.has_reply, (kept, last_complete_exchange(conversation))
    if due.content:
        assert not check.empty
