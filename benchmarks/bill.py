"""The provider's bill: what a request costs as a provider counts it, the oracle of the
provider-bill benchmark (:mod:`benchmarks.provider_bill`).

Independent of cupel's own counting: cl100k_base (LlamaIndex's default tokenizer,
offline) on every text the provider receives, fixed overheads, and images priced by their
dimensions, which the oracle knows from a side table (image bytes -> width, height) kept
by whoever made the images; no header is parsed here.

A request's bill is the sum over its messages of

- :data:`PER_MESSAGE` (3) per message;
- the cl100k tokens of each text part (base64 image data is never text);
- per tool call (valid and ``invalid_tool_calls``): its name, its JSON arguments (the
  raw ``args`` string of an invalid call) and its id;
- a tool result's ``tool_call_id``; a ``name`` field;
- per image: the larger of OpenAI's price (high detail: fit in 2048 x 2048, shortest side
  down to 768, 170 per 512-px tile + 85; ``detail="low"``: 85) and Anthropic's
  (``ceil(w * h / 750)`` after its resize: long edge <= 1568, <= ~1.15 megapixels);
  :data:`UNKNOWN_IMAGE` (1,600) when the size cannot be known (an http URL);

plus :data:`REPLY` (3) for the reply. A document or node selection costs the cl100k
tokens of the text the model receives (``page_content``; a node's
``get_content(MetadataMode.LLM)``), nothing else.

>>> from langchain_core.messages import HumanMessage
>>> bill = Bill()
>>> bill.langchain([HumanMessage("Hello there")])  # 2 text tokens + 3 + the reply's 3
8
>>> openai_image_tokens(1024, 1024), anthropic_image_tokens(1000, 750), image_tokens(200, 200)
(765, 1000, 255)
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "ANTHROPIC_MAX_EDGE",
    "ANTHROPIC_MAX_PIXELS",
    "PER_MESSAGE",
    "REPLY",
    "UNKNOWN_IMAGE",
    "Bill",
    "anthropic_image_tokens",
    "image_tokens",
    "openai_image_tokens",
]

PER_MESSAGE = 3
"""Tokens every message costs besides its content (role and delimiters)."""
REPLY = 3
"""Tokens priming the reply, once per request."""
UNKNOWN_IMAGE = 1600
"""An image whose size cannot be known (an http URL): the largest Anthropic price."""
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000
ANTHROPIC_PIXELS_PER_TOKEN = 750
OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512
OPENAI_PER_TILE = 170
OPENAI_BASE = 85


def openai_image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """OpenAI's price of an image: ``detail="low"`` 85; otherwise (high, auto) fit in
    2048 x 2048, scale the shortest side down to 768, then 170 per 512-px tile + 85.

    >>> openai_image_tokens(1920, 1080), openai_image_tokens(4000, 4000, "low")
    (1105, 85)
    """
    if detail == "low":
        return OPENAI_BASE
    w, h = width, height
    if max(w, h) > OPENAI_FIT:
        scale = OPENAI_FIT / max(w, h)
        w, h = max(1, int(w * scale)), max(1, int(h * scale))
    if min(w, h) > OPENAI_SHORT_SIDE:
        scale = OPENAI_SHORT_SIDE / min(w, h)
        w, h = max(1, int(w * scale)), max(1, int(h * scale))
    tiles = math.ceil(w / OPENAI_TILE) * math.ceil(h / OPENAI_TILE)
    return OPENAI_PER_TILE * tiles + OPENAI_BASE


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's price of an image: ``ceil(w * h / 750)`` after scaling it down (aspect
    kept) to a long edge of at most 1568 px and at most ~1.15 megapixels.

    >>> anthropic_image_tokens(200, 200), anthropic_image_tokens(1920, 1080)
    (54, 1532)
    """
    w, h = width, height
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(w, h), math.sqrt(ANTHROPIC_MAX_PIXELS / (w * h)))
    if scale < 1.0:
        w, h = max(1, int(w * scale)), max(1, int(h * scale))
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def image_tokens(width: int, height: int, detail: str | None = None) -> int:
    """The bill of an image of known size: the larger of the two providers' prices."""
    return max(openai_image_tokens(width, height, detail), anthropic_image_tokens(width, height))


def _decode(data: str | bytes) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data if isinstance(data, bytes) else data.encode()


class Bill:
    """The oracle: bills LangChain and LlamaIndex requests, documents and nodes.

    ``sizes`` maps the raw bytes of every inline image to its ``(width, height)`` (the
    generator's side table; :meth:`add_images` adds more). An inline image missing from
    it raises ``KeyError``: the oracle never guesses a size it was not told.
    """

    def __init__(
        self,
        sizes: Mapping[bytes, tuple[int, int]] | None = None,
        tokenizer: Callable[[str], Sequence[Any]] | None = None,
    ) -> None:
        if tokenizer is None:
            from llama_index.core.utils import get_tokenizer

            tokenizer = get_tokenizer()
        self._encode = tokenizer
        self._sizes: dict[bytes, tuple[int, int]] = dict(sizes or {})
        self._texts: dict[str, int] = {}

    def add_images(self, sizes: Mapping[bytes, tuple[int, int]]) -> None:
        """Learn the sizes of more images."""
        self._sizes.update(sizes)

    # -- parts ---------------------------------------------------------------------------
    def text(self, text: str) -> int:
        """cl100k tokens of ``text`` (memoized)."""
        if not text:
            return 0
        count = self._texts.get(text)
        if count is None:
            count = len(self._encode(text))
            if len(self._texts) > 200_000:
                self._texts.clear()
            self._texts[text] = count
        return count

    def image_data(self, data: str | bytes, detail: str | None = None) -> int:
        """An inline image given as base64 (or raw bytes)."""
        raw = _decode(data)
        size = self._sizes.get(raw)
        if size is None:
            raise KeyError(f"the oracle was not told the size of an image ({raw[:16]!r}...)")
        return image_tokens(*size, detail)

    def image_url(self, url: str, detail: str | None = None) -> int:
        """An image given by URL: a ``data:`` URL by its known size, else 1,600."""
        if url.startswith("data:"):
            return self.image_data(url.partition(",")[2], detail)
        return UNKNOWN_IMAGE

    def call(self, name: str | None, arguments: Any, call_id: str | None) -> int:
        """A tool call: its name, its arguments (a string as it is, else as JSON) and id."""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return self.text(name or "") + self.text(arguments) + self.text(call_id or "")

    # -- LangChain -----------------------------------------------------------------------
    def langchain_block(self, block: Any) -> int:
        """One content block of a LangChain message."""
        if isinstance(block, str):
            return self.text(block)
        kind = block.get("type")
        if kind == "text":
            return self.text(block.get("text", ""))
        if kind == "image_url":
            image = block["image_url"]
            if isinstance(image, str):
                return self.image_url(image)
            return self.image_url(image["url"], image.get("detail"))
        if kind == "image":
            detail = block.get("detail") or (block.get("extras") or {}).get("detail")
            if block.get("base64") or block.get("data"):
                return self.image_data(block.get("base64") or block["data"], detail)
            if block.get("url"):
                return self.image_url(block["url"], detail)
            return UNKNOWN_IMAGE
        return self.text(json.dumps(block, ensure_ascii=False, default=str))

    def langchain_message(self, message: Any) -> int:
        """One LangChain message, with its overhead."""
        content = message.content
        total = PER_MESSAGE
        if isinstance(content, str):
            total += self.text(content)
        else:
            total += sum(self.langchain_block(block) for block in content)
        if message.name:
            total += self.text(message.name)
        for call in getattr(message, "tool_calls", None) or ():
            total += self.call(call["name"], call["args"], call.get("id"))
        for call in getattr(message, "invalid_tool_calls", None) or ():
            total += self.call(call.get("name"), call.get("args") or "", call.get("id"))
        if message.type == "tool":
            total += self.text(message.tool_call_id)
        return total

    def langchain(self, messages: Iterable[Any]) -> int:
        """A LangChain request: its messages and the reply."""
        return sum(self.langchain_message(m) for m in messages) + REPLY

    # -- LlamaIndex ----------------------------------------------------------------------
    def llamaindex_message(self, message: Any) -> int:
        """One LlamaIndex ``ChatMessage``, with its overhead: text, image and tool-call
        blocks; ``additional_kwargs``' OpenAI-style ``tool_calls``, ``tool_call_id`` and
        ``name``."""
        from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock

        total = PER_MESSAGE
        for block in message.blocks:
            if isinstance(block, TextBlock):
                total += self.text(block.text)
            elif isinstance(block, ImageBlock):
                if block.image:
                    total += self.image_data(block.image, block.detail)
                elif block.url is not None:
                    total += self.image_url(str(block.url), block.detail)
                else:
                    total += UNKNOWN_IMAGE
            elif isinstance(block, ToolCallBlock):
                total += self.call(block.tool_name, block.tool_kwargs, block.tool_call_id)
            else:
                total += self.text(block.model_dump_json())
        extra = message.additional_kwargs
        for call in extra.get("tool_calls") or ():
            function = call["function"]
            total += self.call(function["name"], function["arguments"], call.get("id"))
        for key in ("tool_call_id", "name"):
            if extra.get(key):
                total += self.text(str(extra[key]))
        return total

    def llamaindex(self, messages: Iterable[Any]) -> int:
        """A LlamaIndex request: its messages and the reply."""
        return sum(self.llamaindex_message(m) for m in messages) + REPLY

    # -- documents and nodes -------------------------------------------------------------
    def documents(self, documents: Iterable[Any]) -> int:
        """LangChain documents: the tokens of their ``page_content``."""
        return sum(self.text(d.page_content) for d in documents)

    def nodes(self, nodes: Iterable[Any]) -> int:
        """LlamaIndex nodes: the tokens of the text a synthesizer sends
        (``get_content(metadata_mode=MetadataMode.LLM)``)."""
        from llama_index.core.schema import MetadataMode

        return sum(self.text(n.node.get_content(metadata_mode=MetadataMode.LLM)) for n in nodes)
