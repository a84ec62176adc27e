"""The cache-stable cut replayed from the history (:func:`cupel.conversation.stable_cut`),
checked against the rule written out literally: a window selected after every unit is
appended, each from the previous window's cut, by the recency window's own low-water
refill (:class:`~cupel.RecencyWindowSlice`) over that prefix of the history."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    ChronologicalPlacer,
    CompositeScorer,
    ContextBudget,
    KindScorer,
    PinnedBudgetError,
    Pipeline,
    RecencyScorer,
    RecencyWindowSlice,
)
from cupel.conversation import Conversation, HistoryItems

LOW_WATER = 0.6


def pipeline(
    low_water: float | None, block_key: str | None = "cupel:turn", partial: bool = False
) -> Pipeline:
    return Pipeline(
        CompositeScorer([(RecencyScorer(), 3.0), (KindScorer(), 1.0)]),
        RecencyWindowSlice(block_key, low_water=low_water, partial_blocks=partial),
        ChronologicalPlacer(),
        deduplication=False,
    )


def budget(limit: int) -> ContextBudget:
    return ContextBudget(max_tokens=limit, target_tokens=limit)


def _build(
    roles: list[str],
    calls: dict[int, list[str | None]],
    answers: dict[int, str | None],
    tokens: list[int],
    end: int,
    keeps: tuple[bool, bool, int],
) -> tuple[Conversation, HistoryItems]:
    conversation = Conversation(
        roles[:end],
        calls={i: c for i, c in calls.items() if i < end},
        answers={i: a for i, a in answers.items() if i < end},
    )
    history = HistoryItems.from_conversation(
        conversation,
        ["x"] * end,
        tokens[:end],
        keep_system=keeps[0],
        keep_latest_user=keeps[1],
        keep_last=keeps[2],
    )
    return conversation, history


def _unit_ends(
    roles: list[str], calls: dict[int, list[str | None]], answers: dict[int, str | None]
) -> list[int]:
    """The prefix lengths that end at a unit boundary of the whole history's units."""
    full = Conversation(roles, calls=calls, answers=answers)
    return sorted({max(full.messages_of(k)) + 1 for k in range(len(full))})


def oracle_windows(
    roles: list[str],
    calls: dict[int, list[str | None]],
    answers: dict[int, str | None],
    tokens: list[int],
    limit: int,
    low_water: float,
    keeps: tuple[bool, bool, int] = (True, True, 0),
    blocks: bool = True,
    partial: bool = False,
) -> list[tuple[int, list[int] | None]]:
    """The rule, literally: for every prefix of the history that ends at a unit boundary
    (of the whole history's units), the window selected from the units from the current
    cut on (an earlier turn holding the cut offered whole) by the low-water recency window.
    When it takes everything offered the cut stays (at the start of what was offered); when
    it does not (or the pinned units alone exceed the budget), the cut moves to the oldest
    block start (a unit of the latest turn, or an earlier turn's first unit) from which every
    unpinned unit is in the window (the prefix's end when there is none). Returns
    ``(prefix length, window messages or None when the pinned units alone do not fit)``
    per step."""
    slicer_pipeline = pipeline(low_water, "cupel:turn" if blocks else None, partial)
    ends = _unit_ends(roles, calls, answers)
    cut = 0
    out: list[tuple[int, list[int] | None]] = []
    for end in ends:
        conversation, history = _build(roles, calls, answers, tokens, end, keeps)
        units = history.units
        firsts = conversation.unit_firsts
        turns = conversation.unit_turns
        latest = turns[units[-1]] if units else 0
        start = cut
        holding = [p for p in range(len(units)) if firsts[units[p]] >= cut]
        head = -1
        if blocks and holding and turns[units[holding[0]]] < latest:
            turn = turns[units[holding[0]]]
            first = min(p for p in range(len(units)) if turns[units[p]] == turn)
            if partial:  # the turn's first unit that is not a pinned system message
                first = min(
                    (
                        p
                        for p in range(len(units))
                        if turns[units[p]] == turn
                        and not (keeps[0] and conversation.role(units[p]) == "system")
                    ),
                    default=first,
                )  # the cut stays inside the turn; its first unit is offered with it
                rest = [p for p in holding if turns[units[p]] == turn and not history.is_pinned(p)]
                head = first if rest and first != holding[0] else -1  # with a part to keep
            else:  # an earlier turn is offered whole
                start = firsts[units[first]]
        offered = [
            p
            for p in range(len(units))
            if history.is_pinned(p) or firsts[units[p]] >= start or p == head
        ]
        items = history.items
        need = sum(history.pinned_tokens.values())
        chosen: list[int] = []
        if need <= limit:
            result = slicer_pipeline.run([items[p] for p in offered], budget(limit))
            chosen = history.positions(result.items)
        if need <= limit and len(chosen) == len(offered):
            cut = start  # everything offered fits: the cut stays
        else:
            # the cut: the oldest block start from which every unpinned unit is selected
            taken = set(chosen)

            starts = sorted(
                {
                    _block_start(p, units, turns, latest, blocks and not partial)
                    for p in offered
                    if firsts[units[p]] >= start
                }
            )
            cut = end
            for b in starts:
                if all(q in taken or history.is_pinned(q) for q in range(b, len(units))):
                    cut = firsts[units[b]]
                    break
        out.append((end, history.messages_at(chosen) if need <= limit else None))
    return out


def _block_start(p: int, units: list[int], turns: list[int], latest: int, blocks: bool) -> int:
    """The position where the block holding ``p`` starts (an earlier turn's first unit)."""
    if blocks and turns[units[p]] < latest:
        return min(q for q in range(len(units)) if turns[units[q]] == turns[units[p]])
    return p


def replay_windows(
    roles: list[str],
    calls: dict[int, list[str | None]],
    answers: dict[int, str | None],
    tokens: list[int],
    limit: int,
    low_water: float,
    keeps: tuple[bool, bool, int] = (True, True, 0),
    blocks: bool = True,
    partial: bool = False,
) -> list[tuple[int, list[int] | None]]:
    """The windows ``select`` gives for each prefix (one fresh selection per prefix)."""
    out: list[tuple[int, list[int] | None]] = []
    for end in _unit_ends(roles, calls, answers):
        _, history = _build(roles, calls, answers, tokens, end, keeps)
        try:
            window = history.select(
                pipeline(low_water, "cupel:turn" if blocks else None, partial),
                budget(limit),
                with_report=False,
            )
        except PinnedBudgetError:
            out.append((end, None))
            continue
        out.append((end, window.messages))
    return out


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[str], dict, dict, list[int]]:
    roles: list[str] = []
    tokens: list[int] = []
    calls: dict[int, list[str | None]] = {}
    answers: dict[int, str | None] = {}
    if draw(st.booleans()):
        roles.append("system")
        tokens.append(draw(st.integers(0, 40)))
    events = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["user", "user", "reply", "round", "round", "system", "stray"]),
                st.integers(0, 90),
                st.integers(1, 3),
            ),
            min_size=1,
            max_size=40,
        )
    )
    for step, (event, size, parallel) in enumerate(events):
        if event in ("user", "reply", "system"):
            roles.append({"reply": "assistant"}.get(event, event))
            tokens.append(size)
        elif event == "stray":  # a tool result answering nothing: invalid, never selected
            answers[len(roles)] = f"nobody{step}"
            roles.append("tool")
            tokens.append(size)
        else:
            ids = [f"c{step}.{j}" for j in range(parallel)]
            calls[len(roles)] = list(ids)
            roles.append("assistant")
            tokens.append(size // 3)
            for call_id in ids:
                answers[len(roles)] = call_id
                roles.append("tool")
                tokens.append(size)
    return roles, calls, answers, tokens


@settings(max_examples=examples(300), deadline=None)
@given(
    history=histories(),
    limit=st.integers(30, 400),
    low_water=st.sampled_from([0.3, 0.6, 1.0]),
    keeps=st.tuples(st.booleans(), st.booleans(), st.integers(0, 2)),
    blocks=st.booleans(),
    partial=st.booleans(),
)
def test_the_replayed_window_is_the_rule_applied_after_every_unit(
    history: tuple[list[str], dict, dict, list[int]],
    limit: int,
    low_water: float,
    keeps: tuple[bool, bool, int],
    blocks: bool,
    partial: bool,
) -> None:
    roles, calls, answers, tokens = history
    expected = oracle_windows(
        roles, calls, answers, tokens, limit, low_water, keeps, blocks, partial
    )
    got = replay_windows(roles, calls, answers, tokens, limit, low_water, keeps, blocks, partial)
    assert got == expected


@settings(max_examples=examples(150), deadline=None)
@given(history=histories(), limit=st.integers(30, 400))
def test_the_stable_prefix_is_measured_against_the_previous_requests_window(
    history: tuple[list[str], dict, dict, list[int]], limit: int
) -> None:
    """The previous request is the history before its newest assistant message: the window
    reports how many leading messages it shares with that history's window, and whether
    that window is still a prefix of its own."""
    roles, calls, answers, tokens = history
    if "assistant" not in roles:
        return
    newest = max(i for i, role in enumerate(roles) if role == "assistant")
    try:
        _, whole = _build(roles, calls, answers, tokens, len(roles), (True, True, 0))
        window = whole.select(pipeline(LOW_WATER), budget(limit), with_report=False)
    except PinnedBudgetError:
        return
    before: list[int] = []
    if newest:
        _, earlier = _build(roles, calls, answers, tokens, newest, (True, True, 0))
        try:
            before = earlier.select(pipeline(LOW_WATER), budget(limit), with_report=False).messages
        except PinnedBudgetError:  # that request could not be made: nothing to share
            assert (window.stable_prefix, window.cut_moved) == (0, True)
            return
    shared = 0
    for then, now in zip(before, window.messages, strict=False):
        if then != now:
            break
        shared += 1
    assert window.stable_prefix == shared
    assert window.cut_moved == (shared < len(before))
