"""Issue 26 on the LlamaIndex side: every window CupelChatMemory, CupelMemory and
CupelNodePostprocessor return is within budget as the provider bills it.

The bill is the oracle of ``benchmarks/bill.py`` (cl100k on every text the provider
receives, 3 per message, tool calls' names, arguments and ids, a result's call id,
images by their dimensions, 3 for the reply), which knows nothing of cupel's counting.
Every object here is a real llama-index-core one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.memory import StaticMemoryBlock
from llama_index.core.schema import MetadataMode
from llama_index.core.utils import get_tokenizer

from benchmarks.bill import Bill, anthropic_image_tokens, openai_image_tokens
from benchmarks.bill_cases import (
    DOCUMENT_FLAVORS,
    FLAVORS,
    generate_case,
    generate_documents,
    jpeg,
    png,
    to_llamaindex,
    to_nodes,
)
from benchmarks.window_components import fill_memory
from cupel import ConfigurationError
from cupel.counting import anthropic_image_tokens as cupel_rule
from cupel.counting import estimate_tokens
from cupel_llamaindex import (
    CupelChatMemory,
    CupelMemory,
    CupelNodePostprocessor,
    messages_to_items,
)

TOKENIZER = get_tokenizer()  # LlamaIndex's default: cl100k_base, offline
ENCODING: Any = TOKENIZER.func.__self__  # type: ignore[attr-defined]  # its tiktoken Encoding
REPLY = 3
PNG = png(800, 600)  # OpenAI: 4 tiles, 765; Anthropic: 640
JPEG = jpeg(1920, 1080)  # OpenAI: 1,105; Anthropic: 1,599 (cupel's cap: 1.2 MP)


def cl100k(text: str) -> int:
    return len(TOKENIZER(text))


def _bill() -> Bill:
    return Bill(sizes={PNG: (800, 600), JPEG: (1920, 1080)})


def _question() -> ChatMessage:
    return ChatMessage(role="user", content="How long is the Nile?")


def _call(call_id: str = "call_Nile01", kwargs: Any = None) -> ChatMessage:
    arguments = {"query": "nile length"} if kwargs is None else kwargs
    call = ToolCallBlock(tool_call_id=call_id, tool_name="search", tool_kwargs=arguments)
    return ChatMessage(role="assistant", blocks=[call])


def _result(call_id: str = "call_Nile01") -> ChatMessage:
    return ChatMessage(
        role="tool", content="6,650 km (4,130 mi)", additional_kwargs={"tool_call_id": call_id}
    )


def _openai_call() -> ChatMessage:
    call = {
        "id": "call_Nile01",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": "nile length"}'},
    }
    return ChatMessage(role="assistant", content=None, additional_kwargs={"tool_calls": [call]})


def _counted(messages: list[ChatMessage], kind: str, **options: Any) -> tuple[int, list[Any]]:
    """What a memory holding ``messages`` (all fitting) counts for its window, and the
    window."""
    if kind == "chat":
        memory: Any = CupelChatMemory.from_defaults(
            chat_history=messages, token_limit=50_000, start_on_user=False, **options
        )
        window = memory.get()
    else:
        memory = CupelMemory.from_defaults(token_limit=50_000, start_on_user=False, **options)
        memory.put_messages(messages)
        window = memory.get()
    assert len(window) == len(messages)
    report = memory.last_report
    assert report is not None
    return report.included_tokens, window


SHAPES: list[tuple[str, Callable[[], list[ChatMessage]], Callable[[], int]]] = [
    ("text", lambda: [_question()], lambda: 3 + cl100k("How long is the Nile?")),
    (
        "an inline PNG of 800x600 and a question: 765 by the larger rule",
        lambda: [
            ChatMessage(
                role="user", blocks=[TextBlock(text="What is this?"), ImageBlock(image=PNG)]
            )
        ],
        lambda: 3 + cl100k("What is this?") + 765,
    ),
    (
        "a data: URL JPEG of 1920x1080: 1,599 by cupel's Anthropic rule, the larger",
        lambda: [
            ChatMessage(
                role="user",
                blocks=[
                    ImageBlock(url=f"data:image/jpeg;base64,{base64.b64encode(JPEG).decode()}")
                ],
            )
        ],
        lambda: 3 + max(cupel_rule(1920, 1080), 1105),
    ),
    (
        "an http image: size unknown, 1,600",
        lambda: [ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/cat.png")])],
        lambda: 3 + 1600,
    ),
    (
        "a tool call and its result: name, JSON arguments and id; text and call id",
        lambda: [_question(), _call(), _result()],
        lambda: (
            (3 + cl100k("How long is the Nile?"))
            + (3 + cl100k("search") + cl100k('{"query": "nile length"}') + cl100k("call_Nile01"))
            + (3 + cl100k("6,650 km (4,130 mi)") + cl100k("call_Nile01"))
        ),
    ),
    (
        "an invalid tool call (its raw arguments) and its result",
        lambda: [_question(), _call(kwargs='{"query": "nile'), _result()],
        lambda: (
            (3 + cl100k("How long is the Nile?"))
            + (3 + cl100k("search") + cl100k('{"query": "nile') + cl100k("call_Nile01"))
            + (3 + cl100k("6,650 km (4,130 mi)") + cl100k("call_Nile01"))
        ),
    ),
    (
        "an OpenAI-style call in additional_kwargs and its result",
        lambda: [_question(), _openai_call(), _result()],
        lambda: (
            (3 + cl100k("How long is the Nile?"))
            + (3 + cl100k("search") + cl100k('{"query": "nile length"}') + cl100k("call_Nile01"))
            + (3 + cl100k("6,650 km (4,130 mi)") + cl100k("call_Nile01"))
        ),
    ),
    (
        "a name",
        lambda: [ChatMessage(role="user", content="Hi there", additional_kwargs={"name": "ada_l"})],
        lambda: 3 + cl100k("Hi there") + cl100k("ada_l"),
    ),
]


@pytest.mark.parametrize("kind", ["chat", "memory"])
@pytest.mark.parametrize(("shape", "build", "expected"), SHAPES, ids=[s[0] for s in SHAPES])
def test_each_block_shape_costs_its_known_bill(
    kind: str, shape: str, build: Callable[[], list[ChatMessage]], expected: Callable[[], int]
) -> None:
    counted, window = _counted(build(), kind)
    assert counted == expected()
    billed = _bill().llamaindex(window)
    # the oracle agrees; an image cupel prices by a larger pixel cap (1.2 MP against the
    # oracle's 1.15) costs more, never less
    assert counted + REPLY == billed or ("JPEG" in shape and counted + REPLY > billed)


@pytest.mark.parametrize("kind", ["chat", "memory"])
def test_a_legacy_function_call_costs_its_name_and_arguments(kind: str) -> None:
    call = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={"function_call": {"name": "search", "arguments": '{"q": "nile"}'}},
    )
    result = ChatMessage(role="function", content="6,650 km")
    counted, _ = _counted([_question(), call, result], kind)
    assert counted == (
        (3 + cl100k("How long is the Nile?"))
        + (3 + cl100k("search") + cl100k('{"q": "nile"}'))
        + (3 + cl100k("6,650 km"))
    )


@pytest.mark.parametrize("kind", ["chat", "memory"])
@pytest.mark.parametrize(
    ("image_tokens", "detail", "price"),
    [
        ("max", None, max(openai_image_tokens(800, 600), anthropic_image_tokens(800, 600))),
        ("openai", None, 765),
        ("openai", "low", 85),
        ("anthropic", "low", 640),
        (100, None, 100),
        (lambda width, height, detail: width // 100, None, 8),
    ],
)
def test_image_tokens_chooses_the_image_rule(
    kind: str, image_tokens: Any, detail: str | None, price: int
) -> None:
    message = ChatMessage(role="user", blocks=[ImageBlock(image=PNG, detail=detail)])
    counted, _ = _counted([message], kind, image_tokens=image_tokens)
    assert counted == 3 + price


def test_tool_call_ids_are_counted_where_they_were_not_before() -> None:
    """Before issue 26 a call cost its name and arguments only: long ids (Anthropic's
    ``toolu_...``, 24+ characters) were over budget on agent histories."""
    long_id = "toolu_01A09q90qw90lq917835lq9"
    history = [_question(), _call(long_id), _result(long_id)]
    counts = messages_to_items(history, tokenizer_fn=TOKENIZER).counts
    assert counts[1] == 3 + cl100k("search") + cl100k('{"query": "nile length"}') + cl100k(long_id)
    assert counts[2] == 3 + cl100k("6,650 km (4,130 mi)") + cl100k(long_id)
    assert cl100k(long_id) > 10


# -- windows within budget, by the bill -----------------------------------------------------------
def _cases(per_flavor: int) -> list[Any]:
    bill = Bill()
    return [
        generate_case(flavor, number, seed=26, bill=bill)
        for flavor in FLAVORS
        for number in range(per_flavor)
    ]


CASES = _cases(2)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_windows_are_within_token_limit_by_the_bill_on_mixed_histories(case: Any) -> None:
    """Prose, CJK, images (inline and http), many short messages, JSON and code tool
    outputs, invalid tool calls, names: every window plus the reply is within the limit
    as billed, and the count the report gives is what the oracle bills (more for large
    images: cupel's Anthropic rule caps at 1.2 MP, the oracle's at 1.15)."""
    bill = Bill(case.images)
    history = to_llamaindex(case)
    chat = CupelChatMemory.from_defaults(chat_history=list(history), token_limit=case.budget)
    memory = CupelMemory.from_defaults(token_limit=case.budget)
    for component, window in ((chat, chat.get()), (memory, fill_memory(memory, list(history)))):
        billed = bill.llamaindex(window)
        assert billed <= case.budget, (type(component).__name__, billed, case.budget)
        counted = component.last_report.included_tokens + REPLY
        assert counted == billed if not case.images else counted >= billed


@pytest.mark.parametrize("case", CASES[::3], ids=[c.name for c in CASES[::3]])
def test_headroom_keeps_its_share_of_token_limit_free(case: Any) -> None:
    bill = Bill(case.images)
    history = to_llamaindex(case)
    for headroom in (0.1, 0.3):
        limit = case.budget + round(headroom * case.budget)  # room for the pinned messages
        chat = CupelChatMemory.from_defaults(
            chat_history=list(history), token_limit=limit, headroom=headroom
        )
        memory = CupelMemory.from_defaults(token_limit=limit, headroom=headroom)
        for window in (chat.get(), fill_memory(memory, list(history))):
            assert bill.llamaindex(window) <= limit - math.ceil(headroom * limit)


@pytest.mark.parametrize("flavor", DOCUMENT_FLAVORS)
def test_nodes_are_billed_as_their_text_within_max_tokens_less_headroom(flavor: str) -> None:
    bill = Bill()
    case = generate_documents(flavor, 0, seed=26, bill=bill)
    nodes = to_nodes(case)
    for headroom in (0.0, 0.2):
        post = CupelNodePostprocessor(max_tokens=case.budget, headroom=headroom)
        kept = post.postprocess_nodes(nodes)
        billed = bill.nodes(kept)
        assert billed <= case.budget - math.ceil(headroom * case.budget)
        assert post.last_report is not None and post.last_report.included_tokens == billed


def test_get_and_aget_select_the_same_window_by_the_bill() -> None:
    (case,) = [c for c in CASES if c.flavor == "mixed agent"][:1]
    bill = Bill(case.images)
    history = to_llamaindex(case)
    chat = CupelChatMemory.from_defaults(chat_history=list(history), token_limit=case.budget)
    memory = CupelMemory.from_defaults(token_limit=case.budget)

    async def scenario() -> tuple[list[ChatMessage], list[ChatMessage]]:
        await memory.aput_messages(list(history))
        return await chat.aget(), await memory.aget()

    chat_async, memory_async = asyncio.run(scenario())
    assert chat_async == chat.get()
    assert [m.model_dump() for m in memory_async] == [m.model_dump() for m in memory.get()]
    assert max(bill.llamaindex(chat_async), bill.llamaindex(memory_async)) <= case.budget


def test_memory_blocks_cost_their_rendering_and_the_request_stays_within_the_limit() -> None:
    bill = _bill()
    block = StaticMemoryBlock(name="profile", static_content="Ada, a chemist. " * 20, priority=0)
    notes = StaticMemoryBlock(name="notes", static_content="Likes tea. " * 30, priority=1)
    history = [
        m
        for t in range(30)
        for m in (_question(), ChatMessage(role="assistant", content=f"{t}: 6,650 km"))
    ]
    for limit in (300, 500, 900):
        memory = CupelMemory.from_defaults(token_limit=limit, memory_blocks=[block, notes])
        memory.put_messages(list(history))
        sent = memory.get()
        assert bill.llamaindex(sent) <= limit, limit
        report = memory.last_report
        assert report is not None
        # the report's tokens cover what was sent (a block is priced as rendered alone)
        assert report.included_tokens + REPLY >= bill.llamaindex(sent)


# -- tokenizer_fn: every text-counter form ---------------------------------------------------------
_WORDS = re.compile(r"\w+|[^\w\s]+")  # the Whitespace pre-tokenizer's pieces


def _hf_tokenizer() -> Any:
    """A HuggingFace ``tokenizers.Tokenizer`` built offline: one token per word or run
    of punctuation."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel(vocab={"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def _transformers_tokenizer() -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=_hf_tokenizer(), unk_token="[UNK]")


FORMS: list[tuple[str, Callable[[], Any], Callable[[str], int]]] = [
    ("LlamaIndex's tokenizer (a list)", lambda: TOKENIZER, cl100k),
    ("a tiktoken Encoding", lambda: ENCODING, lambda t: len(ENCODING.encode_ordinary(t))),
    ("a callable returning an int", lambda: lambda text: len(text) // 3, lambda t: len(t) // 3),
    ("'approximate'", lambda: "approximate", estimate_tokens),
    ("a HuggingFace tokenizers.Tokenizer", _hf_tokenizer, lambda t: len(_WORDS.findall(t))),
    ("a transformers tokenizer", _transformers_tokenizer, lambda t: len(_WORDS.findall(t))),
]


@pytest.mark.parametrize(("form", "make", "count"), FORMS, ids=[f[0] for f in FORMS])
def test_tokenizer_fn_takes_every_text_counter_form(
    form: str, make: Callable[[], Any], count: Callable[[str], int]
) -> None:
    history = [_question(), ChatMessage(role="assistant", content="6,650 km")]
    expected = [3 + count("How long is the Nile?"), 3 + count("6,650 km")]
    tokenizer = make()
    assert messages_to_items(history, tokenizer_fn=tokenizer).counts == expected
    chat = CupelChatMemory.from_defaults(chat_history=list(history), tokenizer_fn=tokenizer)
    memory = CupelMemory.from_defaults(tokenizer_fn=tokenizer)
    memory.put_messages(list(history))
    for component in (chat, memory):
        component.get()
        assert component.last_report.included_tokens == sum(expected)
    nodes = to_nodes(generate_documents("prose docs", 0, seed=26))[:3]
    post = CupelNodePostprocessor(max_tokens=100_000, tokenizer_fn=tokenizer)
    post.postprocess_nodes(nodes)
    texts = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
    assert post.last_report.included_tokens == sum(map(count, texts))


@pytest.mark.parametrize("owner", [CupelChatMemory, CupelMemory, CupelNodePostprocessor])
def test_a_tokenizer_fn_of_no_known_form_is_refused_in_one_line(owner: Any) -> None:
    size = {"max_tokens": 100} if owner is CupelNodePostprocessor else {"token_limit": 100}
    with pytest.raises(ConfigurationError) as raised:
        owner(tokenizer_fn=object(), **size)
    message = str(raised.value)
    assert "\n" not in message and raised.value.field == "tokenizer_fn"
    assert message.startswith(f"{owner.__name__}.tokenizer_fn must be 'approximate', a tiktoken")
    assert "; got object <object object at 0x" in message


# -- validation and serialization -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "field", "fragment"),
    [
        ({"image_tokens": "gemini"}, "image_tokens", "got the unknown rule 'gemini'"),
        ({"image_tokens": -1}, "image_tokens", "got the negative int -1"),
        ({"image_tokens": 2.5}, "image_tokens", "got float 2.5"),
        ({"headroom": 1}, "headroom", "0 <= headroom < 1"),
        ({"headroom": None}, "headroom", "got None"),
        ({"agent_reserve": -3}, "agent_reserve", "must be an int >= 0, got -3"),
        ({"agent_reserve": "100"}, "agent_reserve", "must be an int >= 0, got '100'"),
        ({"agent_reserve": 997}, "agent_reserve", "token_limit (1000) must exceed"),
    ],
)
def test_cupel_memory_checks_its_counting_options_at_construction_and_assignment(
    options: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelMemory.from_defaults(token_limit=1000, **options)
    assert raised.value.field == field and fragment in str(raised.value)
    assert str(raised.value).startswith(f"CupelMemory.{field}")
    memory = CupelMemory.from_defaults(token_limit=1000)
    ((name, value),) = options.items()
    with pytest.raises(ConfigurationError, match=f"CupelMemory.{field}"):
        setattr(memory, name, value)
    assert getattr(memory, name) == {"image_tokens": "max", "headroom": 0.0}.get(name, 0)


def test_the_postprocessor_checks_headroom_at_assignment_too() -> None:
    post = CupelNodePostprocessor(max_tokens=100, headroom=0.25)
    with pytest.raises(ConfigurationError, match=r"CupelNodePostprocessor\.headroom must be"):
        post.headroom = 2
    assert post.headroom == 0.25


def test_counting_options_survive_to_string_and_a_callable_rule_must_be_given_again() -> None:
    memory = CupelChatMemory.from_defaults(
        chat_history=[_question()],
        token_limit=500,
        image_tokens="anthropic",
        headroom=0.1,
        agent_reserve=120,
    )
    clone = CupelChatMemory.from_string(memory.to_string())
    assert (clone.image_tokens, clone.headroom, clone.agent_reserve) == ("anthropic", 0.1, 120)
    flat = CupelChatMemory.from_string(
        CupelChatMemory.from_defaults(token_limit=500, image_tokens=250).to_string()
    )
    assert flat.image_tokens == 250

    def rule(width: int, height: int, detail: str | None) -> int:
        return 1

    custom = CupelChatMemory.from_defaults(token_limit=500, image_tokens=rule)
    text = custom.to_string()
    assert json.loads(text)["not_serialized"] == ["image_tokens"]
    with pytest.raises(ConfigurationError, match="custom image_tokens, which is not serialized"):
        CupelChatMemory.from_string(text)
    assert CupelChatMemory.from_string(text, image_tokens=rule).image_tokens is rule


def test_cupel_memory_pickles_with_its_counting_options() -> None:
    import pickle

    memory = CupelMemory.from_defaults(
        token_limit=800, image_tokens="openai", headroom=0.05, agent_reserve=64
    )
    memory.put(_question())
    clone = pickle.loads(pickle.dumps(memory))
    assert (clone.image_tokens, clone.headroom, clone.agent_reserve) == ("openai", 0.05, 64)
    assert [m.content for m in clone.get()] == [m.content for m in memory.get()]
