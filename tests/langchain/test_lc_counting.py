"""How the LangChain components count a message: one model for every counter form.

Text by the counter; images by rule, never their base64; 3 tokens per message; tool
calls (valid and invalid) by name, JSON arguments and id; a result's call id; the
reply's 3 tokens and tool definitions reserved from the budget. Chunks are their
message types everywhere.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import zlib
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from llama_index.core.utils import get_tokenizer
from test_lc_properties import histories

from cupel import ConfigurationError
from cupel.counting import MessageCost, estimate_tokens
from cupel_langchain import (
    CupelMessageSelector,
    approximate_message_tokens,
    messages_to_items,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)
from cupel_langchain._messages import read_messages
from cupel_langchain._tokens import message_parts, resolve_message_counter

ENCODE = get_tokenizer()  # cl100k_base, shipped offline with llama-index-core


def cl100k(text: str) -> int:
    return len(ENCODE(text))


def png(width: int, height: int) -> str:
    """A data URL of a valid PNG header with the given size (the pixels are not needed)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    data = (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(ihdr))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
        + b"\x00" * 64
    )
    return "data:image/png;base64," + base64.b64encode(data).decode()


def tokens_of(message: object, **options: object) -> int:
    mapped = messages_to_items([message], **options)  # type: ignore[arg-type]
    return sum(item.tokens for item in mapped.items) + sum(
        item.tokens for item, _ in mapped.invalid
    )


# -- the model, per counter form ---------------------------------------------------------


def test_a_text_counter_gets_the_overhead_and_the_tool_calls() -> None:
    call = AIMessage(
        "Checking.", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call_1"}]
    )
    result = ToolMessage("Rain, 4 °C", tool_call_id="call_1")
    expected_call = (
        cl100k("Checking.") + cl100k("weather") + cl100k('{"city": "Oslo"}') + cl100k("call_1") + 3
    )
    expected_result = cl100k("Rain, 4 °C") + cl100k("call_1") + 3
    mapped = messages_to_items(
        [HumanMessage("Weather?"), call, result],
        token_counter=lambda text: len(ENCODE(text)),
        token_counter_input="text",
    )
    assert [item.tokens for item in mapped.items] == [
        cl100k("Weather?") + 3,
        expected_call + expected_result,
    ]


def test_invalid_tool_calls_are_counted_they_are_sent() -> None:
    args = '{"city": "Oslo", "unit": ' + "x" * 200
    message = AIMessage(
        "", invalid_tool_calls=[{"name": "weather", "args": args, "id": "c9", "error": "bad"}]
    )
    count = tokens_of(message, token_counter=tiktoken.get_encoding("cl100k_base"))
    assert count == cl100k("weather") + cl100k(args) + cl100k("c9") + 3


@pytest.mark.parametrize(
    "counter",
    [
        pytest.param(lambda text: len(ENCODE(text)), id="bare lambda"),
        pytest.param(ENCODE, id="LlamaIndex tokenizer_fn returning a list"),
        pytest.param("tiktoken", id="tiktoken Encoding"),
    ],
)
def test_every_text_counter_form_counts_the_same(counter: object) -> None:
    if counter == "tiktoken":
        get_tokenizer()  # points tiktoken at llama-index's offline cache
        counter = tiktoken.get_encoding("cl100k_base")
    history = [SystemMessage("Be brief."), HumanMessage("Wie lang ist der Nil? 尼罗河有多长？")]
    mapped = messages_to_items(history, token_counter=counter)
    assert [item.tokens for item in mapped.items] == [cl100k(m.text) + 3 for m in history]


def test_huggingface_tokenizers_are_text_counters() -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    for tokenizer in (raw, PreTrainedTokenizerFast(tokenizer_object=raw)):
        assert tokens_of(HumanMessage("hello big world"), token_counter=tokenizer) == 3 + 3


def test_a_chat_model_that_cannot_count_offline_is_refused_with_what_to_pass() -> None:
    # LangChain's default counter falls back to transformers' GPT-2 tokenizer, a download
    # (the test run is offline: tests/conftest.py)
    model = GenericFakeChatModel(messages=iter([]))
    with pytest.raises(ConfigurationError, match="token_counter='approximate'") as caught:
        select_messages([HumanMessage("hi")], max_tokens=100, token_counter=model)
    assert "GenericFakeChatModel.get_num_tokens_from_messages failed" in str(caught.value)


def test_a_counter_returning_nonsense_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigurationError, match="failed on a list of messages and on a text"):
        select_messages([HumanMessage("hi")], max_tokens=100, token_counter=lambda s: s.nope)
    with pytest.raises(ConfigurationError, match="unknown counter name"):
        select_messages([HumanMessage("hi")], max_tokens=100, token_counter="exact")
    with pytest.raises(ConfigurationError, match="token_counter"):
        select_messages([HumanMessage("hi")], max_tokens=100, token_counter=42)


# -- images and media ---------------------------------------------------------------------


def test_an_inline_image_is_priced_by_its_dimensions_never_as_text() -> None:
    url = png(1024, 1024)
    message = HumanMessage(
        content=[
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": url}},
        ]
    )
    by_rule = max(765, math.ceil(1024 * 1024 / 750))  # OpenAI tiles vs Anthropic's w·h/750
    text_count = tokens_of(message, token_counter=ENCODE)
    assert text_count == cl100k("What is this?") + by_rule + 3
    assert tokens_of(message, token_counter=ENCODE, image_tokens="openai") == (
        cl100k("What is this?") + 765 + 3
    )
    assert approximate_message_tokens(message) == estimate_tokens("What is this?") + by_rule + 3


def test_an_image_of_unknown_size_costs_1600() -> None:
    message = HumanMessage(
        content=[{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    )
    assert approximate_message_tokens(message) == 1600 + 3


def test_a_window_with_images_stays_within_the_bill() -> None:
    history = []
    for turn in range(6):
        history.append(
            HumanMessage(
                content=[
                    {"type": "text", "text": f"Photo {turn}?"},
                    {"type": "image_url", "image_url": {"url": png(800, 600)}},
                ]
            )
        )
        history.append(AIMessage(f"A photo of a cat, number {turn}."))
    history.append(HumanMessage("Which one was best?"))
    budget = 3000
    kept = select_messages(history, max_tokens=budget, token_counter=ENCODE)
    image = max(765, math.ceil(800 * 600 / 750))
    bill = 3 + sum(3 + cl100k(m.text) + (image if isinstance(m.content, list) else 0) for m in kept)
    assert bill <= budget
    assert bill >= 0.6 * budget  # the window is not padded empty


# -- the request around the history --------------------------------------------------------


def test_the_reply_and_the_headroom_are_reserved() -> None:
    history = [HumanMessage("a " * 40), HumanMessage("b " * 40), HumanMessage("c")]
    sizes = [approximate_message_tokens(m) for m in history]
    exact = sum(sizes) + 3
    assert len(select_messages(history, max_tokens=exact)) == 3
    assert len(select_messages(history, max_tokens=exact - 1)) == 2
    _, report = select_messages_with_report(history, max_tokens=exact, headroom=0.5)
    assert report.included_tokens <= exact - 3 - math.ceil(exact * 0.5)
    with pytest.raises(ConfigurationError, match="headroom"):
        CupelMessageSelector(max_tokens=100, headroom=1.5)


# -- chunks --------------------------------------------------------------------------------


def test_chunks_are_their_message_types() -> None:
    history = [
        SystemMessageChunk(content="Be brief."),
        HumanMessageChunk(content="Weather?"),
        AIMessageChunk(content="", tool_calls=[{"name": "w", "args": {}, "id": "c1"}]),
        ToolMessageChunk(content="Sunny", tool_call_id="c1"),
        AIMessageChunk(content="It is sunny."),
        HumanMessageChunk(content="Thanks!"),
    ]
    mapped = messages_to_items(history)
    assert [item.metadata["langchain.type"] for item in mapped.items] == [
        "system",
        "human",
        "tool_group",
        "ai",
        "human",
    ]
    assert [item.pinned for item in mapped.items] == [True, False, False, False, True]
    assert tool_call_problems(history) == []
    # the call dropped means its result is dropped too: never an orphan tool chunk
    room = approximate_message_tokens(history[0]) + approximate_message_tokens(history[-1])
    kept = select_messages(history, max_tokens=room + 3 + 12)
    assert not any(isinstance(m, ToolMessageChunk) for m in kept) or any(
        isinstance(m, AIMessageChunk) and m.tool_calls for m in kept
    )
    assert tool_call_problems(kept) == []
    assert kept[0] is history[0] and kept[-1] is history[-1]


def test_an_orphan_tool_chunk_is_invalid() -> None:
    history = [HumanMessageChunk(content="Hi"), ToolMessageChunk(content="x", tool_call_id="c1")]
    assert tool_call_problems(history) == [
        "message 1: tool result for 'c1' answers no call made just before it (unknown_result)"
    ]


def test_the_model_counts_a_chunk_like_its_message() -> None:
    call = {"name": "lookup", "args": {"q": "nile length"}, "id": "c7"}
    chunk = AIMessageChunk(content="Looking.", tool_calls=[call])
    message = AIMessage("Looking.", tool_calls=[call])
    assert approximate_message_tokens(chunk) == approximate_message_tokens(message)
    assert json.loads(json.dumps(call["args"])) == call["args"]


# -- chunks through every component, sync and async ---------------------------------------


def _streamed_agent_history() -> list[BaseMessage]:
    """An agent run as a store assembled it from streamed output: chunks and messages mixed."""
    return [
        SystemMessageChunk(content="You are a weather bot."),
        HumanMessage("Weather in Oslo?"),
        AIMessageChunk(content="", tool_calls=[{"name": "w", "args": {"c": "Oslo"}, "id": "c1"}]),
        ToolMessageChunk(content="Rain, 4 degrees " * 30, tool_call_id="c1"),
        AIMessageChunk(content="It rains in Oslo."),
        HumanMessageChunk(content="And in Bergen?"),
        AIMessage("", tool_calls=[{"name": "w", "args": {"c": "Bergen"}, "id": "c2"}]),
        ToolMessageChunk(content="Sun, 9 degrees", tool_call_id="c2"),
    ]


def _check_chunk_window(window: list[BaseMessage], history: list[BaseMessage]) -> None:
    assert window[0] is history[0]  # the chunked system prompt is pinned
    assert history[5] in window  # the chunked latest human message (the task) is pinned
    assert window[-2:] == history[-2:]  # the newest exchange, call with its result
    assert tool_call_problems(window) == []
    assert history[3] not in window  # the big result went, and with it its call
    assert history[2] not in window


def test_chunks_through_every_component_sync_and_async() -> None:
    from langchain.agents.middleware import ModelRequest, ModelResponse

    from cupel_langchain import CupelContextMiddleware

    history = _streamed_agent_history()
    sizes = [approximate_message_tokens(m) for m in history]
    budget = sum(sizes) + 3 - sizes[3] - sizes[2] - 1  # everything but the first exchange
    _check_chunk_window(select_messages(history, max_tokens=budget), history)
    selector = CupelMessageSelector(max_tokens=budget)
    _check_chunk_window(selector.invoke(history), history)
    _check_chunk_window(asyncio.run(selector.ainvoke(history)), history)

    middleware = CupelContextMiddleware(max_tokens=budget)
    seen: list[list[BaseMessage]] = []

    def request() -> ModelRequest:  # type: ignore[type-arg]
        return ModelRequest(
            model=GenericFakeChatModel(messages=iter([AIMessage("ok")] * 2)),
            messages=history[1:],
            system_message=history[0],  # type: ignore[arg-type]
        )

    def handler(sent: ModelRequest) -> ModelResponse:  # type: ignore[type-arg]
        seen.append([sent.system_message, *sent.messages])  # type: ignore[list-item]
        return ModelResponse(result=[AIMessage("ok")])

    async def ahandler(sent: ModelRequest) -> ModelResponse:  # type: ignore[type-arg]
        return handler(sent)

    middleware.wrap_model_call(request(), handler)
    asyncio.run(middleware.awrap_model_call(request(), ahandler))
    for window in seen:
        _check_chunk_window(window, history)


# -- calibration from the provider's reported usage ----------------------------------------


def _chat_with_usage(reported_ratio: float | None) -> list[BaseMessage]:
    history: list[BaseMessage] = [SystemMessage("Be brief.")]
    for turn in range(12):
        history.append(HumanMessage(f"Question {turn}: " + "tell me more about rivers " * 6))
        counted = sum(map(approximate_message_tokens, history)) + 3
        usage = None
        if reported_ratio is not None:
            reported = round(counted * reported_ratio)
            usage = {"input_tokens": reported, "output_tokens": 20, "total_tokens": reported + 20}
        history.append(AIMessage("Rivers are long. " * 5, usage_metadata=usage))  # type: ignore[arg-type]
    history.append(HumanMessage("And the Nile?"))
    return history


def test_a_provider_counting_more_tightens_the_call_and_the_report_says_so() -> None:
    plain = select_messages(_chat_with_usage(None), max_tokens=600)
    same, same_report = select_messages_with_report(_chat_with_usage(0.9), max_tokens=600)
    tight, tight_report = select_messages_with_report(_chat_with_usage(1.25), max_tokens=600)
    assert [m.content for m in same] == [m.content for m in plain]  # never loosened
    assert not any(e.stage == "Calibrate" for e in same_report.events)
    assert len(tight) < len(plain)
    assert tight_report.included_tokens * 1.25 <= 600 - 3 + 1
    (event,) = [e for e in tight_report.events if e.stage == "Calibrate"]
    assert "ratio 1.250" in str(event.message) and "instead of 597" in str(event.message)


_TEXTS = st.sampled_from(["", "Hi", "How long is the Nile?", "x" * 41, "naïve café ☕"])


@st.composite
def _messages(draw: st.DrawFn) -> BaseMessage:
    """Human, AI, system and tool messages: text or block content, with or without a
    name, tool calls (valid and invalid) and extra kwargs."""
    kind = draw(st.sampled_from(["human", "ai", "system", "tool"]))
    content: Any = draw(_TEXTS)
    if draw(st.booleans()):
        content = [{"type": "text", "text": draw(_TEXTS)}, draw(_TEXTS)]
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["function_call"] = {"name": "f", "arguments": draw(_TEXTS)}
    name = draw(st.one_of(st.none(), _TEXTS))
    if kind == "human":
        return HumanMessage(content, name=name, additional_kwargs=extra)
    if kind == "system":
        return SystemMessage(content, name=name, additional_kwargs=extra)
    if kind == "tool":
        return ToolMessage(content, tool_call_id=draw(_TEXTS), name=name)
    calls = [
        {"name": draw(_TEXTS) or "f", "args": {"q": draw(_TEXTS)}, "id": f"c{i}"}
        for i in range(draw(st.integers(0, 2)))
    ]
    invalid = [
        {"name": "g", "args": draw(_TEXTS), "id": "bad", "error": None, "type": "invalid_tool_call"}
        for _ in range(draw(st.integers(0, 1)))
    ]
    return AIMessage(
        content, name=name, tool_calls=calls, invalid_tool_calls=invalid, additional_kwargs=extra
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    messages=st.lists(_messages(), max_size=6), counter=st.sampled_from(["approximate", "words"])
)
def test_the_read_pass_prices_every_message_as_its_parts(
    messages: list[BaseMessage], counter: str
) -> None:
    """The text-counter modes price a message as :class:`~cupel.counting.MessageCost` of
    its parts; the read pass, which prices a plain message as its text's count + 3
    without reading its parts, agrees (also on a second read, from remembered counts)."""
    text: Any = counter if counter == "approximate" else (lambda t: len(t.split()))
    count = resolve_message_counter(text, "text" if counter == "words" else "auto")
    expected = [MessageCost(text)(*message_parts(message)) for message in messages]
    for _ in range(2):
        assert read_messages(messages, count.message, count.plain).tokens == expected
    assert [count([message]) for message in messages] == expected


def _order_sensitive(text: str) -> int:
    """A text counter any change of the text shows in (order, signs, types of values)."""
    return sum((i + 1) * ord(ch) for i, ch in enumerate(text)) % 9973


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, -0.0, 1.0, 0.5, math.inf, math.nan])
    | st.sampled_from(["", "a", "1", "true", "null"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), inner), max_size=3).map(dict)
    ),
    max_leaves=8,
)


_EQUAL_WRITTEN_OTHERWISE = [
    {"v": 0.0},
    {"v": -0.0},
    {"v": 1},
    {"v": 1.0},
    {"v": True},
    {"a": 1, "b": 2},
    {"b": 2, "a": 1},
    {"v": [{"a": 1, "b": 2}]},
    {"v": [{"b": 2, "a": 1}]},
]
"""Arguments equal (``==``) to another in the list that JSON writes otherwise."""


@settings(max_examples=examples(200), deadline=None)
@given(
    history=histories(),
    args=st.lists(_JSON_VALUES, min_size=1, max_size=3),
    counter=st.sampled_from(["approximate", "ordered"]),
)
def test_a_history_read_again_is_priced_as_afresh(
    history: list[BaseMessage], args: list[Any], counter: str
) -> None:
    """Prices are kept by everything a message is priced from: read again, a history with
    tool calls — among them arguments equal but written otherwise (order, ``1`` / ``1.0``
    / ``True``, ``0.0`` / ``-0.0``) — costs what a fresh pricing of every message says."""
    calls = [
        AIMessage("", tool_calls=[{"name": "f", "args": value, "id": "k"}])
        for value in [*({"v": value} for value in args), *_EQUAL_WRITTEN_OTHERWISE]
    ]
    messages = [*history, *calls]
    text: Any = "approximate" if counter == "approximate" else _order_sensitive
    count = resolve_message_counter(text, "auto" if counter == "approximate" else "text")
    expected = [MessageCost(text)(*message_parts(message)) for message in messages]
    for _ in range(2):
        assert read_messages(messages, count.message, count.plain).tokens == expected
        assert [count([message]) for message in messages] == expected


def test_a_message_changed_in_place_is_priced_anew() -> None:
    """The same object read again after its content, tool calls or name changed (a
    streamed chunk, an image list, invalid calls) costs what it costs now."""
    count = resolve_message_counter(_order_sensitive, "text")

    def fresh(message: BaseMessage) -> int:
        return MessageCost(_order_sensitive)(*message_parts(message))

    ai = AIMessage("Looking.", tool_calls=[{"name": "f", "args": {"q": "a"}, "id": "c1"}])
    chunk = AIMessageChunk("Look", tool_call_chunks=[{"name": "f", "args": '{"q": 1}', "id": "c2"}])
    pictured = HumanMessage([{"type": "text", "text": "What is it?"}])
    tool = ToolMessage("Sunny", tool_call_id="c1")
    edits = [
        (ai, lambda: ai.tool_calls[0]["args"].update(q="a longer query")),
        (ai, lambda: ai.tool_calls[0]["args"].update(q=1.0)),
        (ai, lambda: ai.tool_calls.append({"name": "g", "args": {}, "id": "c3"})),
        (
            ai,
            lambda: ai.invalid_tool_calls.append(
                {
                    "name": "h",
                    "args": "{oops",
                    "id": "c4",
                    "error": None,
                    "type": "invalid_tool_call",
                }
            ),
        ),
        (ai, lambda: setattr(ai, "content", "Looking it up.")),
        (ai, lambda: setattr(ai, "name", "helper")),
        (chunk, lambda: chunk.tool_calls[0]["args"].update(q=2)),
        (
            pictured,
            lambda: pictured.content.append(  # type: ignore[union-attr]
                {"type": "image_url", "image_url": {"url": png(900, 40)}}
            ),
        ),
        (
            pictured,
            lambda: pictured.content[1]["image_url"].update(  # type: ignore[index,union-attr]
                url=png(2000, 2000)
            ),
        ),
        (tool, lambda: setattr(tool, "tool_call_id", "c1-long-id")),
    ]
    for message, edit in edits:
        before = count([message])
        assert before == fresh(message)
        edit()
        assert count([message]) == fresh(message) != before, message
        assert read_messages([message], count.message, count.plain).tokens == [fresh(message)]


def test_a_counter_of_messages_is_called_on_every_read() -> None:
    """Counting by the caller's callable or chat model stays the caller's: nothing kept."""
    seen: list[int] = []

    def per_message(message: BaseMessage) -> int:
        seen.append(1)
        return 5

    count = resolve_message_counter(per_message, "message")
    history = [AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])] * 3
    for _ in range(2):
        assert read_messages(history, count.message, count.plain).tokens == [5, 5, 5]
    assert len(seen) == 6
