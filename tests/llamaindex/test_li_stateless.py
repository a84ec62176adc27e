"""The memories' windows as a pure function of the stored history (issue 27).

Random put / edit / delete sequences, replayed under random call patterns — one memory,
two or three memories alternating on one store, a memory built per call, sync or async,
messages put one by one or in batches (so ``CupelMemory`` flushes at other moments) —
give the very same windows; ``CupelMemory``'s windows are those ``CupelChatMemory``
selects from the whole history, flushed or not (the replayed cut is the same over the
active messages as over the whole history). On the way: every window is valid and within
budget, the newest unit is kept whenever it fits, a window only grows between cuts, and
the report's ``stable_prefix`` / ``cut_moved`` describe the previous request truly.
1,000 conversations through one memory leave nothing behind in it; a real
``FunctionAgent`` served by two ``CupelMemory`` objects on one store sends the requests
one object gives.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import check_window, provider_problems
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import StaticMemoryBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.tools import FunctionTool

from cupel import PinnedBudgetError
from cupel_llamaindex import CupelChatMemory, CupelMemory, message_text, tool_call_ids
from cupel_llamaindex._reading import Counting, message_parts

pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)

REPLY = 3
SYSTEM_ROLES = (MessageRole.SYSTEM, MessageRole.DEVELOPER)


def _count(message: ChatMessage) -> int:
    """What the memories count with ``tokenizer_fn=str.split``: 3 per message and each
    text part (text, tool calls' names, arguments and ids, a result's call id) in words."""
    return 3 + sum(len(part.split()) for part in message_parts(message)[0])


# -- the operations -------------------------------------------------------------------------

_words = st.integers(0, 18)
_user = st.tuples(st.just("user"), _words)
_assistant = st.tuples(st.just("assistant"), _words)
_exchange = st.tuples(st.just("exchange"), _words, st.lists(_words, min_size=1, max_size=2))
_append = st.one_of(
    _user, _assistant, _exchange, _user, _assistant, _exchange,
    st.tuples(st.just("system"), st.integers(0, 3)),
)  # fmt: skip
_change = st.one_of(
    st.tuples(st.just("edit"), st.floats(0, 1), _words),
    st.tuples(st.just("delete"), st.floats(0, 1)),
)
_operations = st.lists(
    st.tuples(
        st.one_of(_append, _append, _append, _append, _append, _change),
        st.booleans(),  # then get()
    ),
    min_size=6,
    max_size=24,
)

Op = tuple[Any, ...]


def _messages(op: Op, number: int) -> list[ChatMessage]:
    """The messages an append operation puts (fresh objects, texts unique per operation)."""
    kind = op[0]
    if kind == "exchange":
        ids = [f"c{number}.{k}" for k in range(len(op[2]))]
        call = ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=i, tool_name="look", tool_kwargs={"q": "k " * op[1]})
                for i in ids
            ],
        )
        results = [
            ChatMessage(
                role="tool", content=f"r{number} " + "r " * n, additional_kwargs={"tool_call_id": i}
            )
            for i, n in zip(ids, op[2], strict=True)
        ]
        return [call, *results]
    return [ChatMessage(role=kind, content=f"{kind[0]}{number} " + "w " * op[1])]


def _changed(history: list[ChatMessage], op: Op, number: int) -> list[ChatMessage]:
    """The history after an edit (a message's text or call arguments rewritten) or a
    deletion (of one message: tool calls may be left unanswered). Never the first
    message (the system prompt)."""
    if len(history) < 2:
        return list(history)
    position = 1 + min(int(op[1] * (len(history) - 1)), len(history) - 2)
    out = list(history)
    if op[0] == "delete":
        del out[position]
        return out
    old = out[position]
    calls = [block for block in old.blocks if isinstance(block, ToolCallBlock)]
    if calls:
        new = ChatMessage(
            role=old.role,
            blocks=[
                ToolCallBlock(
                    tool_call_id=block.tool_call_id,
                    tool_name=block.tool_name,
                    tool_kwargs={"q": "e " * op[2]},
                )
                for block in calls
            ],
        )
    else:
        new = ChatMessage(
            role=old.role,
            content=f"e{number} " + "w " * op[2],
            additional_kwargs=dict(old.additional_kwargs),
        )
    out[position] = new
    return out


# -- the call patterns ------------------------------------------------------------------------


class World:
    """One way of serving the operations: ``make()`` builds a memory over the world's
    store; ``objects`` memories alternate (0: a new memory per call); ``batch`` puts the
    messages between two reads or changes with one ``put_messages``; ``run_async`` uses
    the async API throughout, in one event loop (else the sync API, each call running
    its own loop as it does in an application). ``whole``: the keyword arguments of
    ``get_all`` that read the whole stored history."""

    def __init__(
        self,
        make: Callable[[], Any],
        whole: dict[str, Any],
        *,
        objects: int = 1,
        batch: bool = False,
        run_async: bool = False,
    ) -> None:
        self.make = make
        self.whole = whole
        self.objects = [make() for _ in range(objects)]
        self.batch = batch
        self.run_async = run_async
        self.calls = 0

    def memory(self) -> Any:
        self.calls += 1
        if not self.objects:
            return self.make()
        return self.objects[self.calls % len(self.objects)]

    def play(self, operations: Sequence[tuple[Op, bool]]) -> list[Any]:
        """Serve a system prompt, then ``operations``. Each read's outcome: ``(window as
        (role, text), (stable_prefix, cut_moved), the stored history, the window's
        messages, the cut)`` or the error's name."""
        return asyncio.run(self._play(operations))

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        memory = self.memory()
        if self.run_async:
            return await getattr(memory, f"a{name}")(*args, **kwargs)
        # the sync API, called from a thread without an event loop, as an application does
        return await asyncio.to_thread(getattr(memory, name), *args, **kwargs)

    async def _play(self, operations: Sequence[tuple[Op, bool]]) -> list[Any]:
        outcomes: list[Any] = []
        pending: list[ChatMessage] = []
        await self._call("put", ChatMessage(role="system", content="Be brief."))

        async def put_pending() -> None:
            if pending:
                await self._call("put_messages", list(pending))
                pending.clear()

        for number, (op, then_get) in enumerate(operations):
            if op[0] in ("edit", "delete"):
                await put_pending()
                history = list(await self._call("get_all", **self.whole))
                await self._call("set", _changed(history, op, number))
            else:
                for message in _messages(op, number):
                    if self.batch:
                        pending.append(message)
                    else:
                        await self._call("put", message)
            if then_get or number == len(operations) - 1:
                await put_pending()
                memory = self.memory()
                try:
                    if self.run_async:
                        window = await memory.aget()
                    else:
                        window = await asyncio.to_thread(memory.get)
                except PinnedBudgetError as exc:
                    outcomes.append(type(exc).__name__)
                    continue
                stable = memory.last_stable
                outcomes.append(
                    (
                        [(m.role.value, message_text(m)) for m in window],
                        None if stable is None else (stable["stable_prefix"], stable["cut_moved"]),
                        list(await self._call("get_all", **self.whole)),  # a copy: a store's
                        window,  # own list grows
                        None if stable is None else stable["cut"],
                    )
                )
        return outcomes


def _chat_world(limit: int, cache_stable: bool | float, **pattern: Any) -> World:
    store = SimpleChatStore()

    def make() -> CupelChatMemory:
        return CupelChatMemory.from_defaults(
            token_limit=limit, tokenizer_fn=str.split, chat_store=store, cache_stable=cache_stable
        )

    return World(make, {}, **pattern)


def _sql_store() -> SQLAlchemyChatStore:
    return SQLAlchemyChatStore(
        table_name="messages", async_database_uri="sqlite+aiosqlite:///:memory:"
    )


def _memory_world(
    limit: int, cache_stable: bool | float, blocks: bool = False, **pattern: Any
) -> World:
    store = _sql_store()

    def make() -> CupelMemory:
        return CupelMemory(
            token_limit=limit,
            tokenizer_fn=str.split,
            sql_store=store,
            session_id="session",
            cache_stable=cache_stable,
            memory_blocks=(
                [StaticMemoryBlock(name="profile", static_content="likes tea", priority=0)]
                if blocks
                else []
            ),
        )

    return World(make, {"status": None}, **pattern)


_patterns = st.fixed_dictionaries(
    {
        "objects": st.sampled_from([0, 2, 3]),  # 0: a new memory per call
        "run_async": st.booleans(),
    }
)
_stable = st.sampled_from([True, True, 0.5, 0.8, False])


def _windows(outcomes: list[Any]) -> list[Any]:
    return [o if isinstance(o, str) else (o[0], o[1]) for o in outcomes]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    operations=_operations,
    limit=st.sampled_from([50, 80, 140]),
    cache_stable=_stable,
    pattern=_patterns,
)
def test_chat_memory_windows_are_the_same_under_every_call_pattern_and_keep_the_rules(
    operations: list[tuple[Op, bool]],
    limit: int,
    cache_stable: bool | float,
    pattern: dict[str, Any],
) -> None:
    one = _chat_world(limit, cache_stable).play(operations)
    other = _chat_world(limit, cache_stable, **pattern).play(operations)
    assert _windows(other) == _windows(one)
    if cache_stable is not False:
        _check_stable_rules(one, limit)


def _check_stable_rules(outcomes: list[Any], limit: int) -> None:
    """Every window valid and within budget; the newest unit kept whenever it fits; a
    window only grows between cuts; the report's stable fields true of the previous
    request (the history before the newest assistant message)."""
    previous: tuple[list[ChatMessage], list[ChatMessage], int] | None = None
    for outcome in outcomes:
        if isinstance(outcome, str):
            previous = None
            continue
        _, stable, history, window, cut = outcome
        check_window(window, history, budget=limit - REPLY, count=_count)
        valid = provider_problems(history) == []
        users = [i for i, m in enumerate(history) if m.role == MessageRole.USER]
        if valid and users:
            newest = _newest_unit(history)
            pinned = {id(m) for m in history if m.role in SYSTEM_ROLES} | {id(history[users[-1]])}
            pinned |= {id(m) for m in newest}
            need = sum(_count(m) for m in history if id(m) in pinned)
            if need + REPLY <= limit:
                kept = {id(m) for m in window}
                assert all(id(m) in kept for m in newest), "the newest unit fits but is dropped"
        if previous is not None and valid:
            before, shown, before_cut = previous
            appended = [id(m) for m in history[: len(before)]] == [id(m) for m in before]
            if appended:
                _check_appended(before, shown, before_cut, history, window, limit)
                assistants = [i for i, m in enumerate(history) if m.role == MessageRole.ASSISTANT]
                if assistants and assistants[-1] == len(before):  # the previous request
                    shared = 0
                    for a, b in zip(shown, window, strict=False):
                        if a is not b:
                            break
                        shared += 1
                    assert stable == (shared, shared < len(shown))
        previous = (history, window, cut)


def _newest_unit(history: list[ChatMessage]) -> list[ChatMessage]:
    """The newest message, or the tool call its results answer with all of them."""
    end = len(history) - 1
    start = end
    while start > 0 and history[start].role == MessageRole.TOOL:
        start -= 1
    return history[start:] if tool_call_ids(history[start])[1] else [history[end]]


def _check_appended(
    before: list[ChatMessage],
    shown: list[ChatMessage],
    cut: int,
    history: list[ChatMessage],
    window: list[ChatMessage],
    limit: int,
) -> None:
    """Between cuts a window only grows: when the previous window was the whole stretch
    of the history from its first non-system message on (no gap) and that stretch with
    what was appended since (from the start of the turn the cut was in) still fits, the
    new window starts with the previous one."""
    position = {id(m): i for i, m in enumerate(before)}
    stretch = [position[id(m)] for m in shown if m.role not in SYSTEM_ROLES]
    if not stretch:
        return
    everything = [i for i in range(stretch[0], len(before)) if before[i].role not in SYSTEM_ROLES]
    if stretch != everything:
        return  # a gap (after the pinned task, or a unit providers would reject)
    if before[stretch[0]].role != MessageRole.USER:
        return  # a window with no user message yet: start_on_user drops its head later
    base = min(stretch[0], cut)
    while base > 0 and history[base].role != MessageRole.USER:
        base -= 1
    need = sum(_count(m) for m in history[:base] if m.role in SYSTEM_ROLES)
    need += sum(_count(m) for m in history[base:])
    if need + REPLY <= limit:
        assert [id(m) for m in window[: len(shown)]] == [id(m) for m in shown], (
            "the window changed between cuts"
        )


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    operations=_operations,
    limit=st.sampled_from([50, 80, 140]),
    cache_stable=_stable,
    pattern=_patterns,
    batch=st.booleans(),
    blocks=st.booleans(),
)
def test_cupel_memory_windows_are_the_same_under_every_call_pattern_flushed_or_not(
    operations: list[tuple[Op, bool]],
    limit: int,
    cache_stable: bool | float,
    pattern: dict[str, Any],
    batch: bool,
    blocks: bool,
) -> None:
    """Without memory blocks the windows are ``CupelChatMemory``'s over the whole
    history (nothing flushed); with a block, one ``CupelMemory`` putting message by
    message is the reference."""
    reference = (
        _memory_world(limit, cache_stable, blocks=True)
        if blocks
        else _chat_world(limit, cache_stable)
    ).play(operations)
    other = _memory_world(limit, cache_stable, blocks=blocks, batch=batch, **pattern).play(
        operations
    )
    assert _windows(other) == _windows(reference)


# -- nothing per conversation -----------------------------------------------------------------


def _conversation(number: int) -> list[ChatMessage]:
    words = " ".join(f"w{number}.{k}" for k in range(30))
    return [
        ChatMessage(role="system", content=f"Conversation {number}: be brief."),
        *(
            ChatMessage(role=role, content=f"{role[0]}{number}{turn} {words}")
            for turn in "abcde"
            for role in ("user", "assistant")
        ),
    ]


def _private_sizes(memory: Any) -> dict[str, int]:
    """Each private attribute's size: its length when it has one (else 1), and the
    texts a counting remembers."""
    sizes = {}
    for name, value in (memory.__pydantic_private__ or {}).items():
        sizes[name] = len(value) if hasattr(value, "__len__") else 1
        counting = getattr(value, "counting", value)  # CupelChatMemory's, in what it built
        if isinstance(counting, Counting):
            sizes[f"{name}.counts"] = len(counting.known)
    return sizes


def _empty_token_caches(memory: Any) -> None:
    """Empty the texts the memory's counting remembers (bounded, checked apart: up to
    1,000 texts of recent conversations, whatever they are) so that it does not hide in
    the traced memory what else might grow."""
    for value in (memory.__pydantic_private__ or {}).values():
        counting = getattr(value, "counting", value)
        if isinstance(counting, Counting):
            counting.known.clear()


def _check_nothing_grows(
    memory: Any, serve: Callable[[int], None], *, total: int = 1000, traced: int = 1000
) -> None:
    """Serve ``total`` conversations through ``memory``; at checkpoints (after a
    collection) nothing grows with the conversations served: not the private attributes
    (the token cache is bounded: twice a history's texts plus 1,000; it is emptied at
    each checkpoint), not the objects the garbage collector tracks, not the memory Python
    allocated over the last ``traced`` conversations (tracemalloc; a history kept per
    conversation would hold several KB each)."""
    checkpoints = {total * k // 5 for k in range(1, 6)}
    checkpoints |= {total - traced + traced * k // 4 for k in range(1, 5)}
    sizes: list[dict[str, int]] = []
    objects: list[int] = []
    marks: list[int] = []
    try:
        for number in range(total):
            if number == total - traced:
                tracemalloc.start()
            serve(number)
            if number + 1 in checkpoints:
                sizes.append(_private_sizes(memory))
                _empty_token_caches(memory)
                gc.collect()
                objects.append(len(gc.get_objects()))
                if tracemalloc.is_tracing():
                    marks.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    for s in sizes:
        assert s.keys() == sizes[0].keys()
        for name, size in s.items():
            if name.endswith(".counts"):
                assert size <= 2 * 11 + 1000, (name, size)  # 11 messages a conversation
            else:
                assert size == sizes[0][name], (name, size)
    assert max(objects) - objects[0] < 3000, objects  # a kept history: 50+ objects each
    assert len(marks) >= 2 and max(marks) - marks[0] < 256 * 1024, marks


@pytest.mark.slow
def test_a_thousand_conversations_leave_nothing_behind_in_a_chat_memory() -> None:
    """One memory switching ``chat_store_key`` over 1,000 conversations (each deleted
    from the store once served, so that the store does not grow either)."""
    store = SimpleChatStore()
    memory = CupelChatMemory.from_defaults(
        token_limit=120, tokenizer_fn=str.split, chat_store=store, cache_stable=True
    )

    def serve(number: int) -> None:
        memory.chat_store_key = key = f"user-{number}"
        memory.put_messages(_conversation(number))
        window = memory.get()
        assert message_text(window[0]).startswith(f"Conversation {number}")
        store.delete_messages(key)

    _check_nothing_grows(memory, serve)
    assert store.get_keys() == []


@pytest.mark.slow
def test_a_thousand_sessions_leave_nothing_behind_in_a_cupel_memory() -> None:
    """One ``CupelMemory`` switching ``session_id`` over 1,000 sessions of one in-memory
    SQLite store (its rows live outside Python's allocator), each flushing its first
    turns and reading its system prompt back from the archive. Traced over the last 100
    (tracing slows the store's every call)."""
    memory = CupelMemory.from_defaults(
        token_limit=120, tokenizer_fn=str.split, cache_stable=True, session_id="s-0"
    )

    def serve(number: int) -> None:
        memory.session_id = f"s-{number}"
        memory.put_messages(_conversation(number))  # the flush
        if number % 10 == 9:  # and a read now and then (the store's calls are slow)
            window = memory.get()
            assert message_text(window[0]).startswith(f"Conversation {number}")

    _check_nothing_grows(memory, serve, traced=100)
    assert len(memory.get_all(status=MessageStatus.ARCHIVED)) > 1


# -- an agent served by two memory objects -------------------------------------------------


def _answer(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """The LLM's side: one tool round per task, then an answer sized by the task."""
    task = max(i for i, m in enumerate(messages) if m.role == MessageRole.USER)
    if not any(m.role == MessageRole.TOOL for m in messages[task + 1 :]):
        number = sum(m.role == MessageRole.USER for m in messages)
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(
                    tool_call_id=f"call-{number}-{len(messages)}",
                    tool_name="lookup",
                    tool_kwargs={"topic": message_text(messages[task])[:20]},
                )
            ],
        )
    return ChatMessage(role="assistant", content="It is so. " * (5 + len(messages) % 7))


def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: " + "fact " * (10 + len(topic) % 9)


def _agent_requests(memories: Callable[[int], CupelMemory], runs: int) -> list[list[str]]:
    requests: list[list[str]] = []

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        requests.append([f"{m.role.value}: {message_text(m)}" for m in messages])
        return _answer(messages)

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(lookup)],
        llm=MockFunctionCallingLLM(response_generator=respond),
        system_prompt="You answer from the archive.",
    )

    async def scenario() -> None:
        for run in range(runs):
            task = f"Task {run}: tell me about topic {run} " + "in detail " * (run % 4)
            await agent.run(user_msg=task, memory=memories(run))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.run(scenario())
    return requests


def test_a_function_agent_sends_the_same_requests_from_two_memories_on_one_store() -> None:
    def build(store: SQLAlchemyChatStore) -> CupelMemory:
        return CupelMemory(
            token_limit=260,
            tokenizer_fn=str.split,
            sql_store=store,
            session_id="agent",
            cache_stable=True,
        )

    one = build(_sql_store())
    alone = _agent_requests(lambda run: one, runs=12)
    shared = _sql_store()
    two = [build(shared), build(shared)]
    alternating = _agent_requests(lambda run: two[run % 2], runs=12)
    assert alternating == alone
    archived = asyncio.run(shared.get_messages("agent", status=None))
    active = asyncio.run(shared.get_messages("agent"))
    assert len(archived) > len(active)  # the memory flushed along the way
    assert len(alone) == 12 * 2


def test_a_batch_put_with_memory_blocks_flushes_only_what_no_window_shows() -> None:
    """Eight questions put at once (``put_messages``) on a memory with a block flush what
    eight ``put()`` calls flush: only messages no ``get()`` can show (the blocks may take
    less than their share, so a window may be wider than the flush budget)."""
    operations: list[tuple[Op, bool]] = [(("user", 0), False)] * 8
    one = _memory_world(50, False, blocks=True).play(operations)
    batched = _memory_world(50, False, blocks=True, batch=True, objects=0).play(operations)
    assert _windows(batched) == _windows(one)
    window = _windows(one)[0][0]
    assert [text for _, text in window[1:]] == [f"u{i} " for i in range(8)]
