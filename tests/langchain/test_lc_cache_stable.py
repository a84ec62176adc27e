"""Cache-stable windows in the LangChain adapter (issue 16): between cuts every window is an
append-only extension of the previous one, each keeps the window rule, state is per
conversation (thread_id / session_id), bounded and thread-safe, and the optional cache
breakpoint marks a copy."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
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
from cupel_langchain._stable import conversation_key, mark_cache_breakpoint

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
    """Replay ``select(prefix, previous)``: every window keeps the rule; a window that
    does not start with the previous one (a cut) only comes when the previous window plus
    the new messages no longer fit. Returns (calls, cuts)."""
    previous: list[BaseMessage] | None = None
    seen = 0
    cuts = 0
    calls = 0
    for prefix in _prefixes(history):
        window = list(select(prefix, previous))
        _check(window, prefix)
        if previous is not None:
            if window[: len(previous)] == previous:
                assert all(a is b for a, b in zip(window, previous, strict=False))
            else:
                cuts += 1
                # the previous window and the new messages would not fit with the reply
                assert _tokens(previous) + _tokens(prefix[seen:]) + REPLY_TOKENS > BUDGET
        previous = window
        seen = len(prefix)
        calls += 1
    return calls, cuts


def test_select_messages_cache_stable_only_appends_between_cuts() -> None:
    history = _chat(40)
    calls, cuts = _stable_run(
        lambda prefix, previous: select_messages(
            prefix, max_tokens=BUDGET, cache_stable=True, previous=previous
        ),
        history,
    )
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
    _, cuts = _stable_run(
        lambda prefix, previous: select_messages(
            prefix, max_tokens=BUDGET, cache_stable=True, previous=previous
        ),
        history,
    )
    assert moved > 2 * cuts


def test_a_lower_low_water_mark_cuts_less_often_and_deeper() -> None:
    history = _chat(40)

    def run(mark: float) -> tuple[int, int]:
        return _stable_run(
            lambda prefix, previous: select_messages(
                prefix, max_tokens=BUDGET, cache_stable=mark, previous=previous
            ),
            history,
        )

    assert run(0.3)[1] < run(0.9)[1]


def test_previous_not_from_this_history_starts_fresh() -> None:
    history = _chat(20)
    stranger = [HumanMessage("a message from another conversation")]
    fresh = select_messages(history, max_tokens=BUDGET, cache_stable=True)
    assert (
        select_messages(history, max_tokens=BUDGET, cache_stable=True, previous=stranger) == fresh
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cache_stable": 1.5}, "cache_stable"),
        ({"cache_stable": 0}, "cache_stable"),
        ({"cache_stable": "yes"}, "cache_stable"),
        ({"previous": []}, "previous"),  # without cache_stable
        ({"cache_stable": True, "previous": "hi"}, "previous"),
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


def test_selector_keeps_one_state_per_thread_id_and_reports_it() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    chats = {"a": _chat(30, seed=1), "b": _chat(30, seed=2)}
    calls = {name: _prefixes(history) for name, history in chats.items()}
    previous: dict[str, list[BaseMessage]] = {}
    events: list[dict[str, Any]] = []
    appended = 0
    for step in range(min(len(c) for c in calls.values())):
        for name in ("a", "b"):  # interleaved: the states never mix
            prefix = calls[name][step]
            config = {"configurable": {"thread_id": name}, "callbacks": []}
            window = selector.invoke(prefix, config=config)  # type: ignore[arg-type]
            _check(window, prefix)
            before = previous.get(name)
            if before is not None and window[: len(before)] == before:
                appended += 1
            previous[name] = window
            assert selector.last_report is not None
            events.append(dict(_event(selector, prefix, name, len(window))))
    assert appended > len(events) * 0.6
    assert all({"stable_prefix", "cut_moved", "cut"} <= set(e) for e in events)
    assert not any(e["cut_moved"] for e in events)  # repeating a call moves nothing
    json.dumps(events)  # JSON-ready


def _event(selector: CupelMessageSelector, prefix: list[BaseMessage], name: str, sent: int) -> Any:
    """The report event of one more (identical) call, via astream_events-like callbacks."""
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[Any] = []

    class Handler(BaseCallbackHandler):
        def on_custom_event(self, event: str, data: Any, **kwargs: Any) -> None:
            seen.append(data)

    selector.invoke(prefix, config={"configurable": {"thread_id": name}, "callbacks": [Handler()]})
    (data,) = seen
    assert data["cut_moved"] is False  # the same history again: nothing moves
    assert data["stable_prefix"] == sent  # all of the window it sent before
    return data


def test_without_a_key_alternating_conversations_start_fresh_and_never_mix() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    a, b = _chat(25, seed=3), _chat(25, seed=4)
    for history in (a, b, a, b):
        window = selector.invoke(history)
        _check(window, history)
        fresh = select_messages(history, max_tokens=BUDGET, cache_stable=True)
        assert window == fresh  # the other conversation's state was not used


def test_the_state_map_is_bounded_least_recently_used_out() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True, max_conversations=2)
    history = _chat(25, seed=5)
    grown = [*history, AIMessage("answer " * 60), HumanMessage("more?")]
    for thread in ("t1", "t2", "t3"):
        selector.invoke(history, config={"configurable": {"thread_id": thread}})
    assert len(selector._states) == 2
    first = select_messages(history, max_tokens=BUDGET, cache_stable=True)
    kept = selector.invoke(grown, config={"configurable": {"thread_id": "t3"}})
    evicted = selector.invoke(grown, config={"configurable": {"thread_id": "t1"}})
    assert kept == select_messages(grown, max_tokens=BUDGET, cache_stable=True, previous=first)
    assert evicted == select_messages(grown, max_tokens=BUDGET, cache_stable=True)
    assert kept != evicted  # the remembered cut holds; the evicted thread starts fresh
    with pytest.raises(ConfigurationError, match="max_conversations"):
        CupelMessageSelector(max_tokens=BUDGET, max_conversations=0)


def test_concurrent_threads_each_stay_append_only() -> None:
    selector = CupelMessageSelector(max_tokens=BUDGET, cache_stable=True)
    failures: list[str] = []

    def worker(seed: int) -> None:
        previous: list[BaseMessage] | None = None
        cuts = 0
        prefixes = _prefixes(_chat(30, seed=seed))
        for prefix in prefixes:
            window = selector.invoke(prefix, config={"configurable": {"thread_id": seed}})
            if previous is not None and window[: len(previous)] != previous:
                cuts += 1
            previous = window
        if cuts > len(prefixes) // 3:
            failures.append(f"thread {seed}: {cuts} cuts in {len(prefixes)} calls")

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_session_id_is_a_key_too() -> None:
    assert conversation_key({"configurable": {"session_id": "s"}}) == ("session_id", "s")
    assert conversation_key({"configurable": {"thread_id": "t", "session_id": "s"}}) == (
        "thread_id",
        "t",
    )
    assert conversation_key({"configurable": {}}) is None


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


def test_middleware_in_an_agent_keeps_each_threads_window_stable() -> None:
    """A real agent (create_agent, a checkpointer, two threads): each model call's window
    is reported on the custom stream with its stable prefix; between cuts it appends."""
    replies = iter([AIMessage("ok " * 30) for _ in range(200)])
    model = GenericFakeChatModel(messages=replies)
    middleware = CupelContextMiddleware(max_tokens=300, cache_stable=True, cache_breakpoint=True)
    agent = create_agent(
        model, system_prompt="Be brief.", middleware=[middleware], checkpointer=InMemorySaver()
    )
    reports: dict[str, list[dict[str, Any]]] = {"x": [], "y": []}
    for turn in range(14):
        for thread in ("x", "y"):
            config = {"configurable": {"thread_id": thread}}
            question = HumanMessage(f"{thread} question {turn} " + "w " * (turn % 5 * 10 + 5))
            for chunk in agent.stream(
                {"messages": [question]},
                config,  # type: ignore[arg-type]
                stream_mode="custom",
            ):
                if chunk.get("type") == "cupel_selection":
                    reports[thread].append(chunk)
    for thread, chunks in reports.items():
        assert len(chunks) == 14
        assert all(c["included_tokens"] + REPLY_TOKENS <= 300 for c in chunks)
        kept = [not c["cut_moved"] for c in chunks[1:]]
        assert sum(kept) >= 7, (thread, [c["stable_prefix"] for c in chunks])
        for before, after in pairwise(chunks):
            if not after["cut_moved"]:  # the whole previous window leads this one
                assert after["stable_prefix"] == before["included"]


def test_middleware_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="cache_stable"):
        CupelContextMiddleware(max_tokens=100, cache_stable=2)
    with pytest.raises(ConfigurationError, match="cache_breakpoint"):
        CupelContextMiddleware(max_tokens=100, cache_breakpoint="yes")
    middleware = CupelContextMiddleware(max_tokens=100)
    with pytest.raises(ConfigurationError, match="cache_stable"):
        middleware.cache_stable = -1
    assert middleware.cache_stable is False
