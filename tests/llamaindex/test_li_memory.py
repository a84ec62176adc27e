"""CupelChatMemory: BaseMemory behaviour, chat engines, workflow agents, instrumentation."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from li_testkit import SelectionRecorder, check_window, counting_split, recording, words
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import (
    MockFunctionCallingLLMWithChatMemoryOfLastCall,
    MockLLMWithChatMemoryOfLastCall,
)
from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.tools import FunctionTool
from workflows.context.serializers import JsonSerializer

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    CupelError,
    GreedySlice,
    OverflowEvent,
    PinnedBudgetError,
    Pipeline,
    RecencyScorer,
    ScoredItem,
    SelectionReport,
)
from cupel.policy import PolicyError
from cupel_llamaindex import CupelChatMemory, CupelSelectionEvent


@pytest.fixture
def recorder() -> Iterator[SelectionRecorder]:
    yield from recording()


@contextmanager
def _listening(recorder: SelectionRecorder) -> Iterator[SelectionRecorder]:
    root = get_dispatcher()
    root.add_event_handler(recorder)
    try:
        yield recorder
    finally:
        root.event_handlers = [h for h in root.event_handlers if h is not recorder]


def _turns(count: int, length: int = 4) -> list[ChatMessage]:
    out = []
    for t in range(count):
        out.append(ChatMessage(role="user", content=" ".join(f"u{t}w{j}" for j in range(length))))
        out.append(
            ChatMessage(role="assistant", content=" ".join(f"a{t}w{j}" for j in range(length)))
        )
    return out


def _call(call_id: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id=call_id, tool_name="lookup", tool_kwargs={})],
    )


def _result(call_id: str, text: str = "tool says hi") -> ChatMessage:
    return ChatMessage(role="tool", content=text, additional_kwargs={"tool_call_id": call_id})


REPLY = 3
"""Tokens every request reserves for the reply (``cupel.counting.REPLY_TOKENS``): a
window holds at most ``token_limit - REPLY``."""


def _memory(history: list[ChatMessage], token_limit: int, **kwargs: Any) -> CupelChatMemory:
    return CupelChatMemory.from_defaults(
        chat_history=history, token_limit=token_limit, message_token_counter=words, **kwargs
    )


# -- BaseMemory behaviour ----------------------------------------------------------------
def test_it_is_a_llamaindex_memory_with_a_tokenizer_fn_attribute() -> None:
    memory = CupelChatMemory.from_defaults()
    assert isinstance(memory, BaseMemory)
    assert memory.token_limit == 3000
    assert len(memory.tokenizer_fn("hello world")) == 2  # LlamaIndex's offline tokenizer


def test_from_defaults_takes_the_token_limit_from_the_llm_like_chat_memory_buffer() -> None:
    llm = MockLLM()
    ours = CupelChatMemory.from_defaults(llm=llm)
    theirs = ChatMemoryBuffer.from_defaults(llm=llm)
    assert ours.token_limit == theirs.token_limit == int(llm.metadata.context_window * 0.75)


def test_from_defaults_rejects_unknown_keywords() -> None:
    with pytest.raises(ConfigurationError, match=r"unexpected keyword arguments \['limit'\]"):
        CupelChatMemory.from_defaults(limit=10)


def test_get_returns_recent_turns_within_the_limit_as_the_same_objects() -> None:
    history = _turns(10)  # 20 messages of 5 tokens each
    memory = _memory(history, token_limit=22 + REPLY)

    window = memory.get()

    assert window == history[-4:]
    assert all(a is b for a, b in zip(window, history[-4:], strict=True))
    check_window(window, history, budget=22, count=words)
    assert _memory(history, token_limit=22).get() == history[-2:]  # 20 + the reply's 3 > 22


def test_get_leaves_the_chat_store_untouched() -> None:
    history = [*_turns(10), _call("c"), _result("c")]
    store = SimpleChatStore()
    memory = CupelChatMemory.from_defaults(
        chat_history=history, chat_store=store, token_limit=12, message_token_counter=words
    )
    stored = store.store["chat_history"]
    snapshot = [m.model_dump() for m in stored]

    memory.get()
    memory.get(initial_token_count=3)

    assert store.store["chat_history"] is stored
    assert len(stored) == len(history) and all(a is b for a, b in zip(stored, history, strict=True))
    assert [m.model_dump() for m in stored] == snapshot


def test_system_messages_are_kept_and_the_latest_user_message_too() -> None:
    system = ChatMessage(role="system", content="be kind")
    history = [system, *_turns(6)]
    history.append(ChatMessage(role="user", content="a very long final question " * 3))
    memory = _memory(history, token_limit=30)

    window = memory.get()

    assert window[0] is system and window[-1] is history[-1]
    check_window(window, history, budget=30, count=words)


def test_chat_memory_buffer_drops_the_system_message_where_cupel_keeps_it() -> None:
    system = ChatMessage(role="system", content="rules " * 20)
    history = [system, *_turns(5)]
    ours = _memory(history, token_limit=40).get()
    theirs = ChatMemoryBuffer.from_defaults(
        chat_history=history, token_limit=40, tokenizer_fn=str.split
    ).get()
    assert ours[0] is system
    assert system not in theirs


def test_pinned_messages_over_the_limit_raise_a_clear_error() -> None:
    history = [ChatMessage(role="system", content="x " * 30), ChatMessage(role="user", content="q")]
    memory = _memory(history, token_limit=20)
    with pytest.raises(PinnedBudgetError) as raised:
        memory.get()
    assert (raised.value.pinned_tokens, raised.value.available_tokens) == (33, 20 - REPLY)
    assert str(raised.value) == (
        "The messages that are always kept need 33 tokens (system messages: 31, the latest "
        "user message: 2), but the budget allows 17 (token_limit less initial_token_count, the "
        "reply's 3 tokens, headroom and agent_reserve); raise the budget, shorten them, pass "
        "pin_system=False or pass pin_last_user=False"
    )


def test_initial_token_count_shrinks_the_budget() -> None:
    history = _turns(10)
    memory = _memory(history, token_limit=22 + REPLY)
    assert memory.get(initial_token_count=10) == history[-2:]
    check_window(memory.get(initial_token_count=10), history, budget=12, count=words)


@pytest.mark.parametrize("bad", [-1, 23, 1.5, "3", True])
def test_initial_token_count_outside_the_limit_is_rejected(bad: object) -> None:
    memory = _memory(_turns(2), token_limit=22)
    with pytest.raises(ConfigurationError, match="initial_token_count must be an int between 0"):
        memory.get(initial_token_count=bad)  # type: ignore[arg-type]


def test_tool_call_groups_are_kept_whole_and_never_lead() -> None:
    history = [
        ChatMessage(role="user", content="look it up"),
        _call("c1"),
        _result("c1", "first result " * 5),
        _call("c2"),
        _result("c2", "second result"),
        ChatMessage(role="assistant", content="here it is"),
        ChatMessage(role="user", content="thanks"),
    ]
    for limit in range(REPLY + 1, 40):
        memory = _memory(history, token_limit=limit)
        try:
            window = memory.get()
        except PinnedBudgetError:
            assert limit < 2 + REPLY  # "thanks" (2) and the reply (3)
            continue
        check_window(window, history, budget=limit - REPLY, count=words)


def test_chat_memory_buffer_can_return_a_lone_tool_result_where_cupel_cannot() -> None:
    # An agent mid-task: the user's question, a tool call, a big tool result.
    history = [
        ChatMessage(role="user", content="what is in the report?"),
        _call("c1"),
        _result("c1", "report " * 40),
    ]
    theirs = ChatMemoryBuffer.from_defaults(
        chat_history=history, token_limit=45, tokenizer_fn=str.split
    ).get()
    ours = _memory(history, token_limit=45).get()

    assert theirs == [history[2]]  # a lone tool result, the task and the call dropped
    assert ours == [history[0]]  # the task kept; the call and its result go together
    check_window(ours, history, budget=45, count=words)


def test_start_on_user_drops_leading_assistant_units_and_reports_them() -> None:
    history = [
        ChatMessage(role="assistant", content="Hello! How can I help?"),
        ChatMessage(role="user", content="next"),
    ]
    strict = _memory(history, token_limit=10 + REPLY)
    assert strict.get() == [history[1]]
    report = strict.last_report
    assert report is not None
    filtered = report.excluded_by("Filtered")
    assert [e.reason.filter_name for e in filtered] == ["start_on"]  # type: ignore[attr-defined]
    assert filtered[0].item.content.startswith("[0] assistant")

    relaxed = _memory(history, token_limit=10 + REPLY, start_on_user=False)
    assert relaxed.get() == history


def test_an_earlier_turn_is_kept_whole_or_not_at_all() -> None:
    history = [
        ChatMessage(role="user", content="long question " * 10),
        ChatMessage(role="assistant", content="short"),
        ChatMessage(role="user", content="next"),
    ]
    for start_on_user in (True, False):
        memory = _memory(history, token_limit=10, start_on_user=start_on_user)
        assert memory.get() == [history[2]]  # never the answer without its question
        report = memory.last_report
        assert report is not None
        assert {e.reason.name for e in report.excluded} == {"OutsideWindow"}
    assert _memory(history, token_limit=100).get() == history


def test_leading_orphan_tool_results_are_never_returned_and_are_reported() -> None:
    history = [_result("gone"), *_turns(2)]
    memory = _memory(history, token_limit=100, start_on_user=False)
    assert memory.get() == history[1:]
    report = memory.last_report
    assert report is not None
    (orphan,) = report.excluded_by("InvalidToolCall")
    assert orphan.reason.problem == "unknown_result"  # type: ignore[attr-defined]
    assert report.total_candidates == 5


def test_each_message_is_counted_once_per_get() -> None:
    calls, tokenizer = counting_split()

    history = _turns(50)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=40, tokenizer_fn=tokenizer
    )
    memory.get()
    assert len(calls) == len(history)


def test_a_growing_conversation_is_counted_once_per_message_across_gets() -> None:
    calls, tokenizer = counting_split()

    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(25), token_limit=40, tokenizer_fn=tokenizer
    )
    memory.get()
    memory.get()
    assert len(calls) == 50
    memory.put_messages(
        [ChatMessage(role="user", content="new"), ChatMessage(role="assistant", content="turn")]
    )
    memory.get()
    assert len(calls) == 52
    memory.put_messages(_turns(1))  # texts counted before are not counted again
    memory.get()
    assert len(calls) == 52


def test_a_message_edited_in_place_is_recounted() -> None:
    history = _turns(3)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=100, tokenizer_fn=str.split
    )
    assert memory.get() == history
    history[1].blocks[0].text = "word " * 200  # type: ignore[union-attr]
    window = memory.get()
    assert history[1] not in window and window[-1] is history[-1]
    report = memory.last_report
    assert report is not None
    assert max(e.item.tokens for e in report.excluded) == 3 + 200  # 3 per message


def test_changing_the_tokenizer_recounts_everything() -> None:
    history = _turns(3)
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=100, tokenizer_fn=str.split
    )
    assert memory.get() == history
    memory.tokenizer_fn = lambda text: text.split() * 10
    assert memory.get() == history[-2:]


def test_policy_is_configurable_and_errors_name_the_field() -> None:
    history = _turns(5)
    pipeline = Pipeline(RecencyScorer(), GreedySlice())
    with_pipeline = _memory(history, token_limit=22 + REPLY, pipeline=pipeline)
    assert with_pipeline.get() == history[-4:]
    assert _memory(history, token_limit=22 + REPLY, policy="long_running").get() == history[-4:]
    with pytest.raises(PolicyError, match=r"CupelChatMemory\.policy: unknown preset"):
        _memory(history, token_limit=22, policy="nope")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"token_limit": 0},
            r"CupelChatMemory.token_limit: must be an int from 1 to 9,007,199,254,740,992, got 0",
        ),
        (
            {"token_limit": 10, "tokenizer_fn": "split"},
            r"^CupelChatMemory.tokenizer_fn: unknown counter name 'split'; pass 'approximate', "
            r"a tiktoken Encoding, a HuggingFace tokenizer, or a callable",
        ),
        (
            {"token_limit": 10, "tokenizer_fn": 3},
            r"^CupelChatMemory.tokenizer_fn must be 'approximate', .*; got int 3$",
        ),
        (
            {"token_limit": 10, "image_tokens": "gemini"},
            r"^CupelChatMemory.image_tokens must be 'max', 'openai', 'anthropic', an int >= 0 or "
            r"a callable \(width, height, detail\), got the unknown rule 'gemini'$",
        ),
        ({"token_limit": 10, "image_tokens": -5}, r"image_tokens must be .*negative int -5"),
        ({"token_limit": 10, "image_tokens": True}, r"image_tokens must be .*the bool True"),
        (
            {"token_limit": 10, "headroom": 1.0},
            r"^CupelChatMemory.headroom must be a number with 0 <= headroom < 1 .*got 1.0$",
        ),
        ({"token_limit": 10, "headroom": "10%"}, r"headroom must be a number .*got '10%'"),
        ({"token_limit": 10, "headroom": -0.1}, r"headroom must be a number .*got -0.1"),
        (
            {"token_limit": 10, "agent_reserve": -1},
            r"^CupelChatMemory.agent_reserve: must be an int >= 0, got -1$",
        ),
        ({"token_limit": 10, "agent_reserve": 2.5}, r"agent_reserve: must be an int >= 0"),
        (
            {"token_limit": 100, "agent_reserve": 97},
            r"^CupelChatMemory.agent_reserve: token_limit \(100\) must exceed what is reserved "
            r"besides the history: the reply's 3 tokens \+ agent_reserve \(97\) \+ headroom "
            r"\(0 of token_limit\) = 100; raise token_limit or lower agent_reserve$",
        ),
        (
            {"token_limit": 100, "headroom": 0.97},
            r"^CupelChatMemory.headroom: token_limit \(100\) must exceed .* = 100; raise "
            r"token_limit or lower headroom$",
        ),
        (
            {"token_limit": 3},
            r"^CupelChatMemory.token_limit: token_limit \(3\) must exceed what is reserved "
            r"besides the history: the reply's 3 tokens .* = 3; raise token_limit",
        ),
        ({"token_limit": 10, "message_token_counter": 3}, r"message_token_counter: must be"),
        ({"token_limit": 10, "pin_system": "yes"}, r"pin_system: must be a bool, got 'yes'"),
        ({"token_limit": 10, "policy": 3}, r"CupelChatMemory.policy"),
    ],
)
def test_bad_configuration_fails_at_construction(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        CupelChatMemory(**kwargs)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: CupelChatMemory(), r"^CupelChatMemory.token_limit: is required$"),
        (
            lambda: CupelChatMemory(token_limit=10, token_limt=5),
            r"CupelChatMemory: unknown field 'token_limt'; "
            r"allowed: chat_store, chat_store_key, image_tokens, headroom, agent_reserve, "
            r".*token_limit",
        ),
        (
            lambda: CupelChatMemory(token_limit=10, policy=3),
            r"CupelChatMemory.policy: must be a Policy or a preset name "
            r"\(chat, code_review, rag, .*\), got int 3",
        ),
        (
            lambda: CupelChatMemory.from_defaults(llm="gpt-4o"),  # type: ignore[arg-type]
            r"from_defaults: llm must be a LlamaIndex LLM whose metadata.context_window is a "
            r"positive int, got str 'gpt-4o'",
        ),
        (
            lambda: CupelChatMemory.from_defaults(chat_history="hello"),  # type: ignore[arg-type]
            r"CupelChatMemory.chat_history: must be a list of LlamaIndex ChatMessages, "
            r"got str 'hello'",
        ),
        (
            lambda: CupelChatMemory.from_defaults(chat_history=[ChatMessage(content="a"), "b"]),  # type: ignore[list-item]
            r"CupelChatMemory.chat_history\[1\]: must be a LlamaIndex ChatMessage, got str 'b'",
        ),
        (
            lambda: CupelChatMemory.from_defaults(chat_store={}),  # type: ignore[arg-type]
            r"chat_store must be a LlamaIndex BaseChatStore, got dict \{\}",
        ),
        (
            lambda: CupelChatMemory.from_defaults(token_limit=-5),
            r"CupelChatMemory.token_limit: must be an int from 1 to 9,007,199,254,740,992, got -5",
        ),
    ],
)
def test_bad_input_is_named_with_its_value_and_what_is_allowed(build: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        build()


def test_from_defaults_writes_nothing_to_the_store_when_the_configuration_is_bad() -> None:
    store = SimpleChatStore()
    with pytest.raises(ConfigurationError, match="token_limit"):
        CupelChatMemory.from_defaults(chat_history=_turns(1), chat_store=store, token_limit=0)
    assert store.store == {}


@pytest.mark.parametrize(
    ("method", "argument", "message"),
    [
        ("put", "hi", r"CupelChatMemory.put: message must be a LlamaIndex ChatMessage, got str"),
        ("set", ["hi"], r"CupelChatMemory.set\[0\]: must be a LlamaIndex ChatMessage"),
        ("put_messages", "hi", r"CupelChatMemory.put_messages: must be a list of LlamaIndex"),
    ],
)
def test_non_messages_are_refused_before_they_reach_the_store(
    method: str, argument: object, message: str
) -> None:
    first = ChatMessage(role="user", content="kept")
    memory = CupelChatMemory.from_defaults(chat_history=[first], token_limit=10)
    with pytest.raises(ConfigurationError, match=message):
        getattr(memory, method)(argument)
    with pytest.raises(ConfigurationError, match=r"put_messages\[1\]"):
        memory.put_messages([ChatMessage(role="user", content="ok"), 7])  # type: ignore[list-item]
    assert memory.get_all() == [first]


def test_async_writes_refuse_non_messages_too() -> None:
    memory = CupelChatMemory.from_defaults(token_limit=10)

    async def scenario() -> None:
        for call in (
            memory.aput("x"),  # type: ignore[arg-type]
            memory.aset([1]),  # type: ignore[list-item]
            memory.aput_messages([None]),  # type: ignore[list-item]
        ):
            with pytest.raises(ConfigurationError, match="must be a LlamaIndex ChatMessage"):
                await call

    asyncio.run(scenario())
    assert memory.get_all() == []


def test_a_tokenizer_that_returns_neither_a_count_nor_tokens_is_explained() -> None:
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(2), token_limit=10, tokenizer_fn=lambda text: text.upper()
    )
    with pytest.raises(
        ConfigurationError,
        match=r"^tokenizer_fn returned str 'U0W0 U0W1 U0W2 U0W3' for a text; it must return a "
        r"non-negative int or a list of tokens$",
    ):
        memory.get()


def test_put_set_reset_and_get_all_use_the_chat_store() -> None:
    memory = CupelChatMemory.from_defaults(token_limit=100, message_token_counter=words)
    first, second = _turns(1)
    memory.put(first)
    memory.put_messages([second])
    assert memory.get_all() == [first, second]
    memory.set([second])
    assert memory.get_all() == [second]
    memory.reset()
    assert memory.get_all() == [] and memory.get() == []


def test_the_lists_given_to_from_defaults_and_set_are_never_appended_to() -> None:
    history = _turns(2)
    memory = CupelChatMemory.from_defaults(chat_history=history, token_limit=100)
    memory.put(ChatMessage(role="user", content="more"))
    replacement = _turns(1)
    memory.set(replacement)
    memory.put(ChatMessage(role="user", content="again"))
    assert len(history) == 4 and len(replacement) == 2
    assert len(memory.get_all()) == 3


def test_async_variants_behave_like_the_sync_ones() -> None:
    history = _turns(6)

    async def scenario() -> tuple[list[ChatMessage], list[ChatMessage], list[ChatMessage]]:
        memory = CupelChatMemory.from_defaults(token_limit=12 + REPLY, message_token_counter=words)
        await memory.aset(history[:2])
        await memory.aput(history[2])
        await memory.aput_messages(history[3:])
        window = await memory.aget()
        everything = await memory.aget_all()
        await memory.areset()
        return window, everything, await memory.aget_all()

    window, everything, after_reset = asyncio.run(scenario())
    assert window == history[-2:] and all(a is b for a, b in zip(window, history[-2:], strict=True))
    assert everything == history and after_reset == []


# -- serialization ------------------------------------------------------------------------
def test_string_round_trip_keeps_configuration_and_history() -> None:
    history = [ChatMessage(role="system", content="rules"), *_turns(3), _call("c"), _result("c")]
    memory = CupelChatMemory.from_defaults(
        chat_history=history,
        token_limit=50,
        policy="tool_use",
        pin_last_user=False,
        start_on_user=False,
        tokenizer_fn=str.split,
    )
    text = memory.to_string()
    with pytest.raises(ConfigurationError, match="custom tokenizer_fn, which is not serialized"):
        CupelChatMemory.from_string(text)  # never silently back to the default tokenizer
    clone = CupelChatMemory.from_string(text, tokenizer_fn=str.split)
    assert clone.to_string() == text
    assert (clone.policy, clone.pin_last_user, clone.start_on_user) == ("tool_use", False, False)
    assert [m.model_dump() for m in clone.get_all()] == [m.model_dump() for m in history]
    assert [m.model_dump() for m in clone.get()] == [m.model_dump() for m in memory.get()]


def test_from_dict_takes_overrides_for_unserialized_fields() -> None:
    memory = CupelChatMemory.from_defaults(token_limit=50)
    pipeline = Pipeline(RecencyScorer())
    data = json.loads(memory.to_string())
    clone = CupelChatMemory.from_dict(data, pipeline=pipeline, tokenizer_fn=str.split)
    assert clone.pipeline is pipeline and clone.tokenizer_fn is str.split


def test_pickle_round_trips_and_to_dict_refuses_so_a_workflow_context_keeps_the_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = [*_turns(2), _call("c"), _result("c")]
    memory = CupelChatMemory.from_defaults(
        chat_history=history, token_limit=30, policy="tool_use", tokenizer_fn=str.split
    )
    memory.get()
    with caplog.at_level("WARNING"):
        clone = pickle.loads(pickle.dumps(memory))
    assert not caplog.records  # nothing "unpickleable" dropped with a warning
    assert isinstance(clone, CupelChatMemory) and clone.policy == "tool_use"
    assert clone.tokenizer_fn is str.split
    assert [m.model_dump() for m in clone.get_all()] == [m.model_dump() for m in history]
    assert [m.model_dump() for m in clone.get()] == [m.model_dump() for m in memory.get()]
    with pytest.raises(ConfigurationError, match="live memory"):
        memory.to_dict()
    with pytest.raises(ValueError, match="Failed to serialize"):
        JsonSerializer().serialize(memory)  # the Context skips it and keeps the live one


# -- chat engines -------------------------------------------------------------------------
def test_simple_chat_engine_sends_prefix_plus_a_window_that_fits_after_the_prefix() -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None, is_chat_model=True)
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(20), token_limit=40, tokenizer_fn=str.split
    )
    engine = SimpleChatEngine.from_defaults(
        llm=llm, memory=memory, system_prompt="You answer in one word only please"
    )

    engine.chat("and now?")

    sent = llm.last_chat_messages
    assert sent is not None
    assert sent[0].role == MessageRole.SYSTEM
    window = list(sent[1:])
    history = memory.get_all()[:-1]  # the engine stored its answer afterwards
    check_window(window, history, budget=40 - 7, count=lambda m: len(str(m.content).split()))
    assert window[-1].content == "and now?"
    assert len(memory.get_all()) == 42


def test_simple_chat_engine_accepts_the_class_through_memory_cls() -> None:
    llm = MockLLM()
    engine = SimpleChatEngine.from_defaults(llm=llm, memory_cls=CupelChatMemory)
    engine.chat("hello")
    assert isinstance(engine._memory, CupelChatMemory)
    assert [m.role for m in engine.chat_history] == [MessageRole.USER, MessageRole.ASSISTANT]


def test_async_chat_in_simple_chat_engine() -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None, is_chat_model=True)
    memory = CupelChatMemory.from_defaults(token_limit=30, tokenizer_fn=str.split)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    asyncio.run(engine.achat("first"))
    asyncio.run(engine.achat("second"))
    sent = llm.last_chat_messages
    assert sent is not None and [m.content for m in sent][-1] == "second"
    assert len(memory.get_all()) == 4


# -- workflow agents --------------------------------------------------------------------
# Building a workflow agent triggers pydantic deprecation warnings inside llama-index-workflows.
third_party_warnings = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)


def _lookup(q: str = "default") -> str:
    """Look something up."""
    return f"found {q}"


@third_party_warnings
def test_function_agent_runs_with_the_memory_and_sends_valid_tool_groups() -> None:
    history = []
    for t in range(8):
        history.append(ChatMessage(role="user", content=f"task {t} " + "w " * 6))
        history.append(_call(f"c{t}"))
        history.append(_result(f"c{t}", f"result {t} " + "r " * 6))
        history.append(ChatMessage(role="assistant", content=f"done {t}"))

    def respond(messages: list[ChatMessage], **kwargs: object) -> ChatMessage:
        if messages[-1].role == MessageRole.USER:  # a new task: call the tool
            return _call("new-call")
        return ChatMessage(role="assistant", content="all done")

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=respond)
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(_lookup)], llm=llm, system_prompt="Be terse."
    )
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=40, message_token_counter=words
    )

    async def run() -> object:
        return await agent.run(user_msg="new task", memory=memory)

    answer = asyncio.run(run())

    assert str(answer) == "all done"
    sent = llm.last_chat_messages  # the second LLM call: window + this run's tool group
    assert sent is not None and sent[0].content == "Be terse."
    stored = memory.get_all()
    window = [m for m in sent[1:] if any(m is s for s in stored[: len(history) + 1])]
    check_window(window, stored, budget=40, count=words)
    assert window[-1].content == "new task"
    assert [m.role for m in sent[1 + len(window) :]] == [MessageRole.ASSISTANT, MessageRole.TOOL]
    # The run appended its own complete tool group and answer to the store.
    assert [m.role for m in stored[len(history) :]] == [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
    ]


@third_party_warnings
def test_react_agent_runs_with_the_memory() -> None:
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(
        response_generator=lambda messages, **kw: ChatMessage(
            role="assistant", content="Thought: I can answer.\nAnswer: forty-two"
        )
    )
    agent = ReActAgent(tools=[FunctionTool.from_defaults(_lookup)], llm=llm)
    memory = CupelChatMemory.from_defaults(
        chat_history=_turns(30), token_limit=60, message_token_counter=words
    )

    async def run() -> object:
        return await agent.run(user_msg="what is the answer?", memory=memory)

    answer = asyncio.run(run())

    assert "forty-two" in str(answer)
    sent = llm.last_chat_messages
    assert sent is not None
    # ReAct folds the selected history into its prompt: the latest question is there, the
    # oldest turns are not.
    assert sent[-1].content == "what is the answer?"
    assert not any("u0w0" in str(m.content) for m in sent)
    assert memory.get_all()[-1].role == MessageRole.ASSISTANT


# -- instrumentation ------------------------------------------------------------------------
def test_get_dispatches_a_selection_event(recorder: SelectionRecorder) -> None:
    history = _turns(10)
    memory = _memory(history, token_limit=22 + REPLY)

    memory.get(input="hello", initial_token_count=2)

    (event,) = recorder.events
    assert isinstance(event, CupelSelectionEvent)
    assert event.component == "CupelChatMemory"
    assert event.report is memory.last_report
    # the budget used: token_limit less initial_token_count and the reply's 3
    assert (event.candidates, event.selected, event.max_tokens) == (20, 4, 20)
    assert event.selected_tokens == 20 and event.query == "hello"
    assert event.span_id is not None and "CupelChatMemory._select" in event.span_id


def _decisions(report: SelectionReport) -> tuple[object, ...]:
    """A report without its timings: every decision, score and total."""
    return (
        [(e.item.to_dict(), e.score, e.reason) for e in report.included],
        [(e.item.to_dict(), e.score, e.reason) for e in report.excluded],
        report.total_candidates,
        report.total_tokens_considered,
    )


def test_the_on_demand_report_equals_the_one_dispatched_to_a_listener() -> None:
    history = [
        _result("lost"),
        ChatMessage(role="system", content="rules"),
        *_turns(8),
        _call("c"),
        _result("c"),
        ChatMessage(role="assistant", content="long answer " * 6),
        ChatMessage(role="user", content="last"),
    ]
    quiet = _memory(history, token_limit=30)
    window = quiet.get()
    on_demand = quiet.last_report  # built now, from the same pipeline, items and budget
    assert on_demand is not None and quiet.last_report is on_demand  # built once

    recorder = SelectionRecorder()
    with _listening(recorder):
        loud = _memory(history, token_limit=30)
        assert loud.get() == window
    (event,) = recorder.events
    assert event.report is loud.last_report
    assert _decisions(on_demand) == _decisions(event.report)
    assert {e.reason.name for e in on_demand.excluded} == {"OutsideWindow", "InvalidToolCall"}


def test_without_a_listener_get_dispatches_nothing_and_reports_on_read() -> None:
    recorder = SelectionRecorder()
    memory = _memory(_turns(10), token_limit=22 + REPLY)
    memory.get()
    with _listening(recorder):
        report = memory.last_report  # built after the fact: no event for it
    assert recorder.events == []
    assert report is not None and report.included_tokens == 20


def test_a_pipeline_that_selects_differently_on_the_rerun_is_not_reported() -> None:
    class Fickle:
        """Prefers the first half of the history on odd runs, the second on even ones."""

        runs = 0

        def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
            if item is all_items[0]:
                Fickle.runs += 1
            position = all_items.index(item)
            first_half = position < len(all_items) // 2
            return 1.0 if first_half == (Fickle.runs % 2 == 1) else 0.0

    memory = _memory(_turns(6), token_limit=22, pipeline=Pipeline(Fickle(), GreedySlice()))
    memory.get()
    with pytest.raises(CupelError, match="selected a different window when run again"):
        _ = memory.last_report


def test_building_the_report_later_does_not_run_the_overflow_callback_again() -> None:
    class Everything:
        """A slicer that ignores the budget, so the window overflows its target."""

        def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
            return [entry.item for entry in scored]

    overflows: list[OverflowEvent] = []
    pipeline = Pipeline(
        RecencyScorer(), Everything(), overflow_strategy="proceed", on_overflow=overflows.append
    )
    memory = _memory(_turns(4), token_limit=22, pipeline=pipeline)
    assert len(memory.get()) == 8
    assert len(overflows) == 1
    report = memory.last_report
    assert report is not None and report.overflow is not None
    assert len(overflows) == 1
