"""Media pricing: images, audio, video and documents, priced the way providers bill them.

An adapter reads each non-text part of a message into a :class:`Media` (what it is and
what is cheaply known about it: pixel size, inline byte size, duration);
:func:`media_pricer` turns one into a token count. Nothing here decodes an image or reads
more than a bounded prefix of a payload: :func:`image_size` parses PNG, JPEG, GIF and
WebP headers, :func:`base64_image_size` decodes only as much base64 as the header needs,
:func:`describe_media` builds a :class:`Media` from base64, bytes or a URL, and
:func:`split_payloads` turns an unrecognized block into JSON text with its binary
payloads lifted out as media.

Images follow ``image_tokens`` (default ``"max"``, the larger of the two rules below):

* ``"openai"``, OpenAI's rule for GPT-4o-class models (:func:`openai_image_tokens`):
  ``detail="low"`` costs 85; otherwise the image is scaled down to fit 2048×2048, then
  its shortest side down to 768 px, and costs 170 per 512 px tile plus 85.
* ``"anthropic"``, Anthropic's rule (:func:`anthropic_image_tokens`): scaled down so the
  long edge is at most 1,568 px and the area at most 1,200,000 px (~1.15 MP, the
  ~1,600-token cap), then ``ceil(width * height / 750)``.
* an ``int``: that flat price for every image; a callable ``(width, height, detail)``:
  its result. An image of unknown size costs :data:`UNKNOWN_IMAGE_TOKENS` (1,600) under
  every rule but the flat ``int``.

Other media have no published per-byte price, so each kind has a conservative rule,
from the best thing known (``seconds``, else ``size``, else a fixed default):

========  ===================================  ========================================
kind      rule                                 basis
========  ===================================  ========================================
audio     ``ceil(seconds * 32)``               Gemini's 32 tokens/s (OpenAI's GPT-4o
                                               audio input: 10 tokens/s)
audio     ``seconds = size / 2,000``           16 kbit/s, a low-bitrate speech encoding
                                               (WAV durations are read from the header)
audio     60 s (1,920)                         nothing known (a URL or file id)
video     ``ceil(seconds * 263)``              Gemini's 263 tokens/s (258 per frame at
                                               1 frame/s plus 32 of audio)
video     ``seconds = size / 62,500``          500 kbit/s, a low-bitrate encoding
video     60 s (15,780)                        nothing known
document  3,000 per page, pages =              a PDF page is billed as its text plus its
          ``ceil(size / 5,000)`` in [1, 100]   image (Anthropic, OpenAI); 100 pages is
                                               the per-request limit
document  5 pages (15,000)                     nothing known
file      as ``document``                      a file is most often a PDF
========  ===================================  ========================================

A kind not in the table is priced as ``file``.

>>> price = media_pricer()
>>> price(Media("image", width=1024, height=1024))
1399
>>> media_pricer("openai")(Media("image", width=1024, height=1024, detail="low"))
85
>>> price(Media("audio", seconds=10.0))
320
>>> price(Media("document"))
15000
"""

from __future__ import annotations

import binascii
import json
import math
import numbers
import re
import struct
from base64 import b64decode
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias
from urllib.parse import unquote_to_bytes

from cupel._errors import ConfigurationError

__all__ = [
    "UNKNOWN_IMAGE_TOKENS",
    "ImageTokens",
    "Media",
    "anthropic_image_tokens",
    "base64_image_size",
    "describe_media",
    "image_size",
    "media_pricer",
    "openai_image_tokens",
    "split_payloads",
]

UNKNOWN_IMAGE_TOKENS = 1600
"""The price of an image of unknown size: about the most a single image costs under
Anthropic's rule, and more than OpenAI's high-detail price for most shapes."""

ImageTokens: TypeAlias = (
    Literal["max", "openai", "anthropic"] | int | Callable[[int, int, str | None], int]
)
"""How :func:`media_pricer` prices an image: ``"max"``, ``"openai"``, ``"anthropic"``, a
flat ``int`` per image, or a callable ``(width, height, detail) -> int``."""

# OpenAI (GPT-4o class)
_OPENAI_LOW = 85
_OPENAI_BASE = 85
_OPENAI_TILE = 170
_OPENAI_TILE_PX = 512
_OPENAI_FIT = 2048
_OPENAI_SHORT = 768
# Anthropic
_ANTHROPIC_LONG_EDGE = 1568
_ANTHROPIC_MAX_PIXELS = 1_200_000
_ANTHROPIC_PIXELS_PER_TOKEN = 750
# Audio and video: tokens a second, bytes a second, seconds when nothing is known
_AUDIO = (32, 2_000, 60)
_VIDEO = (263, 62_500, 60)
_DOCUMENT_TOKENS_PER_PAGE = 3_000
_DOCUMENT_BYTES_PER_PAGE = 5_000
_DOCUMENT_MAX_PAGES = 100
_DEFAULT_DOCUMENT_PAGES = 5

# How far into a payload the header parsers may read (JPEG's SOF can sit after large
# EXIF / ICC segments); the first try is much smaller.
_HEADER_LIMIT = 256 * 1024
_FIRST_READ = 1024


@dataclass(frozen=True, slots=True)
class Media:
    """A non-text part of a message, as an adapter reads it.

    ``kind`` is ``"image"``, ``"audio"``, ``"video"``, ``"document"`` or ``"file"``;
    ``width`` / ``height`` the pixel size of an image when known; ``detail`` OpenAI's
    ``"low"`` / ``"high"`` / ``"auto"`` (``None``: not given); ``size`` the byte length of
    inline data (decoded); ``seconds`` the duration of audio or video when known.

    >>> Media("image", width=640, height=480)
    Media(kind='image', width=640, height=480, detail=None, size=None, seconds=None)
    """

    kind: str
    width: int | None = None
    height: int | None = None
    detail: str | None = None
    size: int | None = None
    seconds: float | None = None


# --------------------------------------------------------------------------- headers


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG, GIF or WebP header, or ``None``.

    Only the header is parsed (no decoding, no image library); ``data`` may be just a
    prefix of the file. Truncated, corrupt or unrecognized data gives ``None``, never an
    exception.

    >>> png = b"\\x89PNG\\r\\n\\x1a\\n" + b"\\x00\\x00\\x00\\rIHDR" + (640).to_bytes(4, "big")
    >>> image_size(png + (480).to_bytes(4, "big"))
    (640, 480)
    >>> image_size(png) is None
    True
    """
    found = _scan_image(data)
    return found if isinstance(found, tuple) else None


def _scan_image(data: object) -> tuple[int, int] | int | None:
    """The size, or how many bytes a JPEG header needs to go on, or ``None``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return None
    try:
        buf = bytes(data[:_HEADER_LIMIT]) if len(data) > _HEADER_LIMIT else bytes(data)
        if buf.startswith(b"\x89PNG\r\n\x1a\n"):
            return _png(buf)
        if buf.startswith(b"\xff\xd8"):
            return _jpeg(buf)
        if buf[:6] in (b"GIF87a", b"GIF89a"):
            return _positive(*struct.unpack_from("<HH", buf, 6)) if len(buf) >= 10 else None
        if buf[:4] == b"RIFF" and buf[8:12] == b"WEBP":
            return _webp(buf)
    except (struct.error, ValueError, IndexError):
        return None
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _png(buf: bytes) -> tuple[int, int] | None:
    if len(buf) < 24 or buf[12:16] != b"IHDR":
        return None
    return _positive(*struct.unpack_from(">II", buf, 16))


# SOFn markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_NO_LENGTH = frozenset({0x01, *range(0xD0, 0xD9)})  # TEM, RSTn, SOI


def _jpeg(buf: bytes) -> tuple[int, int] | int | None:
    pos = 2
    end = len(buf)
    while True:
        if pos >= end:
            return pos + 2
        if buf[pos] != 0xFF:
            return None
        while pos < end and buf[pos] == 0xFF:  # fill bytes
            pos += 1
        if pos >= end:
            return pos + 2
        marker = buf[pos]
        pos += 1
        if marker in _NO_LENGTH:
            continue
        if marker in (0xD9, 0xDA, 0x00):  # EOI or SOS before any frame: no size
            return None
        if pos + 2 > end:
            return pos + 2
        (length,) = struct.unpack_from(">H", buf, pos)
        if length < 2:
            return None
        if marker in _SOF:
            if pos + 7 > end:
                return pos + 7
            height, width = struct.unpack_from(">HH", buf, pos + 3)
            return _positive(width, height)
        pos += length


def _webp(buf: bytes) -> tuple[int, int] | None:
    chunk = buf[12:16]
    if chunk == b"VP8 ":
        if len(buf) < 30 or buf[23:26] != b"\x9d\x01\x2a":
            return None
        width, height = struct.unpack_from("<HH", buf, 26)
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":
        if len(buf) < 25 or buf[20] != 0x2F:
            return None
        (bits,) = struct.unpack_from("<I", buf, 21)
        return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        if len(buf) < 30:
            return None
        width = int.from_bytes(buf[24:27], "little") + 1
        height = int.from_bytes(buf[27:30], "little") + 1
        return (width, height)
    return None


_DATA_URL = re.compile(r"data:([^,;]*)((?:;[^,;]*)*?)(;base64)?,", re.IGNORECASE)
_B64_STRIP = re.compile(r"\s+")
_B64_SPACE_BYTES = re.compile(rb"\s")
_URLSAFE = str.maketrans("-_", "+/")


def _data_url(url: str) -> tuple[str, bool, int] | None:
    """``(mime, is_base64, payload offset)`` of a ``data:`` URL, or ``None``."""
    if url[:5].lower() != "data:":
        return None
    match = _DATA_URL.match(url, 0, min(len(url), 512))
    if match is None:
        return None
    return match.group(1).strip().lower(), match.group(3) is not None, match.end()


def _b64_prefix(text: str, start: int, chars: int) -> bytes | None:
    """Decode about ``chars`` base64 characters of ``text`` from ``start``."""
    chunk = text[start : start + chars]
    if _B64_STRIP.search(chunk):
        chunk = _B64_STRIP.sub("", text[start : start + 2 * chars])[:chars]
    chunk = chunk.translate(_URLSAFE).rstrip("=")
    chunk = chunk[: len(chunk) // 4 * 4]
    try:
        return b64decode(chunk, validate=True)
    except (binascii.Error, ValueError):
        return None


def _b64_length(text: str | bytes, start: int = 0) -> int:
    """The decoded length of base64 ``text[start:]`` (without decoding it). Line breaks
    are counted only when the first 4 KiB have any (MIME wraps every 76 characters)."""
    n = len(text) - start
    if isinstance(text, bytes):
        if _B64_SPACE_BYTES.search(text, start, start + 4096):
            n -= sum(text.count(c, start) for c in (b"\n", b"\r", b" ", b"\t"))
        pads = text.count(b"=", max(start, len(text) - 3))
    else:
        if _B64_STRIP.search(text, start, start + 4096):
            n -= sum(text.count(c, start) for c in ("\n", "\r", " ", "\t"))
        pads = text.count("=", max(start, len(text) - 3))
    return max(0, n * 3 // 4 - pads)


def base64_image_size(data: str) -> tuple[int, int] | None:
    """``(width, height)`` of a base64-encoded image or a ``data:`` URL, or ``None``.

    Only a bounded prefix is decoded: a first kilobyte, then more only while a JPEG's
    segments still lead past it (up to 256 KiB). Never raises.

    >>> base64_image_size("data:image/gif;base64,R0lGODlhAgADAIAAAP///wAAACwAAAAAAgADAAAC")
    (2, 3)
    >>> base64_image_size("not base64!") is None
    True
    """
    if not isinstance(data, str):
        return None
    return _b64_image_size(data, 0)


def _b64_image_size(data: str, start: int) -> tuple[int, int] | None:
    parsed = _data_url(data[start : start + 512])
    if parsed is not None:
        _, is_base64, offset = parsed
        start += offset
        if not is_base64:
            return image_size(unquote_to_bytes(data[start : start + _HEADER_LIMIT * 3]))
    want = _FIRST_READ
    while True:
        prefix = _b64_prefix(data, start, -(-want // 3) * 4)
        if prefix is None:
            return None
        found = _scan_image(prefix)
        if not isinstance(found, int):
            return found
        if found > _HEADER_LIMIT or len(prefix) < want:  # past the bound, or the end
            return None
        want = min(max(found + _FIRST_READ * 4, want * 3 // 2), _HEADER_LIMIT)


def _wav_seconds(buf: bytes, total: int | None) -> float | None:
    """The duration of a RIFF/WAVE file from its header, or ``None``."""
    if len(buf) < 12 or buf[:4] != b"RIFF" or buf[8:12] != b"WAVE":
        return None
    pos, byte_rate = 12, 0
    while pos + 8 <= len(buf):
        chunk = buf[pos : pos + 4]
        length = int.from_bytes(buf[pos + 4 : pos + 8], "little")
        if chunk == b"fmt " and pos + 20 <= len(buf):
            byte_rate = int.from_bytes(buf[pos + 16 : pos + 20], "little")
        elif chunk == b"data":
            if byte_rate <= 0:
                return None
            if total is not None:  # streaming writers leave 0 or 0xFFFFFFFF here
                remaining = max(0, total - pos - 8)
                length = remaining if length in (0, 0xFFFFFFFF) else min(length, remaining)
            return length / byte_rate
        pos += 8 + length + (length & 1)
    return None


# --------------------------------------------------------------------------- describing


def _kind_of_mime(mime: str | None) -> str | None:
    if not mime:
        return None
    mime = mime.split(";", 1)[0].strip().lower()
    major = mime.split("/", 1)[0]
    if major in ("image", "audio", "video"):
        return major
    if mime == "application/pdf" or major == "text":
        return "document"
    return None


def _kind_of_bytes(head: bytes) -> str | None:
    if _scan_image(head) is not None:
        return "image"
    if head.startswith(b"%PDF"):
        return "document"
    if (head[:4] == b"RIFF" and head[8:12] == b"WAVE") or head[:4] in (b"fLaC", b"OggS"):
        return "audio"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "audio"
    if head[4:8] == b"ftyp" or head[:4] == b"\x1a\x45\xdf\xa3":
        return "video"
    return None


def describe_media(
    kind: str | None = None,
    *,
    base64: str | bytes | None = None,
    data: bytes | None = None,
    url: str | None = None,
    mime: str | None = None,
    detail: str | None = None,
    size: int | None = None,
) -> Media:
    """A :class:`Media` from what an adapter holds, reading only a bounded prefix.

    ``base64`` is base64 text (``str`` or ASCII ``bytes``) or a ``data:`` URL; ``data``
    raw bytes (possibly only a prefix, with ``size`` the full length); ``url`` a URL (only
    a ``data:`` URL tells anything). ``kind`` ``None`` or ``"file"`` is refined from
    ``mime`` (or the data URL's type), else from the payload's magic bytes. Images get
    their pixel size, WAV audio its duration. Never raises.

    >>> describe_media(url="data:image/gif;base64,R0lGODlhAgADAIAAAP///wAAACwAAAAAAgADAAAC")
    Media(kind='image', width=2, height=3, detail=None, size=30, seconds=None)
    >>> describe_media("image", url="https://example.com/cat.png", detail="low")
    Media(kind='image', width=None, height=None, detail='low', size=None, seconds=None)
    """
    head: bytes | None = None
    text: str | None = None
    start = 0
    try:
        if base64 is None and isinstance(url, str) and _data_url(url) is not None:
            base64 = url
        if isinstance(base64, (bytes, bytearray)):
            base64 = bytes(base64)
            if _data_url(base64[:512].decode("latin-1")) is not None:
                base64 = base64.decode("latin-1")
            else:
                size = _b64_length(base64) if size is None else size
                base64 = base64[: _HEADER_LIMIT * 2].decode("latin-1")
        if isinstance(base64, str):
            parsed = _data_url(base64)
            if parsed is not None:
                url_mime, is_base64, start = parsed
                mime = mime or url_mime or None
                if not is_base64:  # percent-encoded: the prefix, and the size if whole
                    encoded = base64[start : start + _HEADER_LIMIT * 3]
                    raw = unquote_to_bytes(encoded)
                    whole = start + len(encoded) == len(base64)
                    if size is None:
                        size = len(raw) if whole else len(base64) - start
                    data, base64 = raw[:_HEADER_LIMIT], None
            if isinstance(base64, str):
                text = base64
                if size is None:
                    size = _b64_length(base64, start)
                head = _b64_prefix(base64, start, 64)
        if isinstance(data, (bytes, bytearray, memoryview)):
            head = bytes(data[:64])
            if size is None:
                size = len(data)
        if kind in (None, "file"):
            kind = _kind_of_mime(mime) or (_kind_of_bytes(head) if head else None) or "file"
        if kind == "image":
            found = _b64_image_size(text, start) if text is not None else None
            if found is None and data is not None:
                found = image_size(bytes(data[:_HEADER_LIMIT]))
            if found is not None:
                return Media(kind, *found, detail, size)
        elif kind == "audio":
            wav = _b64_prefix(text, start, 4096) if text is not None else None
            if wav is None and data is not None:
                wav = bytes(data[:4096])
            if wav is not None:
                return Media(kind, detail=detail, size=size, seconds=_wav_seconds(wav, size))
        return Media(kind, detail=detail, size=size)
    except Exception:  # a never-raising reader: an odd payload is just unknown
        return Media(kind or "file", detail=detail)


_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/_-]{256,}={0,2}")
_BASE64_TAIL = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")


def _looks_base64(text: str) -> bool:
    """256+ characters of the base64 alphabet (a long one: its first 4 KiB and its end)."""
    if len(text) <= 8192:
        return _BASE64_TEXT.fullmatch(text) is not None
    return bool(_BASE64_TEXT.fullmatch(text[:4096]) and _BASE64_TAIL.fullmatch(text[-64:]))


_MAX_DEPTH = 32


def split_payloads(value: object) -> tuple[str, list[Media]]:
    """The JSON text of ``value`` with its inline binary payloads lifted out as media.

    ``bytes``, ``data:`` URLs and long base64 strings (256+ characters) are replaced by
    ``"<media>"`` and described with :func:`describe_media`; everything else is kept
    (pydantic models through ``model_dump``, other objects as ``str``). Adapters use it
    to count an unrecognized block conservatively without counting base64 as text.

    >>> split_payloads({"type": "custom", "note": "hi", "blob": b"%PDF-1.7"})
    ('{"type": "custom", "note": "hi", "blob": "<media>"}', [Media(kind='document', ...)])
    """
    media: list[Media] = []

    def walk(item: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return "..."
        if item is None or isinstance(item, (bool, int, float)):
            return item
        if isinstance(item, str):
            if _data_url(item) is not None or _looks_base64(item):
                media.append(describe_media(base64=item))
                return "<media>"
            return item
        if isinstance(item, (bytes, bytearray, memoryview)):
            media.append(describe_media(data=bytes(item[:_HEADER_LIMIT]), size=len(item)))
            return "<media>"
        if isinstance(item, Mapping):
            return {str(key): walk(val, depth + 1) for key, val in item.items()}
        if isinstance(item, (list, tuple, set, frozenset)):
            return [walk(val, depth + 1) for val in item]
        dump = getattr(item, "model_dump", None)
        if callable(dump):
            try:
                return walk(dump(), depth + 1)
            except Exception:
                return str(item)
        return str(item)

    try:
        text = json.dumps(walk(value, 0), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = ""
    return text, media


# --------------------------------------------------------------------------- pricing


def _check_size(width: int, height: int) -> None:
    for name, value in (("width", width), ("height", height)):
        if type(value) is not int or value <= 0:
            raise ConfigurationError(
                f"image {name} must be a positive int, got {value!r}", field=name, value=value
            )


def openai_image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """OpenAI's image price for GPT-4o-class models.

    ``detail="low"``: 85. Otherwise (``"high"``, ``"auto"``, ``None``): scale down to fit
    2048×2048, then so the shortest side is at most 768 px (never up), and count 170 per
    512 px tile plus 85.

    >>> openai_image_tokens(1024, 1024, "high")
    765
    >>> openai_image_tokens(2048, 4096, None)
    1105
    >>> openai_image_tokens(4096, 8192, "low")
    85
    """
    _check_size(width, height)
    if _is_low(detail):
        return _OPENAI_LOW
    for side, limit in ((max, _OPENAI_FIT), (min, _OPENAI_SHORT)):
        edge = side(width, height)
        if edge > limit:  # exact integer scaling, rounded up
            width, height = -(-width * limit // edge), -(-height * limit // edge)
    tiles = -(-width // _OPENAI_TILE_PX) * -(-height // _OPENAI_TILE_PX)
    return _OPENAI_TILE * tiles + _OPENAI_BASE


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's image price: scale down (aspect kept) so the long edge is at most
    1,568 px and the area at most 1,200,000 px (~1.15 MP), then ``ceil(w * h / 750)``.

    >>> anthropic_image_tokens(1000, 1000)
    1334
    >>> anthropic_image_tokens(2000, 1500)
    1598
    """
    _check_size(width, height)
    scale = min(
        1.0,
        _ANTHROPIC_LONG_EDGE / max(width, height),
        math.sqrt(_ANTHROPIC_MAX_PIXELS / (width * height)),
    )
    if scale < 1.0:
        width = max(1, math.floor(width * scale))
        height = max(1, math.floor(height * scale))
    return -(-(width * height) // _ANTHROPIC_PIXELS_PER_TOKEN)


_NAMED_RULES: dict[str, Callable[[int, int, str | None], int]] = {
    "max": lambda w, h, detail: max(
        openai_image_tokens(w, h, detail), anthropic_image_tokens(w, h)
    ),
    "openai": openai_image_tokens,
    "anthropic": lambda w, h, detail: anthropic_image_tokens(w, h),
}


def _image_rule(image_tokens: object) -> Callable[[Media], int]:
    """The image pricer for ``image_tokens``, validated."""

    def refused(what: str) -> ConfigurationError:
        return ConfigurationError(
            "image_tokens must be 'max', 'openai', 'anthropic', an int >= 0 or a callable "
            f"(width, height, detail), got {what} {image_tokens!r}",
            field="image_tokens",
            value=image_tokens,
        )

    if isinstance(image_tokens, bool):
        raise refused("the bool")
    if isinstance(image_tokens, numbers.Integral):
        if image_tokens < 0:
            raise refused("the negative int")
        flat = int(image_tokens)
        return lambda media: flat
    rule: Callable[..., Any]
    if isinstance(image_tokens, str):
        if image_tokens not in _NAMED_RULES:
            raise refused("the unknown rule")
        rule = _NAMED_RULES[image_tokens]
    elif callable(image_tokens):
        rule = image_tokens
    else:
        raise refused(type(image_tokens).__name__)
    low_openai = image_tokens == "openai"
    custom = rule is image_tokens

    def price(media: Media) -> int:
        width, height = media.width, media.height
        if not (type(width) is int and type(height) is int and width > 0 and height > 0):
            return _OPENAI_LOW if low_openai and _is_low(media.detail) else UNKNOWN_IMAGE_TOKENS
        result = rule(width, height, media.detail)
        if custom and (type(result) is not int or result < 0):
            raise ConfigurationError(
                f"image_tokens callable returned {result!r} for a {width}x{height} "
                f"image (detail={media.detail!r}); it must return an int >= 0",
                field="image_tokens",
                value=result,
            )
        return result

    return price


def _is_low(detail: str | None) -> bool:
    return isinstance(detail, str) and detail.strip().lower() == "low"


def _known(value: float | int | None) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _timed(media: Media, per_second: int, bytes_per_second: int, default: int) -> int:
    seconds = _known(media.seconds)
    if seconds is None:
        size = _known(media.size)
        seconds = size / bytes_per_second if size is not None else float(default)
    return math.ceil(seconds * per_second)


def _document_tokens(media: Media) -> int:
    size = _known(media.size)
    if size is None:
        pages = _DEFAULT_DOCUMENT_PAGES
    else:
        pages = min(_DOCUMENT_MAX_PAGES, max(1, math.ceil(size / _DOCUMENT_BYTES_PER_PAGE)))
    return pages * _DOCUMENT_TOKENS_PER_PAGE


def media_pricer(image_tokens: ImageTokens = "max") -> Callable[[Media], int]:
    """A function pricing one :class:`Media` in tokens (the rules in this module's table).

    ``image_tokens`` is validated here: ``"max"`` (default), ``"openai"``,
    ``"anthropic"``, a flat ``int >= 0`` or a callable ``(width, height, detail) -> int``
    (called only for images of known size; an unknown size costs 1,600; a result that
    is not an ``int >= 0`` raises :class:`~cupel.ConfigurationError`).

    >>> media_pricer("anthropic")(Media("image", width=1000, height=1000))
    1334
    >>> media_pricer(lambda w, h, detail: 100)(Media("image"))
    1600
    >>> media_pricer(-1)
    Traceback (most recent call last):
    ...
    cupel.ConfigurationError: image_tokens must be ..., got the negative int -1
    """
    image = _image_rule(image_tokens)

    def price(media: Media) -> int:
        kind = media.kind
        if kind == "image":
            return image(media)
        if kind == "audio":
            return _timed(media, *_AUDIO)
        if kind == "video":
            return _timed(media, *_VIDEO)
        return _document_tokens(media)

    return price
