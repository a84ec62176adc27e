"""read_blocks on real LlamaIndex chat messages: every content-block type of
llama-index-core 0.14 with its known text and media; base64 never in the text, files
read only up to a bound, a missing file an unknown size."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import (
    AudioBlock,
    BaseContentBlock,
    CacheControl,
    CachePoint,
    CitableBlock,
    CitationBlock,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)
from llama_index.core.llms import ChatMessage

from cupel.counting import Media, media_pricer
from cupel_llamaindex import _content
from cupel_llamaindex._content import read_blocks


def png(width: int, height: int, extra: int = 200) -> bytes:
    body = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + body + struct.pack(">I", zlib.crc32(body))
    return b"\x89PNG\r\n\x1a\n" + chunk + b"\x00" * extra


def jpeg(width: int, height: int, exif: int) -> bytes:
    def segment(marker: int, payload: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload

    return (
        b"\xff\xd8"
        + segment(0xE1, b"Exif\x00\x00" + b"\x00" * exif)
        + segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\xff\xd9"
    )


def wav(seconds: float, rate: int = 8_000) -> bytes:
    data = b"\x00\x00" * int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


PNG = png(1024, 768)
PDF = b"%PDF-1.7\n" + b"\x01" * 12_000


def read(*blocks: Any, role: str = "user") -> tuple[list[str], list[Media]]:
    texts, media = read_blocks(ChatMessage(role=role, blocks=list(blocks)))
    encoded = [base64.b64encode(b).decode()[:40] for b in (PNG, PDF)]
    assert not any(e in t for t in texts for e in encoded)
    return texts, media


def test_text_blocks_and_plain_content() -> None:
    assert read(TextBlock(text="hello"), TextBlock(text="")) == (["hello"], [])
    assert read_blocks(ChatMessage(role="user", content="plain")) == (["plain"], [])
    assert read_blocks(ChatMessage(role="assistant")) == ([], [])


def test_image_block_bytes_are_stored_as_base64_and_read() -> None:
    block = ImageBlock(image=PNG, detail="high")
    assert block.image is not None and block.image.startswith(b"iVBOR")  # 0.14 stores base64
    texts, media = read(block)
    assert texts == []
    assert media == [Media("image", 1024, 768, "high", len(PNG))]
    assert media_pricer("openai")(media[0]) == 765


def test_image_block_raw_bytes_and_streams() -> None:
    raw = ImageBlock.model_construct(image=PNG, detail=None, path=None, url=None)
    assert read(raw)[1] == [Media("image", 1024, 768, size=len(PNG))]
    stream = io.BytesIO(PNG)
    stream.seek(5)
    assert read(ImageBlock(image=stream))[1] == [Media("image", 1024, 768, size=len(PNG))]
    assert stream.tell() == 5  # the position is left where it was


def test_image_block_path_reads_only_the_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "photo.jpg"
    big.write_bytes(jpeg(4000, 3000, exif=30_000) + b"\x00" * 2_000_000)
    reads: list[int] = []
    real_open = open

    class Spy:
        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def read(self, n: int = -1) -> bytes:
            reads.append(n)
            data: bytes = self.handle.read(n)
            return data

        def fileno(self) -> int:
            return int(self.handle.fileno())

    monkeypatch.setattr(_content, "open", lambda p, m: Spy(real_open(p, m)), raising=False)
    _, media = read(ImageBlock(path=big))
    assert media == [Media("image", 4000, 3000, size=big.stat().st_size)]
    assert reads and all(0 < n <= 256 * 1024 for n in reads)


def test_image_block_missing_file_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "gone.png"
    path.write_bytes(PNG)
    block = ImageBlock(path=path)  # FilePath must exist when the block is made
    path.unlink()
    assert read(block)[1] == [Media("image")]
    assert media_pricer()(Media("image")) == 1600


def test_image_block_urls() -> None:
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    _, media = read(
        ImageBlock(url=data_url),
        ImageBlock(url="https://example.com/cat.png", detail="low"),
    )
    assert media == [Media("image", 1024, 768, size=len(PNG)), Media("image", detail="low")]


def test_audio_and_video_blocks(tmp_path: Path) -> None:
    sound = wav(3.0)
    clip = tmp_path / "clip.wav"
    clip.write_bytes(sound)
    mp4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 5000
    _, media = read(
        AudioBlock(audio=sound),
        AudioBlock(path=clip),
        AudioBlock(url="https://example.com/a.mp3"),
        VideoBlock(video=mp4, fps=2),
        VideoBlock(url="https://example.com/v.mp4"),
    )
    assert [m.kind for m in media] == ["audio", "audio", "audio", "video", "video"]
    assert media[0].seconds == pytest.approx(3.0) and media[0].size == len(sound)
    assert media[1].seconds == pytest.approx(3.0) and media[1].size == len(sound)
    assert media[2] == Media("audio")
    assert media[3] == Media("video", size=len(mp4))
    assert media[4] == Media("video")
    assert media_pricer()(media[0]) == 96


def test_document_blocks(tmp_path: Path) -> None:
    pdf_path = tmp_path / "a.pdf"
    pdf_path.write_bytes(PDF)
    texts, media = read(
        DocumentBlock(data=PDF, title="Report"),
        DocumentBlock(path=pdf_path),
        DocumentBlock(path=str(tmp_path / "missing.pdf")),
        DocumentBlock(url="https://example.com/b.pdf"),
        DocumentBlock(data=b"just some notes", document_mimetype="text/plain", title="notes"),
    )
    assert texts == [
        "Report",
        "input_document",
        "input_document",
        "input_document",
        "notes",
        "just some notes",
    ]
    assert media == [
        Media("document", size=len(PDF)),
        Media("document", size=len(PDF)),
        Media("document"),
        Media("document"),
    ]
    assert media_pricer()(media[0]) == 3 * 3000


def test_cache_points_and_tool_calls_are_not_counted() -> None:
    assert read(
        CachePoint(cache_control=CacheControl(type="ephemeral")),
        ToolCallBlock(tool_call_id="c1", tool_name="search", tool_kwargs={"q": "x" * 50}),
        role="assistant",
    ) == ([], [])


def test_thinking_blocks_count_their_text() -> None:
    assert read(
        ThinkingBlock(content="Think first.", num_tokens=4),
        ThinkingBlock(content=None, num_tokens=100),
        TextBlock(text="Answer."),
        role="assistant",
    ) == (["Think first.", "Answer."], [])


def test_citable_and_citation_blocks() -> None:
    texts, media = read(
        CitableBlock(
            title="Guide",
            source="https://example.com/guide",
            content=[TextBlock(text="Step one."), ImageBlock(image=PNG)],
        ),
        CitationBlock(
            cited_content=TextBlock(text="quoted"),
            source="doc-1",
            title="Doc",
            additional_location_info={"start": 0},
        ),
    )
    assert texts == ["Guide", "https://example.com/guide", "Step one.", "Doc", "doc-1", "quoted"]
    assert media == [Media("image", 1024, 768, size=len(PNG))]


def test_an_unknown_block_counts_its_json_without_payloads() -> None:
    class Sticker(BaseContentBlock):
        block_type: str = "sticker"
        label: str
        art: bytes

    message = ChatMessage.model_construct(
        role=MessageRole.USER, additional_kwargs={}, blocks=[Sticker(label="wave", art=PNG)]
    )
    texts, media = read_blocks(message)
    assert len(texts) == 1 and "wave" in texts[0] and "sticker" in texts[0]
    assert base64.b64encode(PNG).decode()[:20] not in texts[0] and "PNG" not in texts[0]
    assert media == [Media("image", 1024, 768, size=len(PNG))]


@pytest.mark.parametrize("policy", ["chat", "recall"])
def test_a_lone_surrogate_in_a_text_is_selected_and_reported(policy: str) -> None:
    """A message text holding half an emoji is kept by the memory under every policy and
    its report reads: the messages come back untouched, the items carry U+FFFD."""
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(token_limit=100, policy=policy)
    history = [
        ChatMessage(role="user", content="hi \ud83d there"),
        ChatMessage(role="assistant", content="ok"),
        ChatMessage(role="user", content="next \ud83d"),
    ]
    for message in history:
        memory.put(message)
    window = memory.get()
    assert [m.content for m in window] == [m.content for m in history]
    report = memory.last_report
    assert report is not None
    assert any("hi \ufffd there" in entry.item.content for entry in report.included)
