"""What a LlamaIndex chat message carries: the text a provider bills as text, and its media.

:func:`read_blocks` reads every content block of a ``ChatMessage`` (llama-index-core
0.14) into text parts and :class:`~cupel.counting.Media` parts, for a counter to count
the first and :func:`~cupel.counting.media_pricer` to price the second. Base64 payloads
never end up in the text, and nothing reads more than a bounded prefix of a payload or
file.

==========================  ===========================================================
block                       read as
==========================  ===========================================================
``TextBlock``               its text
``ImageBlock``              an image: pixel size from the ``image`` bytes (stored as
                            base64), the first bytes of ``path`` or a ``data:`` ``url``;
                            an http URL or a missing file: unknown size; ``detail``
``AudioBlock``              audio (WAV durations from the header, else the byte size)
``VideoBlock``              video (the byte size)
``DocumentBlock``           a document (a ``text/*`` one inline: its text), title as text
``CitableBlock``            title, source and its content blocks, read recursively
``CitationBlock``           title, source and the cited content
``ThinkingBlock``           its text (counted like LangChain's reasoning: conservative)
``CachePoint``              nothing
``ToolCallBlock``           nothing: the caller counts tool calls
anything else               its JSON text, payloads lifted out as media
==========================  ===========================================================

>>> from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock
>>> gif = "R0lGODlhAgADAIAAAP///wAAACwAAAAAAgADAAAC"
>>> texts, media = read_blocks(ChatMessage(role="user", blocks=[
...     TextBlock(text="What is this?"),
...     ImageBlock(url=f"data:image/gif;base64,{gif}"),
...     ImageBlock(url="https://example.com/cat.png", detail="low")]))
>>> texts
['What is this?']
>>> [(m.kind, m.width, m.height, m.detail) for m in media]
[('image', 2, 3, None), ('image', None, None, 'low')]
"""

from __future__ import annotations

import binascii
import dataclasses
import os
import re
from base64 import b64decode
from io import IOBase
from typing import Any

from llama_index.core.base.llms.types import (
    AudioBlock,
    CachePoint,
    CitableBlock,
    CitationBlock,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)
from llama_index.core.llms import ChatMessage

from cupel.counting import Media, describe_media, split_payloads

__all__ = ["add_text", "read_block", "read_blocks"]

# How much of a file or stream is read for its header (JPEG frames can follow big EXIF
# segments); the payload itself is never read whole.
_HEADER_BYTES = 256 * 1024
_BASE64_HEAD = re.compile(rb"[A-Za-z0-9+/=_\-\s]*")
_MAX_DEPTH = 8


def read_blocks(message: ChatMessage) -> tuple[list[str], list[Media]]:
    """The text parts a provider bills as text, and the media parts, of ``message``'s
    blocks (see the module table). Never raises on a block's contents.

    >>> from llama_index.core.base.llms.types import ThinkingBlock, ToolCallBlock
    >>> read_blocks(ChatMessage(role="assistant", blocks=[
    ...     ThinkingBlock(content="Check the date."),
    ...     ToolCallBlock(tool_call_id="c1", tool_name="clock", tool_kwargs={})]))
    (['Check the date.'], [])
    """
    texts: list[str] = []
    media: list[Media] = []
    for block in message.blocks:
        read_block(block, texts, media)
    return texts, media


def read_block(block: Any, texts: list[str], media: list[Media], depth: int = 0) -> None:
    """Add one content block's text parts to ``texts`` and its media to ``media`` (what
    :func:`read_blocks` does for each block of a message)."""
    start_texts, start_media = len(texts), len(media)
    try:
        if isinstance(block, TextBlock):
            add_text(texts, block.text)
        elif isinstance(block, ImageBlock):
            image = block.image, block.path, block.url, block.image_mimetype
            media.append(_media("image", *image, detail=block.detail))
        elif isinstance(block, AudioBlock):
            mime = f"audio/{block.format}" if block.format else None
            media.append(_media("audio", block.audio, block.path, block.url, mime))
        elif isinstance(block, VideoBlock):
            media.append(_media("video", block.video, block.path, block.url, block.video_mimetype))
        elif isinstance(block, DocumentBlock):
            _document(block, texts, media)
        elif isinstance(block, (CachePoint, ToolCallBlock)):
            pass
        elif isinstance(block, ThinkingBlock):
            add_text(texts, block.content)
        elif isinstance(block, CitableBlock) and depth < _MAX_DEPTH:
            add_text(texts, block.title)
            add_text(texts, block.source)
            for inner in block.content:
                read_block(inner, texts, media, depth + 1)
        elif isinstance(block, CitationBlock) and depth < _MAX_DEPTH:
            add_text(texts, block.title)
            add_text(texts, block.source)
            read_block(block.cited_content, texts, media, depth + 1)
        else:
            _payloads(block, texts, media)
    except Exception:  # an odd block: its JSON text, never an error
        del texts[start_texts:], media[start_media:]
        _payloads(block, texts, media)


def add_text(texts: list[str], value: object) -> None:
    """Add ``value`` to ``texts`` if it is a non-empty string."""
    if isinstance(value, str) and value:
        texts.append(value)


def _payloads(value: object, texts: list[str], media: list[Media]) -> None:
    text, found = split_payloads(value)
    add_text(texts, text)
    media.extend(found)


def _media(
    kind: str,
    inline: object,
    path: str | os.PathLike[str] | None,
    url: object,
    mime: str | None,
    detail: str | None = None,
) -> Media:
    """A block's media from its inline data, else its file, else its URL (LlamaIndex's
    own order)."""
    if isinstance(inline, bytes | bytearray) and inline:
        found = _inline(kind, bytes(inline), mime)
    elif isinstance(inline, IOBase):
        found = _stream(kind, inline, mime)
    elif path is not None:
        found = _file(kind, path, mime)
    elif url is not None:
        found = describe_media(kind, url=str(url), mime=mime)
    else:
        found = Media(kind)
    return found if detail is None else dataclasses.replace(found, detail=detail)


def _inline(kind: str, data: bytes, mime: str | None) -> Media:
    """Inline bytes: base64 text as LlamaIndex stores them, or raw bytes."""
    if _BASE64_HEAD.fullmatch(data[:64]):
        return describe_media(kind, base64=data, mime=mime)
    return describe_media(kind, data=data[:_HEADER_BYTES], size=len(data), mime=mime)


def _stream(kind: str, stream: IOBase, mime: str | None) -> Media:
    """A stream's first bytes and length, leaving its position where it was."""
    try:
        if not stream.seekable():
            return describe_media(kind, mime=mime)
        position = stream.tell()
        try:
            stream.seek(0)
            head = stream.read(_HEADER_BYTES)
            size = stream.seek(0, os.SEEK_END)
        finally:
            stream.seek(position)
    except (OSError, ValueError, AttributeError):
        return describe_media(kind, mime=mime)
    if not isinstance(head, bytes | bytearray):
        return describe_media(kind, mime=mime)
    head = bytes(head)
    if _BASE64_HEAD.fullmatch(head[:64]):
        return describe_media(kind, base64=head, size=size * 3 // 4, mime=mime)
    return describe_media(kind, data=head, size=size, mime=mime)


def _file(kind: str, path: str | os.PathLike[str], mime: str | None) -> Media:
    """A file's first bytes and size; a missing or unreadable file: unknown size."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except (OSError, TypeError, ValueError):
        return describe_media(kind, mime=mime)
    return describe_media(kind, data=head, size=size, mime=mime)


def _document(block: DocumentBlock, texts: list[str], media: list[Media]) -> None:
    add_text(texts, block.title)
    mime = block.document_mimetype
    data = block.data
    if isinstance(data, bytes | bytearray) and mime and mime.lower().startswith("text/"):
        add_text(texts, _decoded_text(bytes(data)))
        return
    found = _media("file", data, block.path, block.url, mime)
    media.append(found if found.kind != "file" else dataclasses.replace(found, kind="document"))


def _decoded_text(data: bytes) -> str:
    try:
        raw = b64decode(data) if _BASE64_HEAD.fullmatch(data[:64]) else data
    except (binascii.Error, ValueError):
        raw = data
    return raw.decode("utf-8", "replace")
