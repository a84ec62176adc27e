"""cupel.counting media: header parsing on hand-built images (every prefix, corruption,
random bytes), base64 reading, the providers' image rules and the pricer's rules and
validation."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from collections.abc import Callable

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

import cupel
from cupel.counting import (
    UNKNOWN_IMAGE_TOKENS,
    Media,
    anthropic_image_tokens,
    base64_image_size,
    describe_media,
    image_size,
    media_pricer,
    openai_image_tokens,
    split_payloads,
)

# --------------------------------------------------------------------------- builders


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" + b"\x00\x00\x00" * width)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def gif(width: int, height: int, version: bytes = b"89a") -> bytes:
    return b"GIF" + version + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"


def segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def jpeg(width: int, height: int, sof: int = 0xC0, exif: int = 0) -> bytes:
    """SOI, APP0 (JFIF), an APP1 (EXIF) of ``exif`` filler bytes, DQT, DHT, SOFn, SOS."""
    parts = [b"\xff\xd8", segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")]
    if exif:
        parts.append(segment(0xE1, b"Exif\x00\x00" + b"\x4d" * exif))
    parts.append(segment(0xDB, b"\x00" + bytes(range(64))))
    parts.append(segment(0xC4, b"\x00" + b"\x00" * 16))  # DHT: in the SOF range, not a SOF
    components = b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    parts.append(segment(sof, struct.pack(">BHHB", 8, height, width, 3) + components))
    parts.append(segment(0xDA, b"\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00") + b"\x12\x34")
    parts.append(b"\xff\xd9")
    return b"".join(parts)


def riff(chunk: bytes, data: bytes) -> bytes:
    body = b"WEBP" + chunk + struct.pack("<I", len(data)) + data + b"\x00" * (len(data) & 1)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\x30\x01\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 10
    return riff(b"VP8 ", frame)


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    return riff(b"VP8L", b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8)


def webp_vp8x(width: int, height: int) -> bytes:
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return riff(b"VP8X", b"\x10\x00\x00\x00" + size) + riff(b"VP8L", b"\x2f" + b"\x00" * 8)[12:]


def wav(seconds: float, rate: int = 16_000) -> bytes:
    samples = int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    data = b"\x00\x00" * samples
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"LIST" + struct.pack("<I", 4) + b"INFO"
    body += b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


IMAGES: dict[str, Callable[[], bytes]] = {
    "png": lambda: png(640, 480),
    "gif87a": lambda: gif(33, 7, b"87a"),
    "gif89a": lambda: gif(300, 200),
    "jpeg-baseline": lambda: jpeg(1024, 768),
    "jpeg-progressive-exif": lambda: jpeg(4000, 3000, sof=0xC2, exif=5000),
    "jpeg-exif-big": lambda: jpeg(123, 45, exif=60_000),
    "webp-vp8": lambda: webp_vp8(800, 600),
    "webp-vp8l": lambda: webp_vp8l(16383, 2),
    "webp-vp8x": lambda: webp_vp8x(5000, 4000),
}
SIZES = {
    "png": (640, 480),
    "gif87a": (33, 7),
    "gif89a": (300, 200),
    "jpeg-baseline": (1024, 768),
    "jpeg-progressive-exif": (4000, 3000),
    "jpeg-exif-big": (123, 45),
    "webp-vp8": (800, 600),
    "webp-vp8l": (16383, 2),
    "webp-vp8x": (5000, 4000),
}

# --------------------------------------------------------------------------- headers


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_image_size_reads_each_format(name: str) -> None:
    assert image_size(IMAGES[name]()) == SIZES[name]


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_every_truncation_gives_the_size_or_none(name: str) -> None:
    data = IMAGES[name]()
    header_end = None
    for cut in range(len(data)):
        found = image_size(data[:cut])
        assert found in (None, SIZES[name]), cut
        if found is not None and header_end is None:
            header_end = cut
    # Once the header is complete the size stays known; before it, nothing is guessed.
    assert header_end is not None and all(
        image_size(data[:cut]) == SIZES[name] for cut in range(header_end, len(data))
    )


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_corrupting_the_header_gives_none_or_a_size_never_an_error(name: str) -> None:
    data = bytearray(IMAGES[name]())
    for index in range(min(len(data), 64)):
        for value in (0x00, 0xFF, data[index] ^ 0x55):
            corrupt = bytes(data[:index]) + bytes([value]) + bytes(data[index + 1 :])
            found = image_size(corrupt)
            assert found is None or (found[0] > 0 and found[1] > 0)


def test_signature_corruption_is_rejected() -> None:
    assert image_size(b"\x89PNX" + png(10, 10)[4:]) is None
    assert image_size(b"GIF88a" + gif(10, 10)[6:]) is None
    assert image_size(b"\xff\xd9" + jpeg(10, 10)[2:]) is None
    assert image_size(b"RIFF\x00\x00\x00\x00WEBQ" + webp_vp8(10, 10)[12:]) is None


def test_zero_sizes_and_odd_inputs_give_none() -> None:
    assert image_size(png(0, 10)) is None
    assert image_size(gif(10, 0)) is None
    assert image_size(jpeg(10, 0)) is None  # height 0: defined later by DNL, unknown here
    assert image_size(b"") is None
    assert image_size("GIF89a" + "x" * 10) is None  # type: ignore[arg-type]
    assert image_size(None) is None  # type: ignore[arg-type]
    assert image_size(bytearray(gif(5, 6))) == (5, 6)
    assert image_size(memoryview(png(7, 8))) == (7, 8)


def test_jpeg_segment_walk_skips_dht_and_stops_at_sos() -> None:
    # A DHT (0xC4) precedes the frame; a scan with no frame before it has no size.
    assert image_size(jpeg(10, 20)) == (10, 20)
    no_frame = b"\xff\xd8" + segment(0xE0, b"JFIF\x00") + segment(0xDA, b"\x00" * 8)
    assert image_size(no_frame) is None


@settings(max_examples=examples(500), deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data: bytes) -> None:
    found = image_size(data)
    assert found is None or (found[0] > 0 and found[1] > 0)
    for magic in (b"\x89PNG\r\n\x1a\n", b"\xff\xd8", b"GIF89a", b"RIFF\x00\x00\x00\x00WEBP"):
        found = image_size(magic + data)
        assert found is None or (found[0] > 0 and found[1] > 0)
    base64_image_size(base64.b64encode(b"\xff\xd8" + data).decode())


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_raises(text: str) -> None:
    base64_image_size(text)
    base64_image_size("data:image/png;base64," + text)
    describe_media(base64=text)
    describe_media("image", url=text)
    split_payloads({"x": text})


def test_pillow_made_images_agree() -> None:
    image_module = pytest.importorskip("PIL.Image")
    for fmt, options in (
        ("PNG", {}),
        ("GIF", {}),
        ("JPEG", {"progressive": True, "exif": b"Exif\x00\x00" + b"\x00" * 4000}),
        ("WEBP", {"lossless": True}),
        ("WEBP", {"quality": 50}),
    ):
        buffer = io.BytesIO()
        image_module.new("RGB", (317, 211), (10, 20, 30)).save(buffer, fmt, **options)
        assert image_size(buffer.getvalue()) == (317, 211), fmt


# --------------------------------------------------------------------------- base64


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize("name", sorted(IMAGES))
def test_base64_and_data_urls(name: str) -> None:
    data = IMAGES[name]()
    assert base64_image_size(b64(data)) == SIZES[name]
    assert base64_image_size(f"data:image/x;base64,{b64(data)}") == SIZES[name]
    assert base64_image_size(base64.urlsafe_b64encode(data).decode()) == SIZES[name]
    wrapped = "\n".join(b64(data)[i : i + 76] for i in range(0, len(b64(data)), 76))
    assert base64_image_size(wrapped) == SIZES[name]


def test_base64_decodes_only_a_bounded_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    from cupel.counting import _media

    decoded: list[int] = []
    real = _media.b64decode

    def spy(text: str, validate: bool = False) -> bytes:
        decoded.append(len(text))
        return real(text, validate=validate)

    monkeypatch.setattr(_media, "b64decode", spy)
    payload = b64(png(640, 480) + b"\x00" * 3_000_000)
    assert base64_image_size(payload) == (640, 480)
    assert max(decoded) <= 2048
    decoded.clear()
    # A JPEG whose frame sits after 60 KB of EXIF: read progressively, never the whole.
    payload = b64(jpeg(123, 45, exif=60_000) + b"\x00" * 3_000_000)
    assert base64_image_size(payload) == (123, 45)
    assert len(decoded) > 1 and max(decoded) < 100_000  # the payload is 4 MB of text


def test_a_frame_past_the_bound_is_unknown() -> None:
    far = jpeg(10, 10, exif=65_000)
    far = far[:2] + segment(0xE2, b"\x00" * 65_000) * 4 + far[2:]  # ~260 KB before SOF
    assert image_size(far) is None
    assert base64_image_size(b64(far)) is None


def test_base64_odd_inputs() -> None:
    assert base64_image_size("") is None
    assert base64_image_size("data:image/png;base64,") is None
    assert base64_image_size("@@@@" * 10) is None
    assert base64_image_size(b64(b"plain text, no image")) is None
    assert base64_image_size(b64(gif(3, 4))[:10]) is None  # truncated before the size
    assert base64_image_size(b"R0lGODlh") is None  # type: ignore[arg-type]
    percent = "data:image/gif," + "".join(f"%{byte:02X}" for byte in gif(9, 8))
    assert base64_image_size(percent) == (9, 8)


# --------------------------------------------------------------------------- describe


def test_describe_media_reads_sizes_kinds_and_durations() -> None:
    data = png(640, 480)
    assert describe_media(base64=b64(data)) == Media("image", 640, 480, size=len(data))
    assert describe_media("image", base64=b64(data).encode()) == Media(
        "image", 640, 480, size=len(data)
    )
    assert describe_media("file", data=data[:30], size=10_000) == Media(
        "image", 640, 480, size=10_000
    )
    pdf = b"%PDF-1.7\n" + b"x" * 991
    assert describe_media("file", base64=b64(pdf)) == Media("document", size=1000)
    assert describe_media(mime="application/pdf").kind == "document"
    assert describe_media("file", mime="audio/mpeg").kind == "audio"
    assert describe_media("file", url="data:video/mp4;base64,AAAA").kind == "video"
    sound = wav(2.5)
    audio = describe_media("audio", base64=b64(sound))
    assert audio.size == len(sound) and audio.seconds == pytest.approx(2.5)
    assert describe_media(data=sound).kind == "audio"
    assert describe_media("image", url="https://example.com/a.png") == Media("image")
    assert describe_media() == Media("file")


def test_split_payloads_lifts_binary_out_of_the_text() -> None:
    data = png(64, 32)
    text, media = split_payloads(
        {
            "type": "custom",
            "note": "keep me",
            "blob": data,
            "inline": f"data:image/png;base64,{b64(data)}",
            "long": b64(b"%PDF" + b"\x00" * 400),
            "nested": [{"deep": b64(data * 3)}],
        }
    )
    assert "keep me" in text and "custom" in text
    assert b64(data)[:20] not in text and "base64" not in text
    assert [m.kind for m in media] == ["image", "image", "document", "image"]
    assert media[0].width == 64 and media[1].height == 32


# --------------------------------------------------------------------------- image rules


def test_openai_documented_examples() -> None:
    assert openai_image_tokens(1024, 1024, "high") == 765
    assert openai_image_tokens(2048, 4096, "high") == 1105
    assert openai_image_tokens(4096, 8192, "low") == 85
    assert openai_image_tokens(1024, 1024, "low") == 85
    assert openai_image_tokens(1024, 1024, "auto") == 765
    assert openai_image_tokens(1024, 1024, None) == 765
    assert openai_image_tokens(1024, 1024, "LOW") == 85


def test_openai_resizing() -> None:
    # 4000x3000 -> 2048x1536 -> 1024x768: 2x2 tiles
    assert openai_image_tokens(4000, 3000, "high") == 4 * 170 + 85
    # 512x512 is never scaled up: one tile
    assert openai_image_tokens(512, 512, "high") == 255
    assert openai_image_tokens(513, 512, "high") == 2 * 170 + 85
    # a long strip: 8192x100 -> 2048x25 (rounded up): 4x1 tiles
    assert openai_image_tokens(8192, 100, "high") == 4 * 170 + 85


def test_anthropic_documented_examples() -> None:
    assert anthropic_image_tokens(1000, 1000) == 1334
    assert anthropic_image_tokens(200, 200) == 54
    assert anthropic_image_tokens(1092, 1092) == 1590  # the documented 1:1 maximum


def test_anthropic_resizing() -> None:
    # 2000x1500 scales to 1264x948 (1.2 MP): 1,598
    assert anthropic_image_tokens(2000, 1500) == 1598
    assert anthropic_image_tokens(4000, 3000) == 1598
    # a long edge over 1,568 px: 3136x500 -> 1568x250
    assert anthropic_image_tokens(3136, 500) == -(-1568 * 250 // 750)
    # never above the cap, whatever the size
    assert all(anthropic_image_tokens(w, h) <= 1600 for w, h in [(8000, 8000), (1, 8000)])


@pytest.mark.parametrize("bad", [0, -5, 1.5, "10", True])
def test_rules_refuse_bad_sizes(bad: object) -> None:
    with pytest.raises(cupel.ConfigurationError):
        openai_image_tokens(bad, 10, None)  # type: ignore[arg-type]
    with pytest.raises(cupel.ConfigurationError):
        anthropic_image_tokens(10, bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- pricer


def test_max_is_the_larger_rule() -> None:
    price = media_pricer()
    assert price(Media("image", 1024, 1024)) == max(765, 1399) == 1399
    assert price(Media("image", 512, 512)) == max(255, 350) == 350
    assert price(Media("image", 100, 100)) == max(255, 14) == 255
    # detail="low" lowers the OpenAI side only; Anthropic has no detail
    assert price(Media("image", 1024, 1024, detail="low")) == 1399
    assert price(Media("image", 100, 100, detail="low")) == 85
    assert price(Media("image")) == UNKNOWN_IMAGE_TOKENS == 1600


def test_named_and_flat_rules() -> None:
    openai = media_pricer("openai")
    assert openai(Media("image", 1024, 1024)) == 765
    assert openai(Media("image", 1024, 1024, detail="low")) == 85
    assert openai(Media("image", detail="low")) == 85  # low is 85 whatever the size
    assert openai(Media("image")) == 1600
    anthropic = media_pricer("anthropic")
    assert anthropic(Media("image", 1000, 1000, detail="low")) == 1334
    assert anthropic(Media("image")) == 1600
    flat = media_pricer(500)
    assert flat(Media("image", 10, 10)) == flat(Media("image")) == 500
    assert media_pricer(0)(Media("image", 4000, 3000)) == 0
    assert media_pricer(numpy.int64(7))(Media("image", 10, 10)) == 7


def test_callable_rule() -> None:
    seen: list[tuple[int, int, str | None]] = []

    def rule(width: int, height: int, detail: str | None) -> int:
        seen.append((width, height, detail))
        return width // 10

    price = media_pricer(rule)
    assert price(Media("image", 640, 480, detail="high")) == 64
    assert price(Media("image")) == 1600  # unknown size: the rule is not asked
    assert seen == [(640, 480, "high")]
    assert price(Media("audio", seconds=1.0)) == 32  # other kinds keep their rules


@pytest.mark.parametrize("result", [-1, 1.5, "10", None, True])
def test_callable_results_are_checked(result: object) -> None:
    price = media_pricer(lambda w, h, d: result)  # type: ignore[arg-type,return-value]
    with pytest.raises(cupel.ConfigurationError) as info:
        price(Media("image", 10, 10))
    assert info.value.field == "image_tokens" and info.value.value is result
    assert repr(result) in str(info.value)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (True, "bool"),
        (-1, "negative"),
        ("gemini", "unknown rule"),
        (1.5, "float"),
        (None, "NoneType"),
    ],
)
def test_pricer_validates_at_construction(value: object, words: str) -> None:
    with pytest.raises(cupel.ConfigurationError) as info:
        media_pricer(value)  # type: ignore[arg-type]
    message = str(info.value)
    assert info.value.field == "image_tokens" and info.value.value is value
    assert words in message and repr(value) in message
    assert "'max', 'openai', 'anthropic'" in message


def test_audio_video_document_rules() -> None:
    price = media_pricer()
    assert price(Media("audio", seconds=10.0)) == 320
    assert price(Media("audio", seconds=0.01)) == 1
    assert price(Media("audio", size=20_000)) == 320  # 10 s at 16 kbit/s
    assert price(Media("audio")) == 60 * 32
    assert price(Media("video", seconds=10.0)) == 2630
    assert price(Media("video", size=625_000)) == 2630  # 10 s at 500 kbit/s
    assert price(Media("video")) == 60 * 263
    assert price(Media("document", size=1)) == 3000
    assert price(Media("document", size=12_000)) == 3 * 3000
    assert price(Media("document", size=10**9)) == 100 * 3000
    assert price(Media("document")) == 5 * 3000
    assert price(Media("file", size=12_000)) == 3 * 3000
    assert price(Media("hologram")) == 5 * 3000  # an unknown kind: priced as a file
    # seconds win over size; a nonsense value falls back to the next thing known
    assert price(Media("audio", seconds=1.0, size=10**9)) == 32
    assert price(Media("audio", seconds=float("nan"), size=2_000)) == 32
    assert price(Media("audio", seconds=-1.0)) == 60 * 32


def test_wav_duration_prices_audio() -> None:
    media = describe_media("audio", base64=b64(wav(3.0)))
    assert media_pricer()(media) == 96
