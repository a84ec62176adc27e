"""cupel.conversation.HistoryItems: items per unit, pinning, blocks, selection, stable cuts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    KindScorer,
    MetadataKeyScorer,
    PinnedBudgetError,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
)
from cupel.conversation import (
    Conversation,
    HistoryItems,
    PinnedOptions,
    plain_key,
    reads_unit_metadata,
)

ROLES = ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]
TEXTS = ["sys", "q1", "a1", "q2", "", "r2", "a2", "q3"]
TOKENS = [4, 2, 6, 4, 12, 4, 4, 3]


def chat() -> tuple[Conversation, HistoryItems]:
    conversation = Conversation(ROLES, calls={4: ["c"]}, answers={5: "c"})
    return conversation, HistoryItems.from_conversation(conversation, TEXTS, TOKENS)


def budget(n: int) -> ContextBudget:
    return ContextBudget(max_tokens=n, target_tokens=n)


def test_one_item_per_valid_unit_with_kinds_tokens_and_content() -> None:
    _, history = chat()
    assert [(i.content, i.tokens, str(i.kind), str(i.source)) for i in history.items] == [
        ("sys", 4, "SystemPrompt", "Chat"),
        ("q1", 2, "Message", "Chat"),
        ("a1", 6, "Message", "Chat"),
        ("q2", 4, "Message", "Chat"),
        ("[assistant message]\nr2", 16, "ToolOutput", "Tool"),
        ("a2", 4, "Message", "Chat"),
        ("q3", 3, "Message", "Chat"),
    ]
    stamps = [i.timestamp for i in history.items]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_the_system_prompt_and_the_latest_user_message_are_pinned() -> None:
    _, history = chat()
    assert [i.pinned for i in history.items] == [True, False, False, False, False, False, True]
    assert history.pinned_tokens == {"system": 4, "latest_user": 3, "last": 0}
    conversation = Conversation(ROLES, calls={4: ["c"]}, answers={5: "c"})
    none = HistoryItems.from_conversation(
        conversation, TEXTS, TOKENS, keep_system=False, keep_latest_user=False, keep_last=2
    )
    assert [i.pinned for i in none.items] == [False] * 5 + [True, True]
    assert none.pinned_tokens == {"system": 0, "latest_user": 0, "last": 7}


def test_earlier_turns_are_blocks_and_the_latest_turn_stands_alone() -> None:
    conversation = Conversation([*ROLES, "assistant"], calls={4: ["c"]}, answers={5: "c"})
    history = HistoryItems.from_conversation(conversation, [*TEXTS, "a3"], [*TOKENS, 2])
    assert [i.metadata.get("cupel:turn") for i in history.items] == [0, 1, 1, 2, 2, 2, None, None]
    # units of one turn share one read-only metadata object when no adapter metadata is given
    assert history.items[1].metadata is history.items[2].metadata


def test_adapter_metadata_is_copied_and_gets_the_block() -> None:
    conversation, _ = chat()
    given_dicts: list[dict[str, object]] = []

    def metadata(k: int) -> dict[str, object]:
        given_dicts.append({"unit": k})
        return given_dicts[-1]

    history = HistoryItems.from_conversation(conversation, TEXTS, TOKENS, metadata=metadata)
    assert dict(history.items[1].metadata) == {"unit": 1, "cupel:turn": 1}
    assert given_dicts[1] == {"unit": 1}  # copied, never changed
    with pytest.raises(TypeError):
        history.items[1].metadata["unit"] = 2  # type: ignore[index]


def test_bad_columns_name_the_argument() -> None:
    conversation, _ = chat()
    with pytest.raises(ConfigurationError) as raised:
        HistoryItems.from_conversation(conversation, TEXTS[:-1], TOKENS)
    assert raised.value.field == "texts"
    with pytest.raises(ConfigurationError) as raised:
        HistoryItems.from_conversation(conversation, TEXTS, TOKENS[:-1])
    assert raised.value.field == "tokens"
    with pytest.raises(ConfigurationError) as raised:
        HistoryItems.from_conversation(conversation, TEXTS)
    assert raised.value.field == "tokens"
    with pytest.raises(ConfigurationError) as raised:
        HistoryItems.from_conversation(conversation, TEXTS, TOKENS, keep_last=-1)
    assert raised.value.field == "keep_last"


def test_a_unit_counter_counts_whole_units() -> None:
    conversation, _ = chat()
    seen: list[tuple[int, ...]] = []

    def count(members: tuple[int, ...]) -> int:
        seen.append(members)
        return 10 * len(members)

    history = HistoryItems.from_conversation(conversation, TEXTS, unit_tokens=count)
    assert (4, 5) in seen and [i.tokens for i in history.items][4] == 20


def test_carried_timestamps_follow_message_order() -> None:
    conversation = Conversation(["user", "assistant", "user"])
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    history = HistoryItems.from_conversation(
        conversation, ["a", "b", "c"], [1, 1, 1], timestamps=[t0, t0 - timedelta(hours=1), None]
    )
    first, second, third = (i.timestamp for i in history.items)
    assert first == t0 and second == t0 + timedelta(microseconds=1)
    assert third == t0 + timedelta(microseconds=2)


def test_select_keeps_whole_turns_and_reports_why() -> None:
    _, history = chat()
    window = history.select(Pipeline.from_policy("chat"), budget(33), with_report=True)
    assert window.messages == [0, 3, 4, 5, 6, 7]
    assert window.cut == 3 and window.cut_moved
    assert window.report is not None
    assert {e.item.content: e.reason.name for e in window.report.excluded} == {
        "q1": "OutsideWindow",
        "a1": "OutsideWindow",
    }


def test_invalid_units_are_reported_and_start_on_drops_leading_units() -> None:
    conversation = Conversation(["assistant", "tool", "user"], calls={}, answers={1: "x"})
    history = HistoryItems.from_conversation(conversation, ["hello", "stray", "hi"], [2, 2, 2])
    window = history.select(
        Pipeline.from_policy("chat"), budget(50), with_report=True, start_on={"user"}
    )
    assert window.messages == [2]
    assert window.report is not None
    reasons = {e.item.content: e.reason for e in window.report.excluded}
    assert reasons["stray"].name == "InvalidToolCall"
    assert reasons["hello"].name == "Filtered"
    assert window.report.total_candidates == 3
    kept = history.select(Pipeline.from_policy("chat"), budget(50), with_report=False)
    assert kept.messages == [0, 2]


def test_pinned_messages_over_budget_name_the_components_options() -> None:
    _, history = chat()
    with pytest.raises(PinnedBudgetError) as raised:
        history.select(
            Pipeline.from_policy("chat"),
            budget(6),
            with_report=False,
            options=PinnedOptions(system=None, latest_user="keep_task=False"),
        )
    assert str(raised.value) == (
        "The messages that are always kept need 7 tokens (system messages: 4, the latest user "
        "message: 3), but the budget allows 6 (max_tokens - output_reserve); raise the "
        "budget, shorten them or pass keep_task=False"
    )


def test_reads_unit_metadata_knows_which_pipelines_look_at_metadata() -> None:
    assert not reads_unit_metadata(Pipeline.from_policy("chat"))
    assert not reads_unit_metadata(Pipeline.from_policy("rag"))
    assert reads_unit_metadata(Pipeline(MetadataKeyScorer("role", "user", 2.0)))

    class Custom(RecencyScorer):
        pass

    assert reads_unit_metadata(Pipeline(Custom()))
    assert reads_unit_metadata(Pipeline(RecencyScorer(), on_overflow=lambda event: None))
    assert reads_unit_metadata(Pipeline(RecencyScorer(), RecencyWindowSlice("thread")))


def test_a_window_says_whether_it_came_from_the_columns_alone() -> None:
    _, history = chat()
    chat_pipeline = Pipeline.from_policy("chat")
    plain = history.select(chat_pipeline, budget(20), with_report=False)
    reported = history.select(chat_pipeline, budget(20), with_report=True)
    greedy = history.select(Pipeline.from_policy("rag"), budget(20), with_report=False)
    assert plain.plain and not reported.plain and not greedy.plain
    assert plain.messages == reported.messages


def test_plain_key_changes_with_everything_the_plain_window_reads() -> None:
    pipeline = Pipeline.from_policy("chat")
    key = plain_key(pipeline)
    assert plain_key(pipeline) == key
    assert isinstance(pipeline.slicer, RecencyWindowSlice)
    for attribute, value in (("block_key", None), ("scored_share", 0.5), ("low_water", 0.5)):
        before = getattr(pipeline.slicer, attribute)
        setattr(pipeline.slicer, attribute, value)
        assert plain_key(pipeline) != key, attribute
        setattr(pipeline.slicer, attribute, before)
    assert plain_key(pipeline) == key
    for attribute, value in (
        ("slicer", RecencyWindowSlice("thread")),
        ("scorer", RecencyScorer()),
        ("placer", ChronologicalPlacer()),
        ("deduplication", True),
    ):
        before = getattr(pipeline, attribute)
        setattr(pipeline, attribute, value)
        assert plain_key(pipeline) != key, attribute
        setattr(pipeline, attribute, before)
    assert plain_key(Pipeline.from_policy("chat")) != key  # another pipeline object


# -- cache-stable windows -------------------------------------------------------------------
STABLE = Pipeline(
    CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
    RecencyWindowSlice(low_water=0.6),
    ChronologicalPlacer(),
    deduplication=False,
)


@settings(max_examples=examples(150), deadline=None)
@given(
    turns=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 120)), min_size=1, max_size=60),
    limit=st.integers(60, 400),
)
def test_a_stable_window_only_appends_between_cuts_and_keeps_the_window_rules(
    turns: list[tuple[int, int]], limit: int
) -> None:
    """A chat growing one turn per call: between two cuts each window is the previous one
    plus the new messages; a cut moves the start forward to a turn, at most once per
    overflow; every window fits, has no holes and keeps the question."""
    roles = ["system"]
    tokens = [5]
    previous: list[int] | None = None
    for question, answer in turns:
        roles.append("user")
        tokens.append(question)
        conversation = Conversation(roles)
        history = HistoryItems.from_conversation(conversation, ["x"] * len(roles), tokens)
        try:
            window = history.select(STABLE, budget(limit), with_report=False)
        except PinnedBudgetError:
            return
        kept = window.messages
        assert sum(tokens[i] for i in kept) <= limit
        check = conversation.check_window(kept)
        assert check.ok, check
        if previous is not None and not window.cut_moved:
            assert kept[: len(previous)] == previous  # append-only
        assert window.cut_moved == (previous is None or kept[: len(previous)] != previous)
        previous = kept
        roles.append("assistant")
        tokens.append(answer)


def test_a_stable_window_moves_its_cut_to_the_low_water_mark() -> None:
    roles = ["system"]
    tokens = [10]
    previous: list[int] | None = None
    cuts: list[int] = []
    sizes: list[int] = []
    for _ in range(30):
        roles += ["user", "assistant"]
        tokens += [10, 30]
        conversation = Conversation([*roles, "user"])
        history = HistoryItems.from_conversation(
            conversation, ["x"] * (len(roles) + 1), [*tokens, 10]
        )
        window = history.select(STABLE, budget(400), with_report=False)
        if window.cut_moved and previous is not None:
            cuts.append(window.cut)
        previous = window.messages
        sizes.append(sum([*tokens, 10][i] for i in window.messages))
    assert len(cuts) >= 2  # it overflowed and was cut back more than once
    # right after a cut the window is near the mark (system + question + refill to 60%)
    assert min(sizes[5:]) >= 0.6 * 400 - 40 and max(sizes) <= 400


@settings(max_examples=examples(150), deadline=None)
@given(
    events=st.lists(
        st.tuples(st.sampled_from(["user", "round", "reply"]), st.integers(1, 60)),
        min_size=1,
        max_size=80,
    ),
    limit=st.integers(80, 500),
)
def test_stable_windows_over_agent_runs_and_chats_keep_every_guarantee(
    events: list[tuple[str, int]], limit: int
) -> None:
    """Chats and agent runs mixed (a task, tool rounds, replies, a new question): every
    window keeps the task, has no holes, is valid and fits; between cuts it only appends."""
    roles: list[str] = ["system"]
    tokens: list[int] = [5]
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    previous: list[int] | None = None
    previous_cut = -1
    for step, (event, size) in enumerate(events):
        if event == "user":
            roles.append("user")
            tokens.append(size)
        elif event == "reply":
            roles.append("assistant")
            tokens.append(size)
        else:
            calls[len(roles)] = [f"c{step}"]
            roles.append("assistant")
            tokens.append(size // 2 + 1)
            answers[len(roles)] = f"c{step}"
            roles.append("tool")
            tokens.append(size)
        conversation = Conversation(roles, calls=calls, answers=answers)
        history = HistoryItems.from_conversation(conversation, ["x"] * len(roles), tokens)
        try:
            window = history.select(STABLE, budget(limit), with_report=False)
        except PinnedBudgetError:
            previous = None
            continue
        kept = window.messages
        assert sum(tokens[i] for i in kept) <= limit
        check = conversation.check_window(kept)
        assert check.ok, (check, kept)
        if (
            previous is not None
            and window.cut == previous_cut
            and all(roles[i] == "system" or i >= previous_cut for i in previous)
        ):  # the same cut, and no pinned task kept before it: append-only
            assert kept[: len(previous)] == previous, (previous, kept)
        previous = kept
        previous_cut = window.cut


def test_a_stable_agent_window_takes_the_rounds_added_after_a_window_of_the_task_alone() -> None:
    """Regression: a previous window holding only the system prompt and the task (the run
    had no round yet) made the next call's cut jump past the new rounds — they were
    taken for a gap after the task — so no round was ever offered again."""
    roles = ["system", "user"]
    tokens = [5, 5]
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    for step in range(8):
        conversation = Conversation(roles, calls=calls, answers=answers)
        history = HistoryItems.from_conversation(conversation, ["x"] * len(roles), tokens)
        window = history.select(STABLE, budget(200), with_report=False)
        assert window.messages == list(range(len(roles)))  # everything fits: all of it
        assert window.cut_moved == (step == 0)
        calls[len(roles)] = [f"c{step}"]
        answers[len(roles) + 1] = f"c{step}"
        roles += ["assistant", "tool"]
        tokens += [3, 8]


def test_bare_items_are_reused_by_content_and_never_change() -> None:
    """A history read again (a conversation re-selected every turn) reuses the bare items
    of the units it already had; anything an item holds that differs makes a new one."""
    from cupel import ContextKind

    conversation = Conversation(["system", "user", "assistant", "user"])
    texts = ["Be brief.", "Hi", "Hello!", "Bye"]
    first = HistoryItems.from_conversation(conversation, texts, [3, 1, 2, 1]).items
    again = HistoryItems.from_conversation(conversation, texts, [3, 1, 2, 1]).items
    assert all(a is b for a, b in zip(first, again, strict=True))
    other = HistoryItems.from_conversation(conversation, texts, [3, 1, 5, 1]).items
    assert other[2] is not first[2] and other[2].tokens == 5 and other[1] is first[1]
    spelt = HistoryItems.from_conversation(
        conversation, texts, [3, 1, 2, 1], kinds={"assistant": ContextKind("message")}
    ).items
    assert str(spelt[2].kind) == "message" and str(first[2].kind) == "Message"
    unpinned = HistoryItems.from_conversation(
        conversation, texts, [3, 1, 2, 1], keep_latest_user=False
    ).items
    assert unpinned[3] is not first[3] and not unpinned[3].pinned and first[3].pinned


def test_the_reused_items_are_bounded_by_their_characters_too() -> None:
    """Long contents (tool results, documents) fill the map by their characters: it never
    keeps more than its character bound, and its items are still right."""
    from cupel.conversation import _columns

    size = _columns._BARE_CHARACTERS // 3 + 1
    texts = [f"{i}" + "x" * size for i in range(4)]
    conversation = Conversation(["user", "assistant"] * 2)
    items = HistoryItems.from_conversation(conversation, texts, [1] * 4).items
    assert _columns._BARE.held <= _columns._BARE_CHARACTERS
    assert sum(len(item.content) for item in _columns._BARE.values()) == _columns._BARE.held
    assert len(_columns._BARE) < 4
    assert [item.content for item in items] == texts


def test_the_reused_items_are_bounded() -> None:
    """The map of reused items never holds more than its bound: a history with more units
    than it holds empties it on the way, and its items are still right."""
    from cupel.conversation import _columns

    n = _columns._BARE_LIMIT + 10
    conversation = Conversation(["user", "assistant"] * (n // 2))
    texts = [f"m{i}" for i in range(n)]
    items = HistoryItems.from_conversation(conversation, texts, [1] * n).items
    assert len(_columns._BARE) <= _columns._BARE_LIMIT
    assert [item.content for item in items] == texts
