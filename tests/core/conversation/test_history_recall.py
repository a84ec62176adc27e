"""Recall in the conversation layer: the query, the recalled units and the window's
guarantees with a scored share (the ``recall`` preset), plain and cache-stable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ContextBudget,
    OverflowBudgetError,
    PinnedBudgetError,
    Pipeline,
    Recalled,
    RecencyWindowSlice,
)
from cupel._pipeline.slice import effective_limits
from cupel.conversation import (
    SYSTEM,
    Conversation,
    HistoryItems,
    HistoryWindow,
    cache_stable_pipeline,
)

WORDS = ["lisbon", "sister", "kitten", "mochi", "rain", "coffee", "piano", "garden", "train"]


def build(
    events: list[tuple[str, int, int]],
) -> tuple[Conversation, list[str], list[int]]:
    roles, calls, answers, texts, tokens = parts(events)
    return Conversation(roles, calls=calls, answers=answers), texts, tokens


def parts(
    events: list[tuple[str, int, int]],
) -> tuple[list[str], dict[int, list[str | None]], dict[int, str | None], list[str], list[int]]:
    """A conversation from events (kind, size, word): chat turns, tool rounds (valid or
    answering an unknown call), late system messages; texts draw on a small vocabulary so
    that relevance to the latest user message varies."""
    roles: list[str] = ["system"]
    texts: list[str] = ["Be brief."]
    tokens: list[int] = [3]
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    for step, (event, size, word) in enumerate(events):
        text = f"{WORDS[word % len(WORDS)]} {WORDS[(word * 7 + step) % len(WORDS)]} m{step}"
        if event in ("user", "reply", "system"):
            roles.append({"reply": "assistant"}.get(event, event))
            texts.append(text)
            tokens.append(size)
        else:
            calls[len(roles)] = [f"c{step}"]
            roles.append("assistant")
            texts.append("")
            tokens.append(size // 2)
            answers[len(roles)] = f"c{step}" if event == "round" else f"other{step}"
            roles.append("tool")
            texts.append(text)
            tokens.append(size)
    return roles, calls, answers, texts, tokens


EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["user", "reply", "reply", "round", "bad_round", "system"]),
        st.integers(0, 40),
        st.integers(0, 20),
    ),
    min_size=1,
    max_size=60,
)


def check(
    conversation: Conversation,
    tokens: list[int],
    history: HistoryItems,
    window: HistoryWindow,
    budget: ContextBudget,
) -> None:
    """Every coherent-window guarantee, with recalled units."""
    messages = window.messages
    kept = set(messages)
    assert len(kept) == len(messages)
    # within budget
    pinned = sum(history.pinned_tokens.values())
    assert sum(tokens[i] for i in messages) == window.tokens
    assert window.tokens <= min(budget.target_tokens, budget.max_tokens - budget.output_reserve)
    # valid for providers, also in the order sent: each unit's messages together, in order
    assert conversation.check_window(kept).problems == ()
    units = [k for k in range(len(conversation)) if conversation.messages_of(k)[0] in kept]
    for k in units:
        members = list(conversation.messages_of(k))
        assert set(members) <= kept
        at = messages.index(members[0])
        assert messages[at : at + len(members)] == members
    # system first, the latest user message kept
    assert messages[0] == 0  # the system prompt (pinned; late system messages in place)
    latest = conversation.latest_user
    if latest >= 0:
        assert conversation.unit_firsts[latest] in kept
    # the recent window (without the recalled units) has no holes
    recalled = set(window.recalled)
    assert recalled <= kept
    assert window.recalled == sorted(recalled)
    recent = kept - recalled
    assert conversation.check_window(recent).holes == ()
    # recalled units are whole: earlier turns whole (the latest turn's units stand alone)
    for i in recalled:
        k = _unit(conversation, i)
        turn = conversation.turn(k)
        if latest < 0 or turn >= conversation.turn(latest):
            continue  # a unit of the current task (or of a history without a user message)
        for other in range(len(conversation)):
            if (
                conversation.turn(other) == turn
                and conversation.problem(other) is None
                and conversation.role(other) != SYSTEM
            ):
                assert set(conversation.messages_of(other)) <= recalled
    # the newest unit is kept when it fits what the pinned units leave
    newest = max(
        (k for k in range(len(conversation)) if conversation.problem(k) is None),
        default=-1,
    )
    if newest >= 0 and conversation.role(newest) != SYSTEM:
        need = sum(tokens[i] for i in conversation.messages_of(newest))
        room = effective_limits(budget, pinned)[1]
        if need <= room and room > 0:
            assert conversation.messages_of(newest)[0] in kept


def _unit(conversation: Conversation, message: int) -> int:
    return next(k for k in range(len(conversation)) if message in conversation.messages_of(k))


def select(
    policy: str, events: list[tuple[str, int, int]], limit: int, low_water: float | None
) -> tuple[Conversation, list[int], HistoryItems, HistoryWindow, ContextBudget] | None:
    conversation, texts, tokens = build(events)
    history = HistoryItems.from_conversation(conversation, texts, tokens)
    budget = ContextBudget(max_tokens=limit, target_tokens=limit)
    pipeline = cache_stable_pipeline(Pipeline.from_policy(policy), low_water)
    try:
        window = history.select(pipeline, budget, with_report=False)
    except (PinnedBudgetError, OverflowBudgetError):
        return None
    return conversation, tokens, history, window, budget


@settings(max_examples=examples(300), deadline=None)
@given(
    events=EVENTS,
    limit=st.integers(1, 300),
    low_water=st.sampled_from([None, None, 0.5, 0.8]),
    policy=st.sampled_from(["recall", "long_running"]),
)
def test_recall_windows_keep_every_guarantee(
    events: list[tuple[str, int, int]], limit: int, low_water: float | None, policy: str
) -> None:
    """Random histories: within budget, valid (also in order), system first, the latest
    user message and the newest unit kept, no holes besides the recalled units, which are
    whole earlier turns; the report's recalled units are those of the window."""
    selected = select(policy, events, limit, low_water)
    if selected is None:
        return
    conversation, tokens, history, window, budget = selected
    check(conversation, tokens, history, window, budget)
    report = window.explain()
    reported = set()
    for unit in report.recalled:
        reported.update(history.positions(list(unit.items)))
    recalled = set(window.recalled)
    # every recalled message was reported as recalled; a reported unit the walk then
    # reached stays in its place, part of the recent window
    assert recalled <= set(history.messages_at(sorted(reported)))


@settings(max_examples=examples(100), deadline=None)
@given(events=EVENTS, limit=st.integers(20, 300), low_water=st.sampled_from([0.5, 0.8]))
def test_cache_stable_recall_keeps_the_recent_window_append_only(
    events: list[tuple[str, int, int]], limit: int, low_water: float
) -> None:
    """Cache-stable with recall, a request after every message: a request starts with the
    recent window (without the recalled units) of the previous request — the history
    before its newest assistant message — unless the cut moved; recalled units come right
    before the latest user message."""
    roles, calls, answers, texts, tokens = parts(events)
    budget = ContextBudget(max_tokens=limit, target_tokens=limit)
    pipeline = cache_stable_pipeline(Pipeline.from_policy("recall"), low_water)
    recents: dict[int, list[int]] = {}  # history length -> the recent window
    for n in range(1, len(roles) + 1):
        part = Conversation(
            roles[:n],
            calls={i: c for i, c in calls.items() if i < n},
            answers={i: a for i, a in answers.items() if i < n},
        )
        history = HistoryItems.from_conversation(part, texts[:n], tokens[:n])
        try:
            window = history.select(pipeline, budget, with_report=False)
        except (PinnedBudgetError, OverflowBudgetError):
            continue
        check(part, tokens[:n], history, window, budget)
        recalled = set(window.recalled)
        recent = [i for i in window.messages if i not in recalled]
        recents[n] = recent
        if recalled:
            task = part.unit_firsts[part.latest_user]
            at = window.messages.index(task)
            assert window.messages[at - len(recalled) : at] == window.recalled
        answered = max((i for i in range(n) if roles[i] == "assistant"), default=-1)
        previous = recents.get(answered)  # the request the newest assistant message answered
        if previous is not None and not window.cut_moved:
            # the request starts with the previous request's recent window: the part of
            # the previous request before its recalled units is a cached prefix
            assert window.messages[: len(previous)] == previous
            assert window.stable_prefix >= len(previous)


def test_the_query_is_the_latest_user_message() -> None:
    roles = ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    texts = [
        "Be brief.",
        "My sister Mara moved to Lisbon in March.",
        "Lovely city!",
        "It rained all day here.",
        "Same here, grey skies.",
        "Coffee?",
        "Always.",
        "Where does my sister live now?",
    ]
    history = HistoryItems.from_conversation(Conversation(roles), texts, [3, 10, 4, 6, 6, 5, 5, 8])
    assert history.query == texts[-1]
    budget = ContextBudget(max_tokens=47, target_tokens=47)
    window = history.select(Pipeline.from_policy("recall"), budget, with_report=True)
    assert window.messages == list(range(8)) and window.recalled == []  # everything fits
    # 40 tokens: 11 pinned, 29 left: the recent window gets 15 (the coffee turn), the
    # share 14: the sister turn (14, relevant) comes back whole; the rain turn does not
    tight = ContextBudget(max_tokens=40, target_tokens=40)
    window = history.select(Pipeline.from_policy("recall"), tight, with_report=True)
    assert window.recalled == [1, 2]  # the question with its answer
    assert window.messages == [0, 1, 2, 5, 6, 7]
    assert window.cut == 5  # the recent window's stretch
    assert window.report is not None
    (unit,) = window.report.recalled
    assert [item.content for item in unit.items] == ["Lovely city!", texts[1]]
    assert unit.terms == ("sister",)
    assert unit.score == 1.0
    wire = window.report.to_dict()["recalled"][0]
    assert wire["terms"] == ["sister"] and wire["similarity"] is None  # no embedding
    del wire["similarity"]  # a wire form from before the field
    assert Recalled.from_dict(wire) == unit


def test_without_a_user_message_recall_is_the_plain_window() -> None:
    conversation = Conversation(["system", "assistant", "assistant", "assistant"])
    texts = ["Be brief.", "one", "two", "three"]
    history = HistoryItems.from_conversation(conversation, texts, [3, 10, 10, 10])
    assert history.query == ""
    budget = ContextBudget(max_tokens=25, target_tokens=25)
    recall = history.select(Pipeline.from_policy("recall"), budget, with_report=True)
    chat = history.select(Pipeline.from_policy("chat"), budget, with_report=False)
    assert recall.messages == chat.messages == [0, 2, 3]
    assert recall.recalled == []
    assert recall.report is not None and recall.report.recalled == ()


def test_the_recall_preset_is_a_recency_window_with_a_share() -> None:
    slicer = Pipeline.from_policy("recall").slicer
    assert isinstance(slicer, RecencyWindowSlice)
    assert slicer.scored_share > 0 and slicer.partial_blocks
