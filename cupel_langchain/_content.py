"""What a LangChain message carries: the text a provider bills as text, and its media.

:func:`read_content` reads every content shape LangChain messages carry (``str``
content; list content of strings and of LangChain v1 standard blocks, older v0
``source_type`` blocks, and OpenAI / Anthropic / Bedrock / Gemini provider blocks) into
text parts and :class:`~cupel.counting.Media` parts, for a counter to count the first and
:func:`~cupel.counting.media_pricer` to price the second. Base64 payloads never end up in
the text.

=============================================  ==========================================
block                                          read as
=============================================  ==========================================
``str``, ``text`` / ``input_text`` /           text
``output_text``, ``refusal``
``image_url`` / ``input_image`` / ``image``    an image (pixel size from a data URL or
(base64, url, file id; Anthropic ``source``)   base64 header; a URL: unknown size)
``audio``, ``input_audio``, ``video``          audio / video (WAV durations from the
                                               header, else the byte size)
``file``, ``input_file``, ``document``,        a document, or by MIME type an image,
``media``, ``text-plain``                      audio or video; plain text (Anthropic
                                               ``text`` sources, ``text-plain``, base64
                                               ``text/*``) as text; titles as text
``reasoning`` / ``thinking`` /                 their text (summaries included);
``reasoning_content``                          signatures, ``redacted_thinking`` and
                                               encrypted content are opaque: nothing
``tool_use`` / ``tool_call`` /                 ``name`` and the JSON arguments, *unless*
``function_call``                              the id is one of ``message.tool_calls``
                                               (the caller counts those: no double count)
``server_tool_use`` / ``*_tool_call*``         name and arguments
``tool_result`` / ``*_tool_result``            their content, read recursively
``non_standard``                               its ``value``, read as a block
anything else                                  its JSON text, payloads lifted out as media
=============================================  ==========================================

Reasoning is counted as text although providers differ (Anthropic drops earlier turns'
thinking from the context, OpenAI bills reasoning items passed back): counting it is the
conservative choice. Citations and annotations are not counted (Anthropic does not bill
``cited_text`` passed back). An odd block is read as its JSON text, never an error.

>>> from langchain_core.messages import HumanMessage
>>> gif = "R0lGODlhAgADAIAAAP///wAAACwAAAAAAgADAAAC"
>>> texts, media = read_content(HumanMessage([
...     {"type": "text", "text": "What is this?"},
...     {"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{gif}"}},
...     {"type": "image", "url": "https://example.com/cat.png"}]))
>>> texts
['What is this?']
>>> [(m.kind, m.width, m.height) for m in media]
[('image', 2, 3), ('image', None, None)]
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage

from cupel.counting import Media, describe_media, split_payloads

__all__ = ["read_content"]

_MAX_DEPTH = 16


def read_content(message: BaseMessage) -> tuple[list[str], list[Media]]:
    """The text parts a provider bills as text, and the media parts, of ``message``'s
    content (see the module table).

    A content ``tool_use`` / ``tool_call`` / ``function_call`` block whose id is one of
    ``message.tool_calls`` is left out: the caller counts ``message.tool_calls``.

    >>> from langchain_core.messages import AIMessage
    >>> read_content(AIMessage([
    ...     {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
    ...     {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "Nile"}},
    ...     {"type": "tool_use", "id": "t2", "name": "clock", "input": {}}],
    ...     tool_calls=[{"name": "search", "args": {"q": "Nile"}, "id": "t1"}]))
    (['Look it up.', 'clock {}'], [])
    """
    calls = getattr(message, "tool_calls", None) or ()
    reader = _Reader({call.get("id") for call in calls if isinstance(call, Mapping)} - {None})
    reader.part(message.content, 0)
    return reader.texts, reader.media


@dataclass(slots=True)
class _Reader:
    call_ids: set[Any]
    texts: list[str] = field(default_factory=list)
    media: list[Media] = field(default_factory=list)

    def text(self, value: object) -> None:
        if isinstance(value, str):
            if value:
                self.texts.append(value)
        elif value is not None:
            self.payloads(value)

    def payloads(self, value: object) -> None:
        text, media = split_payloads(value)
        if text:
            self.texts.append(text)
        self.media.extend(media)

    def part(self, part: object, depth: int) -> None:
        """A content value: a string, a block, a list of them, or anything else."""
        if isinstance(part, str):
            self.text(part)
        elif depth > _MAX_DEPTH:
            self.payloads(part)
        elif isinstance(part, list | tuple):
            for item in part:
                self.part(item, depth + 1)
        elif isinstance(part, Mapping):
            self.block(part, depth)
        elif part is not None:
            self.payloads(part)

    def block(self, block: Mapping[str, Any], depth: int) -> None:
        kind = block.get("type")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None and isinstance(kind, str) and kind.endswith("_tool_result"):
            handler = _tool_result
        texts, media = len(self.texts), len(self.media)
        if handler is not None:
            try:
                handler(self, block, depth)
                return
            except Exception:  # not of the shape it reads, or malformed: its JSON below
                del self.texts[texts:], self.media[media:]
        self.payloads(block)


# --------------------------------------------------------------------------- handlers
# Each raises (e.g. :class:`_Unread`) when the block is not of the shape it reads: then its
# JSON counts.

_Handler = Callable[[_Reader, Mapping[str, Any], int], None]


class _Unread(Exception):
    """A block not of the shape its handler reads."""


def _text(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise _Unread
    reader.text(text)


def _refusal(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    reader.text(block.get("refusal"))


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _image_url(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """OpenAI Chat Completions ``image_url`` (a dict or a plain string) and Responses
    ``input_image`` (``image_url`` string or ``file_id``)."""
    image_url = block.get("image_url")
    detail = block.get("detail")
    if isinstance(image_url, Mapping):
        url = image_url.get("url")
        detail = image_url.get("detail", detail)
    else:
        url = image_url
    reader.media.append(describe_media("image", url=_str(url), detail=_str(detail)))


def _decoded_text(data: str) -> str | None:
    try:
        return b64decode(data.translate(str.maketrans("-_", "+/"))).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def _data(reader: _Reader, block: Mapping[str, Any], depth: int, kind: str) -> None:
    """A data block of any family: v1 (``base64`` / ``url`` / ``file_id``), v0
    (``source_type`` + ``data`` / ``url`` / ``id``), Anthropic (``source``), Gemini
    ``media`` (``data`` / ``file_uri``)."""
    extras = block.get("extras")
    extras = extras if isinstance(extras, Mapping) else {}
    mime = _str(block.get("mime_type")) or _str(block.get("media_type"))
    detail = _str(block.get("detail")) or _str(extras.get("detail"))
    base64: str | bytes | None = None
    raw: bytes | None = None
    url: str | None = None
    for key in ("title", "context", "filename"):  # shown to the model with the data
        reader.text(_str(block.get(key)))
    source = block.get("source")
    source_type = block.get("source_type")
    if isinstance(source, Mapping):  # Anthropic
        stype = source.get("type")
        mime = _str(source.get("media_type")) or mime
        if stype == "text":
            reader.text(_str(source.get("data")))
            return
        if stype == "content":
            reader.part(source.get("content"), depth + 1)
            return
        if stype == "base64":
            base64 = _str(source.get("data"))
        elif stype == "url":
            url = _str(source.get("url"))
    elif isinstance(source_type, str):  # LangChain v0
        if source_type == "text":  # v0 plain text keeps the text under "url"
            reader.text(_str(block.get("url")))
            return
        if source_type == "base64":
            base64 = _str(block.get("data"))
        elif source_type == "url":
            url = _str(block.get("url"))
    else:  # LangChain v1, Gemini "media"
        data = block.get("base64", block.get("data"))
        if isinstance(data, bytes | bytearray):
            raw = bytes(data)
        else:
            base64 = _str(data)
        url = _str(block.get("url")) or _str(block.get("file_uri"))
    if isinstance(base64, str) and (mime or "").strip().lower().startswith("text/"):
        decoded = _decoded_text(base64)
        if decoded is not None:
            reader.text(decoded)
            return
    reader.media.append(
        describe_media(kind, base64=base64, data=raw, url=url, mime=mime, detail=detail)
    )


def _file(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """``file``: OpenAI Chat Completions (``{"file": {"file_data" | "file_id"}}``) or the
    LangChain v1 / v0 file block."""
    file = block.get("file")
    if isinstance(file, Mapping):
        _input_file(reader, file, depth)
    else:
        _data(reader, block, depth, "file")


def _input_file(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """OpenAI ``input_file`` (Responses) or the inside of a Chat Completions ``file``."""
    reader.text(_str(block.get("filename")))
    data = _str(block.get("file_data"))
    url = _str(block.get("file_url"))
    reader.media.append(describe_media("file", base64=data, url=url))


def _plain_text(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """``text-plain``: its ``text``, the decoded ``base64``, or a document by reference."""
    for key in ("title", "context"):
        reader.text(_str(block.get(key)))
    if isinstance(block.get("text"), str):
        reader.text(block["text"])
        return
    data = block.get("base64")
    decoded = _decoded_text(data) if isinstance(data, str) else None
    if decoded is not None:
        reader.text(decoded)
    else:
        reader.media.append(describe_media("document", url=_str(block.get("url"))))


def _input_audio(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    audio = block.get("input_audio")
    if not isinstance(audio, Mapping):
        raise _Unread
    fmt = _str(audio.get("format"))
    mime = f"audio/{fmt}" if fmt else None
    reader.media.append(describe_media("audio", base64=_str(audio.get("data")), mime=mime))


def _reasoning(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """v1 ``reasoning`` (``reasoning``), OpenAI Responses reasoning (``summary`` /
    ``content`` parts), Anthropic ``thinking``, Bedrock ``reasoning_content``."""
    for key in ("reasoning", "thinking", "text"):
        reader.text(_str(block.get(key)))
    for key in ("summary", "content"):
        parts = block.get(key)
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, str):
                    reader.text(part)
                elif isinstance(part, Mapping):
                    reader.text(_str(part.get("text")))
    nested = block.get("reasoning_content")
    if isinstance(nested, Mapping):
        reader.text(_str(nested.get("text")))


def _opaque(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """Encrypted reasoning (``redacted_thinking``): no text a counter could read."""


def _tool_call(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """A call: its name and JSON arguments, unless the caller counts it already."""
    ids = (block.get("id"), block.get("call_id"))  # Responses items carry both
    if any(i is not None and i in reader.call_ids for i in ids):
        return
    name = _str(block.get("name")) or ""
    args = block.get("input", block.get("args", block.get("arguments")))
    if args is None or isinstance(args, str):
        reader.text(f"{name} {args or ''}".strip())
        return
    text, media = split_payloads(args)
    reader.text(f"{name} {text}".strip())
    reader.media.extend(media)


def _tool_result(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """Anthropic ``tool_result`` / server tool results, v1 ``server_tool_result``,
    Responses ``function_call_output``: their content, read recursively."""
    for key in ("content", "output"):
        if key in block:
            reader.part(block[key], depth + 1)


def _search_result(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    """Anthropic ``search_result``: title, source and content blocks."""
    for key in ("title", "source"):
        reader.text(_str(block.get(key)))
    reader.part(block.get("content"), depth + 1)


def _non_standard(reader: _Reader, block: Mapping[str, Any], depth: int) -> None:
    value = block.get("value")
    if not isinstance(value, Mapping):
        raise _Unread
    reader.part(value, depth + 1)


_HANDLERS: dict[str, _Handler] = {
    "text": _text,
    "input_text": _text,
    "output_text": _text,
    "summary_text": _text,
    "reasoning_text": _text,
    "refusal": _refusal,
    "image_url": _image_url,
    "input_image": _image_url,
    "image": partial(_data, kind="image"),
    "audio": partial(_data, kind="audio"),
    "video": partial(_data, kind="video"),
    "document": partial(_data, kind="document"),
    "media": partial(_data, kind="file"),
    "file": _file,
    "input_file": _input_file,
    "text-plain": _plain_text,
    "input_audio": _input_audio,
    "reasoning": _reasoning,
    "thinking": _reasoning,
    "reasoning_content": _reasoning,
    "redacted_thinking": _opaque,
    "tool_use": _tool_call,
    "tool_call": _tool_call,
    "function_call": _tool_call,
    "tool_call_chunk": _tool_call,
    "invalid_tool_call": _tool_call,
    "server_tool_use": _tool_call,
    "mcp_tool_use": _tool_call,
    "server_tool_call": _tool_call,
    "server_tool_call_chunk": _tool_call,
    "tool_result": _tool_result,
    "function_call_output": _tool_result,
    "search_result": _search_result,
    "non_standard": _non_standard,
}
