"""read_content on real LangChain messages: every content-block shape LangChain carries
(v1 standard blocks, v0 ``source_type`` blocks, OpenAI, Anthropic, Bedrock, Gemini),
with its known text and media, and base64 never in the text."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.content import (
    create_audio_block,
    create_file_block,
    create_image_block,
    create_plaintext_block,
    create_reasoning_block,
    create_text_block,
    create_video_block,
)

from cupel.counting import Media, media_pricer
from cupel_langchain._content import read_content


def png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = b"IHDR" + ihdr
    chunk = struct.pack(">I", 13) + body + struct.pack(">I", zlib.crc32(body))
    return b"\x89PNG\r\n\x1a\n" + chunk + b"\x00" * 200


def wav(seconds: float, rate: int = 8_000) -> bytes:
    data = b"\x00\x00" * int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


PNG = png(1024, 768)
PNG64 = base64.b64encode(PNG).decode()
PDF = b"%PDF-1.7\n" + b"\x00" * 12_000
PDF64 = base64.b64encode(PDF).decode()
WAV = wav(2.0)
WAV64 = base64.b64encode(WAV).decode()
IMAGE = Media("image", 1024, 768, size=len(PNG))


def read(content: Any, **kwargs: Any) -> tuple[list[str], list[Media]]:
    texts, media = read_content(HumanMessage(content, **kwargs))
    for text in texts:
        for payload in (PNG64, PDF64, WAV64):
            assert payload[:40] not in text
    return texts, media


# --------------------------------------------------------------------------- text


def test_string_content() -> None:
    assert read_content(HumanMessage("hello")) == (["hello"], [])
    assert read_content(AIMessage("")) == ([], [])
    assert read_content(SystemMessage("be brief")) == (["be brief"], [])
    assert read_content(ToolMessage("42", tool_call_id="c1")) == (["42"], [])


def test_text_blocks_of_every_family() -> None:
    texts, media = read(
        [
            "plain string",
            {"type": "text", "text": "standard"},
            create_text_block("factory"),
            {"type": "input_text", "text": "responses input"},
            {"type": "output_text", "text": "responses output", "annotations": [{"x": 1}]},
            {"type": "refusal", "refusal": "I can't"},
            {"type": "text", "text": "cited", "citations": [{"cited_text": "not billed"}]},
        ]
    )
    assert texts == [
        "plain string",
        "standard",
        "factory",
        "responses input",
        "responses output",
        "I can't",
        "cited",
    ]
    assert media == []


# --------------------------------------------------------------------------- images


def test_openai_image_url_shapes() -> None:
    data_url = f"data:image/png;base64,{PNG64}"
    texts, media = read(
        [
            {"type": "image_url", "image_url": {"url": data_url, "detail": "low"}},
            {"type": "image_url", "image_url": data_url},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "image_url", "image_url": {"url": "https://x/b.png"}, "detail": "high"},
            {"type": "input_image", "image_url": data_url, "detail": "auto"},
            {"type": "input_image", "file_id": "file-1"},
        ]
    )
    assert texts == []
    assert media == [
        Media("image", 1024, 768, "low", len(PNG)),
        IMAGE,
        Media("image"),
        Media("image", detail="high"),
        Media("image", 1024, 768, "auto", len(PNG)),
        Media("image"),
    ]


def test_v1_standard_image_blocks() -> None:
    texts, media = read(
        [
            create_image_block(base64=PNG64, mime_type="image/png"),
            {"type": "image", "base64": PNG64, "mime_type": "image/png"},
            create_image_block(url="https://example.com/cat.png"),
            {"type": "image", "url": f"data:image/png;base64,{PNG64}"},
            create_image_block(file_id="file-abc"),
            {"type": "image", "id": "img-1", "base64": PNG64, "extras": {"detail": "low"}},
        ]
    )
    assert texts == []
    assert media == [
        IMAGE,
        IMAGE,
        Media("image"),
        IMAGE,
        Media("image"),
        Media("image", 1024, 768, "low", len(PNG)),
    ]


def test_v0_source_type_image_blocks() -> None:
    _, media = read(
        [
            {"type": "image", "source_type": "base64", "data": PNG64, "mime_type": "image/png"},
            {"type": "image", "source_type": "url", "url": "https://example.com/a.png"},
            {"type": "image", "source_type": "id", "id": "file-1"},
        ]
    )
    assert media == [IMAGE, Media("image"), Media("image")]


def test_anthropic_image_sources() -> None:
    _, media = read(
        [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG64},
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "image", "source": {"type": "file", "file_id": "file_01"}},
        ]
    )
    assert media == [IMAGE, Media("image"), Media("image")]


def test_data_url_dimensions_drive_the_price() -> None:
    _, media = read([{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}])
    price = media_pricer("openai")
    assert price(media[0]) == 765  # 1024x768 -> 2x2 tiles
    _, media = read([{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
    assert price(media[0]) == 1600  # unknown size


# --------------------------------------------------------------------------- audio, video


def test_audio_shapes() -> None:
    texts, media = read(
        [
            {"type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}},
            create_audio_block(base64=WAV64, mime_type="audio/wav"),
            {"type": "audio", "source_type": "base64", "data": WAV64, "mime_type": "audio/wav"},
            create_audio_block(url="https://example.com/a.mp3"),
            {"type": "audio", "file_id": "file-a"},
        ]
    )
    assert texts == []
    assert [m.kind for m in media] == ["audio"] * 5
    for item in media[:3]:
        assert item.size == len(WAV) and item.seconds == pytest.approx(2.0)
    assert media[3] == media[4] == Media("audio")
    assert media_pricer()(media[0]) == 64


def test_video_shapes() -> None:
    mp4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 1000
    _, media = read(
        [
            create_video_block(base64=base64.b64encode(mp4).decode(), mime_type="video/mp4"),
            create_video_block(url="https://example.com/v.mp4"),
            {"type": "video", "file_id": "f"},
        ]
    )
    assert media == [Media("video", size=len(mp4)), Media("video"), Media("video")]


# --------------------------------------------------------------------------- files, documents


def test_openai_file_blocks() -> None:
    texts, media = read(
        [
            {
                "type": "file",
                "file": {
                    "filename": "report.pdf",
                    "file_data": f"data:application/pdf;base64,{PDF64}",
                },
            },
            {"type": "file", "file": {"file_id": "file-123"}},
            {"type": "input_file", "filename": "b.pdf", "file_data": PDF64},
            {"type": "input_file", "file_url": "https://example.com/c.pdf"},
        ]
    )
    assert texts == ["report.pdf", "b.pdf"]
    assert media == [
        Media("document", size=len(PDF)),
        Media("file"),
        Media("document", size=len(PDF)),
        Media("file"),
    ]


def test_v1_and_v0_file_blocks() -> None:
    texts, media = read(
        [
            create_file_block(base64=PDF64, mime_type="application/pdf"),
            create_file_block(url="https://example.com/a.pdf", mime_type="application/pdf"),
            create_file_block(file_id="file-9"),
            {
                "type": "file",
                "source_type": "base64",
                "data": PDF64,
                "mime_type": "application/pdf",
            },
            {"type": "file", "source_type": "id", "id": "file-9"},
            {"type": "file", "source_type": "text", "url": "v0 plain text lives under url"},
            {
                "type": "file",
                "base64": base64.b64encode(b"csv,rows").decode(),
                "mime_type": "text/csv",
            },
            {"type": "file", "base64": PNG64, "mime_type": "image/png"},
        ]
    )
    assert texts == ["v0 plain text lives under url", "csv,rows"]
    assert media == [
        Media("document", size=len(PDF)),
        Media("document"),
        Media("file"),
        Media("document", size=len(PDF)),
        Media("file"),
        IMAGE,
    ]


def test_plain_text_blocks() -> None:
    texts, media = read(
        [
            create_plaintext_block("inline text", title="notes"),
            {
                "type": "text-plain",
                "mime_type": "text/plain",
                "base64": base64.b64encode(b"decoded").decode(),
            },
            {"type": "text-plain", "mime_type": "text/plain", "url": "https://example.com/t.txt"},
        ]
    )
    assert texts == ["notes", "inline text", "decoded"]
    assert media == [Media("document")]


def test_anthropic_documents() -> None:
    texts, media = read(
        [
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                "title": "Annual report",
                "context": "from 2024",
                "citations": {"enabled": True},
            },
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "Body."},
            },
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
            {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
            {
                "type": "document",
                "source": {
                    "type": "content",
                    "content": [{"type": "text", "text": "chunk one"}, "chunk two"],
                },
            },
        ]
    )
    assert texts == ["Annual report", "from 2024", "Body.", "chunk one", "chunk two"]
    assert media == [Media("document", size=len(PDF)), Media("document"), Media("document")]
    assert media_pricer()(media[0]) == 3 * 3000  # 12 kB: 3 pages


def test_gemini_media_block() -> None:
    _, media = read(
        [
            {"type": "media", "mime_type": "image/png", "data": PNG},
            {"type": "media", "mime_type": "application/pdf", "file_uri": "gs://b/a.pdf"},
        ]
    )
    assert media == [IMAGE, Media("document")]


# --------------------------------------------------------------------------- reasoning, tools


def test_reasoning_blocks_count_their_text_only() -> None:
    texts, media = read_content(
        AIMessage(
            [
                create_reasoning_block("v1 reasoning"),
                {"type": "thinking", "thinking": "anthropic thinking", "signature": "U0lH" * 100},
                {"type": "redacted_thinking", "data": "RU5D" * 100},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "summary part"}],
                    "encrypted_content": "RU5D" * 100,
                },
                {
                    "type": "reasoning_content",
                    "reasoning_content": {"text": "bedrock", "signature": "x"},
                },
                {"type": "text", "text": "answer"},
            ]
        )
    )
    assert texts == ["v1 reasoning", "anthropic thinking", "summary part", "bedrock", "answer"]
    assert media == []
    assert not any("U0lH" in t or "RU5D" in t for t in texts)


def test_tool_calls_in_content_are_not_counted_twice() -> None:
    message = AIMessage(
        [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_2", "name": "clock", "input": {"tz": "CET"}},
            {"type": "tool_call", "id": "c3", "name": "calc", "args": {"x": 1}},
            {"type": "function_call", "call_id": "toolu_1", "name": "weather", "arguments": "{}"},
            {"type": "function_call", "id": "fc_9", "call_id": "toolu_1", "name": "weather"},
            {
                "type": "server_tool_use",
                "id": "srv_1",
                "name": "web_search",
                "input": {"query": "q"},
            },
            {"type": "tool_call_chunk", "name": "partial", "args": '{"a": ', "id": None},
        ],
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "toolu_1"}],
    )
    texts, media = read_content(message)
    assert texts == [
        "Let me check.",
        'clock {"tz": "CET"}',
        'calc {"x": 1}',
        'web_search {"query": "q"}',
        'partial {"a":',
    ]
    assert media == []


def test_a_human_message_has_no_tool_calls_to_skip() -> None:
    texts, _ = read([{"type": "tool_use", "id": "t1", "name": "f", "input": {}}])
    assert texts == ["f {}"]


def test_tool_results_are_read_recursively() -> None:
    texts, media = read(
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {"type": "text", "text": "rain"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG64},
                    },
                ],
            },
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sunny"},
            {
                "type": "server_tool_result",
                "tool_call_id": "s1",
                "status": "success",
                "output": "ok",
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "s2",
                "content": [{"type": "text", "text": "hit"}],
            },
            {"type": "function_call_output", "call_id": "c", "output": "done"},
            {"type": "non_standard", "value": {"type": "text", "text": "wrapped"}},
            {
                "type": "search_result",
                "source": "https://example.com",
                "title": "Example",
                "content": [{"type": "text", "text": "found"}],
            },
        ]
    )
    assert texts == [
        "rain",
        "sunny",
        "ok",
        "hit",
        "done",
        "wrapped",
        "Example",
        "https://example.com",
        "found",
    ]
    assert media == [IMAGE]


# --------------------------------------------------------------------------- unknown, odd


def test_unknown_blocks_count_their_json_and_lift_payloads() -> None:
    texts, media = read(
        [
            {"type": "custom_widget", "label": "Press me", "blob": PNG64},
            {"image": {"format": "png", "source": {"bytes": PNG}}},  # Bedrock Converse
            {"type": "executable_code", "executable_code": "print(1)", "language": "PYTHON"},
        ]
    )
    assert len(texts) == 3
    assert "Press me" in texts[0] and "custom_widget" in texts[0]
    assert "print(1)" in texts[2]
    assert media == [IMAGE, IMAGE]


def test_malformed_known_blocks_fall_back_to_json() -> None:
    texts, media = read(
        [
            {"type": "text", "text": None},
            {"type": "text", "text": ["not", "a", "string"]},
            {"type": "input_audio", "input_audio": "nope"},
            {"type": "non_standard", "value": 3},
            {"type": 7, "x": "y"},
            {"type": "image_url", "image_url": 12},
        ]
    )
    assert len(texts) == 5 and all(isinstance(t, str) and t for t in texts)
    assert media == [Media("image")]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.binary(max_size=40),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "text",
                    "source",
                    "image_url",
                    "data",
                    "url",
                    "base64",
                    "input",
                    "content",
                    "value",
                    "file",
                    "source_type",
                    "mime_type",
                    "id",
                    "args",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
block_types = st.sampled_from(
    [
        "text",
        "image",
        "image_url",
        "input_image",
        "audio",
        "video",
        "file",
        "input_file",
        "document",
        "media",
        "text-plain",
        "input_audio",
        "reasoning",
        "thinking",
        "tool_use",
        "tool_call",
        "tool_result",
        "x_tool_result",
        "non_standard",
        "search_result",
        "unknown",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(
        st.tuples(block_types, st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
        max_size=4,
    )
)
def test_read_content_never_raises(blocks: list[tuple[str, dict[str, Any]]]) -> None:
    content = [{**body, "type": kind} for kind, body in blocks]
    texts, media = read_content(AIMessage(content))
    assert all(isinstance(t, str) for t in texts)
    assert all(isinstance(m, Media) for m in media)


@pytest.mark.parametrize("policy", ["chat", "rag", "recall"])
def test_a_lone_surrogate_in_a_text_is_selected_and_reported(policy: str) -> None:
    """A message text holding half an emoji (a stream cut inside a surrogate pair) is
    selected under every policy, with and without the report, and asked about with
    recall: the messages come back untouched, the report's items carry U+FFFD there."""
    from cupel_langchain import select_messages, select_messages_with_report

    history = [HumanMessage("hi \ud83d there"), AIMessage("ok"), HumanMessage("next \ud83d")]
    kept = select_messages(history, max_tokens=100, policy=policy)
    assert [id(m) for m in kept] == [id(m) for m in history]
    again, report = select_messages_with_report(history, max_tokens=100, policy=policy)
    assert again == kept and history[0].content == "hi \ud83d there"
    contents = {entry.item.content for entry in report.included}
    assert "hi \ufffd there" in contents and "next \ufffd" in contents
