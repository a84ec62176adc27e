"""Cache-stable windows in the LangChain adapter (issues 16 and 27): between cuts every window
is an append-only extension of the previous one and keeps the window rule; the cut is replayed
from the history, so the components keep nothing between calls (copies, pickles, configurable
fields, several workers and a component per call all give one object's windows); the report's
stable prefix is derived from the history; the optional cache breakpoint marks a copy."""

from __future__ import annotations

import asyncio
import copy
import gc
import itertools
import json
import pickle
import sys
import threading
import warnings
import weakref
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import pytest
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
from langchain_core.runnables import ConfigurableField
from langgraph.checkpoint.memory import InMemorySaver

from cupel import ConfigurationError
from cupel.conversation import Conversation
from cupel.counting import REPLY_TOKENS
from cupel_langchain import (
    CupelContextMiddleware,
    CupelMessageSelector,
    approximate_message_tokens,
    select_messages,
    select_messages_with_report,
)
from cupel_langchain._messages import read_messages
from cupel_langchain._stable import mark_cache_breakpoint

BUDGET = 400


def _chat(turns: int, seed: int = 0) -> list[BaseMessage]:
    """A system prompt and ``turns`` turns of varied sizes, ending on a question."""
    out: list[BaseMessage] = [SystemMessage("Be brief. " * 5)]
    for t in range(turns):
        out.append(HumanMessage(f"q{seed}.{t} " + "word " * ((t * 7 + seed) % 30 + 3)))
        if t % 4 == 1:
            call = f"c{seed}.{t}"
            out.append(AIMessage("", tool_calls=[{"name": "f", "args": {"t": t}, "id": call}]))
            out.append(ToolMessage("result " * ((t * 5) % 25 + 2), tool_call_id=call))
        out.append(AIMessage(f"a{seed}.{t} " + "text " * ((t * 11 + seed) % 40 + 5)))
    out.append(HumanMessage(f"q{seed}.last"))
    return out


def _prefixes(history: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The history at every call: after each human message and each tool result."""
    return [list(history[: i + 1]) for i, m in enumerate(history) if m.type in ("human", "tool")]


def _check(window: Sequence[BaseMessage], history: Sequence[BaseMessage]) -> None:
    """The window rule: within budget, valid, no holes, the question kept, system first."""
    by_id = {id(m): i for i, m in enumerate(history)}
    kept = [by_id[id(m)] for m in window]
    assert kept == sorted(kept)
    assert _tokens(window) + REPLY_TOKENS <= BUDGET  # the messages and the reply
    record = read_messages(list(history), None)
    check = Conversation(record.roles, calls=record.calls, answers=record.answers).check_window(
        kept
    )
    assert check.ok, check
    assert window[0] is history[0]


def _tokens(messages: Sequence[BaseMessage]) -> int:
    """The messages' tokens by cupel's default count."""
    return sum(approximate_message_tokens(m) for m in messages)


def _stable_run(select: Any, history: Sequence[BaseMessage]) -> tuple[int, int]:
    """Call ``select(prefix)`` on every prefix: every window keeps the rule; a window that
    does not start with the previous one (a cut) only comes when the previous window plus
    the new messages no longer fit. Returns (calls, cuts)."""
    previous: list[BaseMessage] | None = None
    seen = 0
    cuts = 0
    calls = 0
    for prefix in _prefixes(history):
        window = list(select(prefix))
        _check(window, prefix)
        if previous is not None:
            if window[: len(previous)] == previous:
                assert all(a is b for a, b in zip(window, previous, strict=False))
                assert window == [*previous, *prefix[seen:]]  # the new messages appended
            else:
                cuts += 1
                # the previous window and the new messages would not fit with the reply
                assert _tokens(previous) + _tokens(prefix[seen:]) + REPLY_TOKENS > BUDGET
        previous = window
        seen = len(prefix)
        calls += 1
    return calls, cuts


def _stable(prefix: list[BaseMessage], mark: bool | float = True) -> list[BaseMessage]:
    return select_messages(prefix, max_tokens=BUDGET, cache_stable=mark)


def test_select_messages_cache_stable_only_appends_between_cuts() -> None:
    """The plain function, called on each prefix with nothing carried between calls."""
    calls, cuts = _stable_run(_stable, _chat(40))
    assert calls > 40 and 2 <= cuts < calls // 3  # it overflowed, and mostly appended


def test_the_default_window_moves_its_cut_on_nearly_every_call_at_the_budget() -> None:
    """The minimal fit, for contrast (and unchanged when the option is off)."""
    history = _chat(40)
    moved = 0
    previous: list[BaseMessage] | None = None
    for prefix in _prefixes(history):
        window = select_messages(prefix, max_tokens=BUDGET)
        assert window == select_messages(prefix, max_tokens=BUDGET, cache_stable=False)
        if previous is not None and window[: len(previous)] != previous:
            moved += 1
        previous = window
    _, cuts = _stable_run(_stable, history)
    assert moved > 2 * cuts


def test_a_lower_low_water_mark_cuts_less_often_and_deeper() -> None:
    history = _chat(40)

    def run(mark: float) -> tuple[int, int]:
        return _stable_run(lambda prefix: _stable(prefix, mark), history)

    assert run(0.3)[1] < run(0.9)[1]


def test_previous_is_ignored_with_a_deprecation_warning() -> None:
    """``previous=`` held the window between calls; the window is now replayed from the
    history, so any ``previous`` (even one from another conversation) changes nothing."""
    history = _chat(20)
    expected = _stable(history)
    for previous in ([HumanMessage("another conversation")], expected[:3], "anything"):
        with pytest.warns(DeprecationWarning, match="removed before 1.0") as caught:
            got = select_messages(history, max_tokens=BUDGET, cache_stable=True, previous=previous)  # type: ignore[arg-type]
        assert got == expected
        assert caught[0].filename == __file__  # it points at the caller
        assert "replayed from the history" in str(caught[0].message)
        with pytest.warns(DeprecationWarning, match=r"select_messages_with_report\(previous"):
            kept, _ = select_messages_with_report(
                history,
                max_tokens=BUDGET,
                cache_stable=True,
                previous=previous,  # type: ignore[arg-type]
            )
        assert kept == expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert select_messages(history, max_tokens=BUDGET, cache_stable=True, previous=None)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cache_stable": 1.5}, "cache_stable"),
        ({"cache_stable": 0}, "cache_stable"),
        ({"cache_stable": "yes"}, "cache_stable"),
        ({"cache_stable": True, "policy": "code_review"}, "cache_stable"),  # no window
        ({"cache_breakpoint": 1}, "cache_breakpoint"),
    ],
)
def test_bad_options_are_named(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError, match=field) as info:
        select_messages(_chat(3), max_tokens=BUDGET, **kwargs)
    assert info.value.field == field
    with pytest.raises(ConfigurationError):
        select_messages_with_report(_chat(3), max_tokens=BUDGET, **kwargs)


class Events(BaseCallbackHandler):
    """The ``cupel_selection`` events of a run."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == "cupel_selection":
            self.events.append(data)


def _previous_request(history: list[BaseMessage]) -> list[BaseMessage] | None:
    """The window of the request the newest AI message answered (the history before it)."""
    answered = [i for i, m in enumerate(history) if isinstance(m, AIMessage)]
    if not answered:
        return None
    return _stable(history[: answered[-1]])


def test_the_reported_stable_prefix_is_derived_from_the_history_on_every_worker() -> None:
    """One selector, or two workers in turn: the same events, whose ``stable_prefix`` is the
    prefix shared with the window of the request the newest AI message answered — what the
    provider saw, whichever worker served it (defect 4)."""
    prefixes = _prefixes(_chat(30, seed=1))
    one = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    workers = [CupelMessageSelector(max_tokens=BUDGET, cache_stable=True) for _ in range(2)]
    reported: list[list[dict[str, Any]]] = []
    for selectors in ([one], workers):
        events = Events()
        for step, prefix in enumerate(prefixes):
            config: Any = {"configurable": {"thread_id": "a"}, "callbacks": [events]}
            selectors[step % len(selectors)].invoke(prefix, config=config)
        reported.append(
            [{k: e[k] for k in ("stable_prefix", "cut_moved", "cut")} for e in events.events]
        )
        for prefix, data in zip(prefixes, events.events, strict=True):
            window = _stable(prefix)
            before = _previous_request(prefix)
            if before is None:
                assert (data["stable_prefix"], data["cut_moved"]) == (0, True)
                continue
            shared = next(
                (i for i, (a, b) in enumerate(zip(before, window, strict=False)) if a is not b),
                min(len(before), len(window)),
            )
            assert data["stable_prefix"] == shared
            assert data["cut_moved"] is (window[: len(before)] != before)
    assert reported[0] == reported[1]
    assert sum(not e["cut_moved"] for e in reported[0]) > len(prefixes) * 0.6
    json.dumps(reported)


def test_copies_pickles_and_configurable_fields_give_one_objects_windows() -> None:
    """``model_copy``, ``deepcopy``, a pickle round trip (a restart) and a selector rebuilt by
    ``configurable_fields`` on every call select what one object selects, append-only between
    cuts (defect 3: a copy shared the state map, configurable fields lost it)."""
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    configurable = CupelMessageSelector(max_tokens=100, cache_stable=True).configurable_fields(
        max_tokens=ConfigurableField(id="budget")
    )
    variants: list[Any] = [
        selector,
        selector.model_copy(),
        copy.deepcopy(selector),
        pickle.loads(pickle.dumps(selector)),
    ]
    history = _chat(30, seed=2)
    calls = itertools.count()

    def select(prefix: list[BaseMessage]) -> list[BaseMessage]:
        step = next(calls)
        if step % 5 == 4:
            config: Any = {"configurable": {"budget": BUDGET, "thread_id": "t"}}
            window = configurable.invoke(prefix, config=config)
        else:
            window = variants[step % 4].invoke(prefix)
        assert window == _stable(prefix)
        return window

    calls_made, cuts = _stable_run(select, history)
    assert 2 <= cuts < calls_made // 3
    restored = pickle.loads(pickle.dumps(selector))
    assert restored.invoke(history) == selector.invoke(history)


def test_the_deprecated_state_options_warn_and_do_nothing() -> None:
    with pytest.warns(DeprecationWarning, match="max_conversations is ignored") as caught:
        selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True, max_conversations=2)
    assert caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match="max_conversations is ignored"):
        selector.max_conversations = 5
    with pytest.warns(DeprecationWarning, match=r"forget\(\) does nothing") as caught:
        selector.forget({"configurable": {"thread_id": "t"}})
    assert caught[0].filename == __file__
    history = _chat(25, seed=5)
    assert selector.invoke(history) == _stable(history)
    with pytest.raises(ConfigurationError, match="max_conversations"):
        CupelMessageSelector(max_tokens=BUDGET, max_conversations="many")
    with pytest.warns(DeprecationWarning, match="max_conversations is ignored") as caught:
        middleware = CupelContextMiddleware(max_tokens=BUDGET, max_conversations=2)
    assert caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match="max_conversations is ignored"):
        middleware.max_conversations = 3
    with pytest.warns(DeprecationWarning, match=r"forget\(\) does nothing"):
        middleware.forget("t")
    with pytest.raises(ConfigurationError, match="max_conversations must be an int"):
        CupelContextMiddleware(max_tokens=BUDGET, max_conversations=True)
    with warnings.catch_warnings():  # not given: no warning
        warnings.simplefilter("error")
        CupelMessageSelector(max_tokens=BUDGET, cache_stable=True).invoke(history)
        CupelContextMiddleware(max_tokens=BUDGET, cache_stable=True)


def test_concurrent_threads_each_get_the_window_of_their_history() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    failures: list[str] = []

    def worker(seed: int) -> None:
        for prefix in _prefixes(_chat(30, seed=seed)):
            window = selector.invoke(prefix, config={"configurable": {"thread_id": seed}})
            if window != _stable(prefix):
                failures.append(f"thread {seed}: a window that is not its history's")

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_cache_breakpoint_marks_a_copy_of_the_last_message_only() -> None:
    history = _chat(5)
    plain = select_messages(history, max_tokens=BUDGET)
    marked = select_messages(history, max_tokens=BUDGET, cache_breakpoint=True)
    assert all(a is b for a, b in zip(plain[:-1], marked[:-1], strict=True))
    last = marked[-1]
    assert last is not plain[-1] and plain[-1].content == "q0.last"  # not mutated
    assert last.content == [
        {"type": "text", "text": "q0.last", "cache_control": {"type": "ephemeral"}}
    ]
    call_only = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c"}])
    assert mark_cache_breakpoint(call_only).additional_kwargs["cache_control"] == {
        "type": "ephemeral"
    }
    assert "cache_control" not in call_only.additional_kwargs
    blocks = HumanMessage(content=[{"type": "text", "text": "a"}, "b"])
    assert mark_cache_breakpoint(blocks).content[-1] == {  # type: ignore[index]
        "type": "text",
        "text": "b",
        "cache_control": {"type": "ephemeral"},
    }
    assert blocks.content[-1] == "b"


def test_cache_breakpoint_composes_with_the_replayed_window() -> None:
    """With ``cache_breakpoint`` the windows of a session are those without it, apart from
    the marked copy of the last message, and the reported stable prefix is the same: the
    replay reads the history, never the marked copy sent before (defect 3)."""
    marked = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True, cache_breakpoint=True)
    plain = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    for prefix in _prefixes(_chat(30, seed=6)):
        with_mark, without = Events(), Events()
        sent = marked.invoke(prefix, config={"callbacks": [with_mark]})
        expected = plain.invoke(prefix, config={"callbacks": [without]})
        assert sent[:-1] == expected[:-1]
        assert sent[-1] == mark_cache_breakpoint(expected[-1])
        assert sent[-1] is not expected[-1]
        (a,), (b,) = with_mark.events, without.events
        assert {k: a[k] for k in ("stable_prefix", "cut_moved", "cut")} == {
            k: b[k] for k in ("stable_prefix", "cut_moved", "cut")
        }


class Sent(Events):
    """The events and what each model call was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.inputs: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.inputs.extend(messages)


def _replies() -> GenericFakeChatModel:
    return GenericFakeChatModel(
        messages=(AIMessage(f"reply {i} " + "ok " * (i % 4 * 8 + 5)) for i in itertools.count())
    )


def _agent_session(middleware: CupelContextMiddleware, turns: int, threads: Sequence[str]) -> Sent:
    """A real agent with a checkpointer; ``turns`` questions in each thread, interleaved."""
    agent = create_agent(
        _replies(), system_prompt="Be brief.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    sent = Sent()
    for turn in range(turns):
        for thread in threads:
            question = HumanMessage(f"{thread} question {turn} " + "w " * (turn % 5 * 10 + 5))
            config: Any = {"configurable": {"thread_id": thread}, "callbacks": [sent]}
            agent.invoke({"messages": [question]}, config)
    return sent


def test_middleware_in_an_agent_keeps_each_threads_window_stable() -> None:
    """A real agent (create_agent, a checkpointer, two threads, a breakpoint): each model
    call's window is reported with its stable prefix; between cuts it appends; the windows
    are those without the breakpoint apart from the marked copy."""
    options: dict[str, Any] = {"max_tokens": 300, "cache_stable": True}
    marked = _agent_session(CupelContextMiddleware(**options, cache_breakpoint=True), 14, "xy")
    plain = _agent_session(CupelContextMiddleware(**options), 14, "xy")
    assert len(marked.events) == len(marked.inputs) == 28
    for a, b in zip(marked.inputs, plain.inputs, strict=True):
        assert [m.content for m in a[:-1]] == [m.content for m in b[:-1]]
        assert a[-1].content == mark_cache_breakpoint(b[-1]).content
    fields = ("stable_prefix", "cut_moved", "cut", "included_tokens")
    assert [{k: e[k] for k in fields} for e in marked.events] == [
        {k: e[k] for k in fields} for e in plain.events
    ]
    for thread in (0, 1):
        chunks = plain.events[thread::2]
        assert all(c["included_tokens"] + REPLY_TOKENS <= 300 for c in chunks)
        kept = [not c["cut_moved"] for c in chunks[1:]]
        assert sum(kept) >= 7, [c["stable_prefix"] for c in chunks]
        for before, after in pairwise(chunks):
            if not after["cut_moved"]:  # the whole previous window leads this one
                assert after["stable_prefix"] == before["included"]


def test_persistent_mode_emits_one_event_per_model_call_and_stays_append_only() -> None:
    """``persistent=True`` rewrites the state to the window; the next call's replay over the
    rewritten history appends to the window sent, so the window sent only changes its prefix
    at a call that rewrote the state or moved the cut; one event per model call (defect 7)."""
    middleware = CupelContextMiddleware(max_tokens=300, cache_stable=True, persistent=True)
    agent = create_agent(
        _replies(), system_prompt="Be brief.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    sent = Sent()
    config: Any = {"configurable": {"thread_id": "p"}, "callbacks": [sent]}
    states: list[list[str | None]] = []
    for turn in range(30):
        question = HumanMessage(f"question {turn} " + "w " * (turn % 5 * 10 + 5))
        agent.invoke({"messages": [question]}, config)
        states.append([m.id for m in agent.get_state(config).values["messages"]])
    assert len(sent.events) == len(sent.inputs) == 30
    appended = rewrites = 0
    for turn in range(1, 30):
        before, after = sent.inputs[turn - 1], sent.inputs[turn]
        rewritten = states[turn][: len(states[turn - 1])] != states[turn - 1]
        rewrites += rewritten
        if [m.id for m in after[: len(before)]] == [m.id for m in before]:
            appended += 1
        else:
            assert rewritten or sent.events[turn]["cut_moved"]
        # the state (before the reply) is a window itself: within the budget, and it holds
        # every message sent
        assert set(states[turn][:-1]) >= {m.id for m in after[1:]}
    assert appended >= 20 and rewrites >= 3


def test_middleware_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="cache_stable"):
        CupelContextMiddleware(max_tokens=100, cache_stable=2)
    with pytest.raises(ConfigurationError, match="cache_breakpoint"):
        CupelContextMiddleware(max_tokens=100, cache_breakpoint="yes")
    middleware = CupelContextMiddleware(max_tokens=100)
    with pytest.raises(ConfigurationError, match="cache_stable"):
        middleware.cache_stable = -1
    assert middleware.cache_stable is False


# -- nothing is kept per conversation --------------------------------------------------------
WORDS = [f"topic{k} " + "word " * (k % 13 * 3 + 2) for k in range(40)]
"""The texts of the 1,000 conversations: shared, so the text counter's memo (keyed by text,
bounded) is filled by the first few and only message objects are new per conversation."""


def _conversation(n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage(WORDS[0])]
    for t in range(6):
        out.append(HumanMessage(WORDS[(n + t) % 40]))
        out.append(AIMessage(WORDS[(n * 7 + t) % 40]))
    out.append(HumanMessage(WORDS[n % 39 + 1]))
    return out


def _footprint(component: Any) -> dict[str, int]:
    """The component's own attributes, with their sizes where they are containers."""
    attrs = dict(vars(component))
    attrs.update(getattr(component, "__pydantic_private__", None) or {})
    return {k: len(v) if hasattr(v, "__len__") else -1 for k, v in attrs.items()}


def _retained(run: Any, conversations: range) -> tuple[int, int]:
    """Run every conversation (each a new thread_id with new message objects) and return how
    many of their messages are still alive afterwards, and how many memory blocks the run
    left allocated (after a garbage collection)."""
    alive: list[weakref.ref[BaseMessage]] = []
    gc.collect()
    blocks = sys.getallocatedblocks()
    for n in conversations:
        messages = _conversation(n)
        alive.extend(weakref.ref(m) for m in messages)
        run(n, messages)
        del messages
    gc.collect()
    living = sum(ref() is not None for ref in alive)
    del alive  # the weak references themselves are not the components'
    gc.collect()
    return living, sys.getallocatedblocks() - blocks


@pytest.mark.slow
def test_a_thousand_conversations_leave_nothing_behind() -> None:
    """One selector and one middleware (in a real agent) serve 1,000 conversations, each its
    own thread_id: afterwards none of their messages is alive, the components' attributes
    have not grown, and the memory blocks left allocated after the first 100 (the warm-up)
    stay flat over the next 900 (``sys.getallocatedblocks``: exact, and no tracing cost)."""
    selector = CupelMessageSelector(max_tokens=300, cache_stable=True)
    middleware = CupelContextMiddleware(max_tokens=300, cache_stable=True)
    agent = create_agent(
        GenericFakeChatModel(messages=itertools.repeat(AIMessage("ok"))),
        system_prompt=WORDS[0],
        middleware=[middleware],
    )

    loop = asyncio.new_event_loop()

    def through_selector(n: int, messages: list[BaseMessage]) -> None:
        config: Any = {"configurable": {"thread_id": f"s{n}"}}
        if n % 2:
            loop.run_until_complete(selector.ainvoke(messages, config=config))
        else:
            selector.invoke(messages, config=config)

    def through_agent(n: int, messages: list[BaseMessage]) -> None:
        agent.invoke({"messages": messages[1:]}, {"configurable": {"thread_id": f"m{n}"}})

    for run, component in ((through_selector, selector), (through_agent, middleware)):
        _retained(run, range(100))  # warm-up: caches of settings, counters and the graph
        footprint = _footprint(component)
        alive, blocks = _retained(run, range(100, 1000))
        assert _footprint(component) == footprint
        assert alive == 0
        # one conversation's messages alone take over 100 blocks: 900 kept would be 90,000
        assert blocks < 5_000, blocks
    loop.close()
