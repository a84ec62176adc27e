"""Cache-stable windows in the LangChain adapter as a pure function of the history (issue 27),
under random sessions: messages appended, edited in the middle, deleted and summarised, each
change followed by a call made by one object, alternating objects, a fresh object per call
or the plain function, synchronously or not. Every call gives the window of the history
itself; the newest unit is kept whenever it fits; between cuts the windows only append."""

from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis_profiles import examples
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from cupel import PinnedBudgetError
from cupel.conversation import Conversation
from cupel.counting import REPLY_TOKENS, Calibration, request_budget
from cupel_langchain import (
    CupelContextMiddleware,
    CupelMessageSelector,
    approximate_message_tokens,
    select_messages,
    select_messages_with_report,
)
from cupel_langchain._messages import read_messages
from cupel_langchain._selection import MessageSelection

SYSTEM = "Answer briefly."


# -- sessions ---------------------------------------------------------------------------------
@dataclass
class Session:
    """A history and how it changes; ``serial`` keeps every text unique (windows are compared
    by text, after the agent's graph has copied the messages)."""

    history: list[BaseMessage] = field(default_factory=list)
    serial: int = 0

    def text(self, what: str, size: int) -> str:
        self.serial += 1
        return f"{what} #{self.serial} " + "word " * size

    def usage(self, ratio: float | None) -> dict[str, int] | None:
        """What a provider counting ``ratio`` times cupel would report for the request of
        the history so far (its reply answers it)."""
        if ratio is None:
            return None
        counted = sum(map(approximate_message_tokens, self.history)) + REPLY_TOKENS
        reported = max(1, round(counted * ratio))
        return {"input_tokens": reported, "output_tokens": 5, "total_tokens": reported + 5}

    def apply(self, op: tuple[Any, ...]) -> bool:
        """Apply ``op``; whether it only appended to the history."""
        kind = op[0]
        history = self.history
        if kind == "human":
            history.append(HumanMessage(self.text("question", op[1])))
        elif kind == "ai":
            usage = self.usage(op[2])
            history.append(AIMessage(self.text("answer", op[1]), usage_metadata=usage))  # type: ignore[arg-type]
        elif kind == "round":
            _, size, parallel, ratio = op
            usage = self.usage(ratio)
            ids = [f"call{self.serial}.{j}" for j in range(parallel)]
            calls = [{"name": "lookup", "args": {"n": j}, "id": i} for j, i in enumerate(ids)]
            history.append(
                AIMessage(self.text("calling", 1), tool_calls=calls, usage_metadata=usage)  # type: ignore[arg-type]
            )
            for call_id in ids:
                history.append(ToolMessage(self.text("result", size), tool_call_id=call_id))
        elif kind == "edit":
            index = _index(op[1], len(history))
            if index is None:
                return True
            old = history[index]
            history[index] = old.model_copy(update={"content": self.text("edited", op[2])})
        elif kind == "delete":
            index = _index(op[1], len(history))
            if index is None:
                return True
            start, end = _unit_at(history, index)
            del history[start:end]
        elif kind == "summarise":
            index = _index(op[1], len(history))
            if index is None:
                return True
            end = _unit_at(history, index)[1]
            summary = HumanMessage(self.text("summary of the conversation so far", op[2]))
            history[1:end] = [summary]
        return kind in ("human", "ai", "round")


def _index(fraction: float, size: int) -> int | None:
    """A message after the system prompt, by its share of the history."""
    if size < 2:
        return None
    return 1 + min(size - 2, int(fraction * (size - 1)))


def _unit_at(history: list[BaseMessage], index: int) -> tuple[int, int]:
    """The unit holding message ``index``: a tool call with its results, or the message."""
    start = index
    while isinstance(history[start], ToolMessage):
        start -= 1
    end = start + 1
    if isinstance(history[start], AIMessage) and history[start].tool_calls:  # type: ignore[attr-defined]
        while end < len(history) and isinstance(history[end], ToolMessage):
            end += 1
    return start, end


ratios = st.one_of(st.none(), st.sampled_from([0.9, 1.0, 1.2, 1.5, 2.5]))
appends = st.one_of(
    st.tuples(st.just("human"), st.integers(0, 40)),
    st.tuples(st.just("ai"), st.integers(0, 60), ratios),
    st.tuples(st.just("round"), st.integers(0, 60), st.integers(1, 3), ratios),
)
changes = st.one_of(
    st.tuples(st.just("edit"), st.floats(0, 1), st.integers(0, 40)),
    st.tuples(st.just("delete"), st.floats(0, 1)),
    st.tuples(st.just("summarise"), st.floats(0, 1), st.integers(0, 30)),
)
operations = st.lists(st.one_of(appends, appends, appends, changes), min_size=6, max_size=30)
options = st.fixed_dictionaries(
    {
        "max_tokens": st.sampled_from([120, 200, 320]),
        "cache_stable": st.sampled_from([True, 0.3, 0.85]),
        "keep_last": st.integers(0, 1),
    }
)
patterns = st.tuples(st.sampled_from(["one", "alternating", "fresh"]), st.integers(2, 4))


@dataclass
class Caller:
    """Which object makes each call: always the same one, ``count`` objects in turn, or a
    new one each time."""

    pattern: str
    count: int
    make: Any
    objects: list[Any] = field(default_factory=list)
    calls: int = 0

    def next(self) -> Any:
        self.calls += 1
        if self.pattern == "fresh":
            return self.make()
        if not self.objects:
            size = 1 if self.pattern == "one" else self.count
            self.objects = [self.make() for _ in range(size)]
        return self.objects[(self.calls - 1) % len(self.objects)]


def note(what: str) -> None:
    """Count ``what`` in Hypothesis' statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        event(what)


# -- the window of a history, and the rules it keeps -------------------------------------------
def reference(history: list[BaseMessage], opts: dict[str, Any]) -> tuple[list[int], int]:
    """The window (message indices) and its cut, by a selection built for this call alone."""
    _, window = MessageSelection(opts).select_window(list(history), with_report=False)
    return window.messages, window.cut


def texts(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages]


def check_rules(history: list[BaseMessage], kept: list[int], opts: dict[str, Any]) -> None:
    """Within the (calibrated) budget, valid, system first, the latest human kept, and the
    newest unit kept whenever it fits beside the pinned messages."""
    tokens = [approximate_message_tokens(m) for m in history]
    budget = _calibrated(history, tokens, opts["max_tokens"])
    room = budget.max_tokens - budget.output_reserve
    assert sum(tokens[i] for i in kept) <= room
    record = read_messages(list(history), None)
    assert (
        Conversation(record.roles, calls=record.calls, answers=record.answers).check_window(kept).ok
    )
    assert kept[0] == 0  # the system prompt
    humans = [i for i, m in enumerate(history) if isinstance(m, HumanMessage)]
    if humans:
        assert humans[-1] in kept
    units = _units(history)
    pinned = {0, *(humans[-1:])}
    for unit in units[len(units) - opts["keep_last"] :] if opts["keep_last"] else []:
        pinned.update(unit)
    if not units:
        return
    newest = units[-1]
    need = sum(tokens[i] for i in pinned) + sum(tokens[i] for i in newest if i not in pinned)
    if need <= room:
        note("the newest unit fits")
        assert set(newest) <= set(kept), (newest, kept)


def _units(history: list[BaseMessage]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    index = 1
    while index < len(history):
        start, end = _unit_at(history, index)
        out.append(tuple(range(start, end)))
        index = end
    return out


def _calibrated(history: list[BaseMessage], tokens: list[int], max_tokens: int) -> Any:
    """The budget after the newest AI message reporting usage (the provider's count against
    cupel's: only ever tighter)."""
    budget = request_budget(max_tokens)
    for index in range(len(history) - 1, 0, -1):
        usage = getattr(history[index], "usage_metadata", None)
        if isinstance(history[index], AIMessage) and usage:
            counted = sum(tokens[:index]) + REPLY_TOKENS
            return Calibration(usage["input_tokens"], counted, index).budget(budget)
    return budget


def check_append_only(
    history: list[BaseMessage],
    before: tuple[list[int], int],
    after: tuple[list[int], int],
    grown_from: int,
) -> None:
    """Between two calls on a history that only grew (from ``grown_from`` messages): the cut
    never moves back but to the start of the turn it was in, when a new human message makes
    that turn an earlier one (kept whole or not at all); when the cut stays and the window
    keeps the same messages before it (system messages, a task still the latest human
    message), the new window is the old one plus every new message."""
    (old, old_cut), (new, new_cut) = before, after
    if new_cut < old_cut:
        note("the cut widened to the start of a turn that ended")
        assert isinstance(history[new_cut], HumanMessage)
        assert not any(isinstance(m, HumanMessage) for m in history[new_cut + 1 : old_cut])
        assert any(isinstance(m, HumanMessage) for m in history[grown_from:])
        return
    if new_cut != old_cut:
        note("the cut moved")
        return
    old_before_cut = [i for i in old if i < old_cut]
    new_before_cut = [i for i in new if i < new_cut]
    if old_before_cut == new_before_cut:  # the same pinned messages before the cut
        note("appended" if old_cut > 1 else "appended, nothing cut yet")
        assert new == [*old, *range(grown_from, len(history))], (old, new, old_cut)
    else:
        note("a new task: the old one, kept before the cut, is no longer pinned")


# -- the properties ----------------------------------------------------------------------------
def _session(ops: list[tuple[Any, ...]]) -> list[tuple[list[BaseMessage], bool]]:
    """The history after each operation, and whether the operation only appended."""
    session = Session([SystemMessage(SYSTEM)])
    out = []
    for op in ops:
        appended = session.apply(op)
        out.append((list(session.history), appended))
    return out


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations, opts=options, pattern=patterns, asyncs=st.lists(st.booleans(), max_size=30))
def test_every_call_pattern_gives_the_window_of_the_history_itself(
    ops: list[tuple[Any, ...]], opts: dict[str, Any], pattern: tuple[str, int], asyncs: list[bool]
) -> None:
    """The selector (invoke / ainvoke, one object, objects in turn, a new one per call, a
    thread_id or none) and the plain functions give the reference window on every call; the
    windows keep the rules and append between cuts."""
    caller = Caller(*pattern, make=lambda: CupelMessageSelector(**opts))
    previous: tuple[list[int], int] | None = None
    size = 0
    for step, (history, appended) in enumerate(_session(ops)):
        selector = caller.next()
        config: Any = {"configurable": {"thread_id": f"t{step % 3}"}} if step % 2 else None
        run_async = step < len(asyncs) and asyncs[step]
        try:
            expected = reference(history, opts)
        except PinnedBudgetError:  # keep_last pinned a unit larger than the budget
            with pytest.raises(PinnedBudgetError):
                selector.invoke(history, config=config)
            previous = None
            continue
        kept = expected[0]
        check_rules(history, kept, opts)
        if previous is not None and appended:
            check_append_only(history, previous, expected, size)
        want = [history[i] for i in kept]
        if run_async:
            got = asyncio.run(selector.ainvoke(history, config=config))
        else:
            got = selector.invoke(history, config=config)
        assert all(a is b for a, b in zip(got, want, strict=True))
        assert select_messages(history, **opts) == want
        assert select_messages_with_report(history, **opts)[0] == want
        previous, size = expected, len(history)


class Sent(BaseCallbackHandler):
    """What each model call was sent (the chat model's own start callback)."""

    def __init__(self) -> None:
        self.inputs: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.inputs.extend(messages)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=operations.filter(lambda ops: len(ops) <= 14),
    opts=options,
    pattern=patterns,
    asyncs=st.lists(st.booleans(), max_size=14),
)
def test_agents_on_any_worker_send_the_window_of_the_history_itself(
    ops: list[tuple[Any, ...]], opts: dict[str, Any], pattern: tuple[str, int], asyncs: list[bool]
) -> None:
    """The middleware in real agents (create_agent; one, alternating or a new agent with a new
    middleware per call, invoke or ainvoke): every model call is sent the window of
    ``[system prompt, *history]`` — the same as the plain function's."""
    reply = itertools.repeat(AIMessage("ok"))

    def make() -> Any:
        middleware = CupelContextMiddleware(**opts)
        return create_agent(
            GenericFakeChatModel(messages=reply), system_prompt=SYSTEM, middleware=[middleware]
        )

    caller = Caller(*pattern, make=make)
    for step, (history, _) in enumerate(_session(ops)):
        body = history[1:]  # the agent adds its system prompt
        sent = Sent()
        config: Any = {"callbacks": [sent], "configurable": {"thread_id": f"t{step % 2}"}}
        agent = caller.next()
        try:
            expected = select_messages(history, **opts)
        except PinnedBudgetError:
            with pytest.raises(PinnedBudgetError):
                agent.invoke({"messages": body}, config=config)
            continue
        if step < len(asyncs) and asyncs[step]:
            asyncio.run(agent.ainvoke({"messages": body}, config=config))
        else:
            agent.invoke({"messages": body}, config=config)
        (window,) = sent.inputs
        assert texts(window) == texts(expected)


def test_the_replay_reads_every_message_once_also_with_usage_on_every_reply() -> None:
    """Calibrating at every AI message is linear: each message is counted once per call
    (running totals), however many replies report usage."""
    session = Session([SystemMessage(SYSTEM)])
    for turn in range(40):
        session.apply(("human", turn % 9))
        session.apply(("ai", turn % 13, 1.0 + (turn % 5) / 10))
    history = session.history
    counted: list[BaseMessage] = []

    def count(message: BaseMessage) -> int:
        counted.append(message)
        return approximate_message_tokens(message)

    kept = select_messages(
        history,
        max_tokens=300,
        cache_stable=True,
        token_counter=count,
        token_counter_input="message",
    )
    assert len(counted) == len(history)
    assert kept == select_messages(history, max_tokens=300, cache_stable=True)


def test_a_calibration_changing_at_every_reply_never_moves_an_earlier_cut() -> None:
    """Providers counting 1.0-2.5x cupel's count, differently at every reply: each call's
    window is the replay of the history with each request's own budget, so between cuts the
    windows still only append and every window fits its own calibrated budget."""
    opts = {"max_tokens": 260, "cache_stable": True, "keep_last": 0}
    session = Session([SystemMessage(SYSTEM)])
    previous: tuple[list[int], int] | None = None
    size = 0
    appends = cuts = 0
    for turn in range(60):
        ratio = [1.0, 1.3, 2.5, 1.1, 1.6][turn % 5]
        op = ("human", turn % 11) if turn % 2 == 0 else ("round", turn % 17, 1 + turn % 2, ratio)
        session.apply(op)
        history = list(session.history)
        current = reference(history, opts)
        check_rules(history, current[0], opts)
        if previous is not None:
            check_append_only(history, previous, current, size)
            if current[1] == previous[1]:
                appends += 1
            else:
                cuts += 1
        previous, size = current, len(history)
    assert cuts >= 3 and appends > 2 * cuts


def test_calibration_budgets_apply_from_their_reply_on() -> None:
    """The budget in force at each step is the newest calibration's before it: a step before
    the first reporting reply uses the budget as configured."""
    session = Session([SystemMessage(SYSTEM)])
    for turn in range(12):
        session.apply(("human", 20))
        session.apply(("ai", 30, 2.0 if turn == 6 else None))
    session.apply(("human", 5))
    history = session.history
    selection = MessageSelection({"max_tokens": 400, "cache_stable": True})
    _, window = selection.select_window(list(history), with_report=True)
    assert window.report is not None
    (event,) = [e for e in window.report.events if e.stage == "Calibrate"]
    assert "ratio 2.000" in str(event.message)
    room = 400 - REPLY_TOKENS
    assert f"is {room - math.ceil(room / 2)} tokens instead of {room}" in str(event.message)
