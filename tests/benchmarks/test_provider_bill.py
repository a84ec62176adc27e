"""The provider-bill benchmark: the oracle's bill on hand-built requests, the generated
cases, and a quick run producing every row (the targets are not asserted here)."""

from __future__ import annotations

import base64
import doctest
import io
import json
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.schema import NodeWithScore, TextNode
from PIL import Image as PILImage

from benchmarks import bill as bill_module
from benchmarks import bill_cases, provider_bill
from benchmarks.bill import (
    REPLY,
    UNKNOWN_IMAGE,
    Bill,
    anthropic_image_tokens,
    image_tokens,
    openai_image_tokens,
)
from benchmarks.bill_cases import (
    DOCUMENT_FLAVORS,
    FLAVORS,
    Image,
    Text,
    generate_case,
    generate_cases,
    generate_documents,
    jpeg,
    png,
    to_documents,
    to_langchain,
    to_llamaindex,
    to_nodes,
)

SCREENSHOT = png(1920, 1080, b"screenshot")
PHOTO = jpeg(4032, 3024, b"photo")
ICON = png(200, 200)
SIZES = {SCREENSHOT: (1920, 1080), PHOTO: (4032, 3024), ICON: (200, 200)}


def data_url(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


@pytest.fixture(scope="module")
def bill() -> Bill:
    return Bill(SIZES)


@pytest.mark.parametrize("module", [bill_module, bill_cases, provider_bill])
def test_doctests(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert result.failed == 0


# -- the oracle on hand-built requests ---------------------------------------------------------
# cl100k_base: "Hello there" 2, "search" 1, '{"q": "cats"}' 6, "call_1" 3, '{"q": "ca' 5,
# "call_2" 3, "42" 1, "alice" 1, "Be brief." 3


def test_the_reply_costs_three_tokens_and_each_message_three(bill: Bill) -> None:
    assert REPLY == 3
    assert bill.langchain([]) == 3
    assert bill.llamaindex([]) == 3
    assert bill.langchain([HumanMessage("Hello there")]) == 2 + 3 + 3
    assert bill.langchain([SystemMessage("Be brief."), HumanMessage("Hello there")]) == 14
    assert bill.llamaindex([ChatMessage(role="user", content="Hello there")]) == 8


def test_a_name_field_is_billed(bill: Bill) -> None:
    assert bill.langchain([HumanMessage("Hello there", name="alice")]) == 2 + 1 + 3 + 3
    named = ChatMessage(role="user", content="Hello there", additional_kwargs={"name": "alice"})
    assert bill.llamaindex([named]) == 9


def test_a_tool_call_and_its_result(bill: Bill) -> None:
    call = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "cats"}, "id": "call_1"}])
    result = ToolMessage("42", tool_call_id="call_1")
    assert bill.langchain_message(call) == 3 + 1 + 6 + 3
    assert bill.langchain_message(result) == 3 + 1 + 3
    assert bill.langchain([call, result]) == 13 + 7 + 3
    blocks = ChatMessage(
        role="assistant",
        blocks=[
            ToolCallBlock(tool_call_id="call_1", tool_name="search", tool_kwargs={"q": "cats"})
        ],
    )
    openai = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "cats"}'},
                }
            ]
        },
    )
    tool = ChatMessage(role="tool", content="42", additional_kwargs={"tool_call_id": "call_1"})
    assert bill.llamaindex_message(blocks) == bill.llamaindex_message(openai) == 13
    assert bill.llamaindex_message(tool) == 7


def test_an_invalid_call_is_billed_with_its_raw_arguments(bill: Bill) -> None:
    message = AIMessage(
        "Hello there",
        invalid_tool_calls=[
            {"name": "search", "args": '{"q": "ca', "id": "call_2", "error": "bad JSON"}
        ],
    )
    assert bill.langchain_message(message) == 3 + 2 + 1 + 5 + 3
    block = ToolCallBlock(tool_call_id="call_2", tool_name="search", tool_kwargs='{"q": "ca')
    li = ChatMessage(role="assistant", blocks=[TextBlock(text="Hello there"), block])
    assert bill.llamaindex_message(li) == 14


def test_image_prices_by_dimensions() -> None:
    # OpenAI: 1920x1080 -> 1365x768: 3x2 tiles; Anthropic: scaled to 1429x804 (1.15 MP)
    assert openai_image_tokens(1920, 1080) == 170 * 6 + 85
    assert anthropic_image_tokens(1920, 1080) == 1532
    assert image_tokens(1920, 1080) == 1532
    # a photo: OpenAI 2048x1536 -> 1024x768 (4 tiles); Anthropic 1238x928
    assert openai_image_tokens(4032, 3024) == 765
    assert image_tokens(4032, 3024) == 1532
    # small: OpenAI's one tile beats Anthropic's 54; low detail is 85 for OpenAI
    assert (openai_image_tokens(200, 200), anthropic_image_tokens(200, 200)) == (255, 54)
    assert image_tokens(200, 200) == 255
    assert image_tokens(200, 200, "low") == 85
    assert image_tokens(1920, 1080, "low") == 1532  # Anthropic has no low detail
    assert anthropic_image_tokens(1000, 750) == 1000  # no resize


def test_images_in_requests(bill: Bill) -> None:
    human = HumanMessage(
        [
            {"type": "text", "text": "Hello there"},
            {"type": "image_url", "image_url": {"url": data_url(SCREENSHOT)}},
            {"type": "image_url", "image_url": {"url": data_url(ICON), "detail": "low"}},
            {
                "type": "image",
                "base64": base64.b64encode(PHOTO).decode(),
                "mime_type": "image/jpeg",
            },
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image", "url": "https://example.com/dog.png"},
        ]
    )
    expected = 3 + 2 + 1532 + 85 + 1532 + UNKNOWN_IMAGE * 2
    assert bill.langchain_message(human) == expected
    li = ChatMessage(
        role="user",
        blocks=[
            TextBlock(text="Hello there"),
            ImageBlock(image=SCREENSHOT),
            ImageBlock(url=data_url(ICON), detail="low"),
            ImageBlock(url=data_url(PHOTO, "image/jpeg")),
            ImageBlock(url="https://example.com/cat.png"),
            ImageBlock(url="https://example.com/dog.png"),
        ],
    )
    assert bill.llamaindex_message(li) == expected


def test_the_oracle_never_guesses_an_image_size(bill: Bill) -> None:
    stranger = png(640, 480, b"never told")
    with pytest.raises(KeyError, match="size of an image"):
        bill.langchain(
            [HumanMessage([{"type": "image_url", "image_url": {"url": data_url(stranger)}}])]
        )
    assert Bill({stranger: (640, 480)}).image_data(base64.b64encode(stranger)) == image_tokens(
        640, 480
    )


def test_documents_and_nodes(bill: Bill) -> None:
    docs = [Document("Hello there", metadata={"relevance_score": 0.5}), Document("42")]
    assert bill.documents(docs) == 3  # the text alone: no overhead, metadata not sent
    nodes = [NodeWithScore(node=TextNode(text="Hello there", metadata={"file_name": "a.txt"}))]
    # LlamaIndex sends "file_name: a.txt\n\nHello there"
    assert bill.nodes(nodes) == bill.text("file_name: a.txt\n\nHello there") > 2


# -- the cases ---------------------------------------------------------------------------------
def test_hand_built_headers_carry_their_dimensions() -> None:
    for data, size, kind in ((SCREENSHOT, (1920, 1080), "PNG"), (PHOTO, (4032, 3024), "JPEG")):
        image = PILImage.open(io.BytesIO(data))
        assert (image.format, image.size) == (kind, size)
    assert png(10, 20, b"a") != png(10, 20, b"b")  # the padding makes images distinct


def test_generation_is_deterministic_and_both_conversions_bill_alike() -> None:
    shared = Bill()
    cases = generate_cases(2, seed=5, bill=shared)
    assert [c.name for c in cases[:2]] == ["prose chat #0", "prose chat #1"]
    assert cases == generate_cases(2, seed=5)
    assert cases != generate_cases(2, seed=6)
    assert generate_case("mixed agent", 1, seed=5) == cases[-1]
    for case in cases:
        shared.add_images(case.images)
        lc = shared.langchain(to_langchain(case, shared))
        li = shared.llamaindex(to_llamaindex(case))
        assert lc == li == case.bill, case.name
        ratio = case.budget / case.bill
        last_user = next(m for m in reversed(case.messages) if m.role == "user")
        pinned = bill_cases.neutral_bill([case.messages[0], last_user], shared)
        assert 0.199 <= ratio <= 0.801 or case.budget == -(-pinned * 11 // 10), case.name
        assert case.budget >= pinned, case.name


def test_the_flavors_hold_what_they_claim() -> None:
    cases = generate_cases(4, seed=20261230)
    by_flavor = {f: [c for c in cases if c.flavor == f] for f in FLAVORS}

    def parts(flavor: str) -> list[object]:
        return [p for c in by_flavor[flavor] for m in c.messages for p in m.parts]

    def kinds(flavor: str) -> set[str]:
        return {p.kind for p in parts(flavor) if isinstance(p, Text)}

    assert "cjk" in kinds("cjk chat") and {"json", "code", "cjk"} <= kinds("mixed agent")
    assert "json" in kinds("json agent") and "code" in kinds("code agent")
    images = [p for p in parts("image chat") if isinstance(p, Image)]
    assert any(i.data is None for i in images) and any(i.data is not None for i in images)
    assert {i.block for i in images} == {"image_url", "image"}
    assert {i.mime for i in images if i.data} == {"image/png", "image/jpeg"}
    assert any(isinstance(p, Image) for p in parts("mixed agent"))
    short = by_flavor["short chat"]
    assert all(len(c.messages) >= 30 for c in short)
    assert any(c.call_style == "blocks" for c in cases) and any(
        c.call_style == "openai" for c in cases
    )
    calls = [call for c in cases for m in c.messages for call in m.calls]
    assert any(call.invalid for call in calls) and any(not call.invalid for call in calls)
    longest = max(
        bill_cases.message_bill(m, Bill(c.images))
        for c in by_flavor["long agent"]
        for m in c.messages
    )
    assert longest > 1500
    lc = to_langchain(by_flavor["mixed agent"][0])
    assert any(isinstance(m, AIMessage) and m.usage_metadata for m in lc)


def test_document_sets() -> None:
    shared = Bill()
    for flavor in DOCUMENT_FLAVORS:
        case = generate_documents(flavor, 0, seed=3, bill=shared)
        assert case == generate_documents(flavor, 0, seed=3)
        docs, nodes = to_documents(case), to_nodes(case)
        assert shared.documents(docs) == case.bill
        assert shared.nodes(nodes) > case.bill  # the file name goes with each node
        assert 0.2 <= case.budget / case.bill <= 0.8
        scores = [n.score for n in nodes]
        assert scores == sorted(scores, reverse=True)


# -- the run -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_quick_run_produces_every_row(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "bill.json"
    assert provider_bill.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "reproduce: python -m benchmarks.provider_bill --cases 2" in printed
    payload = json.loads(out.read_text(encoding="utf-8"))
    rows = {(s["component"], s["counter"]): s for s in payload["summary"]}
    documents = {(s["component"], s["counter"]): s for s in payload["document_summary"]}
    expected = {(r.component, r.counter) for r in provider_bill.HISTORY_ROWS}
    assert set(rows) == expected
    assert set(documents) == {(r.component, r.counter) for r in provider_bill.DOCUMENT_ROWS}
    names = {component for component, _ in expected}
    assert names == {
        "select_messages",
        "CupelMessageSelector",
        "CupelContextMiddleware",
        "trim_messages",
        "CupelChatMemory",
        "CupelMemory",
        "ChatMemoryBuffer",
        "Memory",
    }
    assert {c for c, counter in expected if counter == "text"} == {
        "select_messages",
        "CupelMessageSelector",
        "CupelContextMiddleware",
    }
    histories = provider_bill.QUICK_CASES * len(FLAVORS)
    for key, row in rows.items():
        assert row["windows"] + row["errors"] == histories, key
        assert row["windows"] > 0, key
        assert set(row["flavors"]) == set(FLAVORS), key
        assert f"| {key[1]} |" in printed
    for key, row in documents.items():
        assert row["windows"] + row["errors"] == provider_bill.QUICK_CASES * len(DOCUMENT_FLAVORS)
        assert row["windows"] > 0, key
    assert len(payload["outcomes"]) == histories * len(provider_bill.HISTORY_ROWS)
    assert "Targets:" in printed and ("[met]" in printed or "[NOT MET]" in printed)


def test_a_failing_component_is_an_error_not_a_window() -> None:
    def broken(history: list[object], budget: int) -> tuple[list[object], None]:
        raise RuntimeError(f"cannot select {len(history)} messages within {budget}")

    row = provider_bill.Row("broken", "langchain", False, "default", "default", broken, "")
    case = generate_case("prose chat", 0, seed=1)
    (outcome,) = provider_bill.run([case], [row])
    assert outcome.error is not None and outcome.error.startswith("RuntimeError")
    (summary,) = provider_bill.summarize([outcome], [row], FLAVORS)
    assert (summary.windows, summary.errors) == (0, 1)
    assert not all(ok for _, ok in provider_bill.targets(summary))


def test_the_bill_of_a_window_is_the_bill_of_the_messages_it_holds() -> None:
    case = generate_case("image chat", 1, seed=2)
    whole = provider_bill.Row(
        "whole", "langchain", False, "default", "default", lambda h, b: (h, None), ""
    )
    (outcome,) = provider_bill.run([case], [whole])
    assert outcome.bill == case.bill and outcome.size == len(case.messages)
    assert outcome.over == (case.bill > case.budget)
