"""Messages too large for any window, cut to fit (``truncate_oversized=True``).

When the newest unit alone — one huge tool result, a pasted log — or the pinned latest
human message does not fit the budget, the default is a clear
:class:`~cupel.PinnedBudgetError` (or, for an unpinned unit, leaving it out). With
``truncate_oversized=True`` the selection sends a *copy* of the message instead: its
inline media replaced by a marker first, then its longest texts cut to their head and
tail around a marker saying how many tokens were cut
(:func:`cupel.counting.cut_text`). Tool-call names, arguments and ids are never
changed, so the unit stays valid; the original messages are untouched; the unit's item
carries ``metadata["cupel:cut_tokens"]``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

__all__ = ["MEDIA_BLOCKS", "PARTS"]

MEDIA_BLOCKS = frozenset(
    {"image_url", "image", "audio", "input_audio", "video", "file", "document"}
)
"""Content block types dropped first when a message is cut."""

_MEDIA_MARKER = "[media removed: the message did not fit the budget]"


class _Parts:
    """How :func:`cupel.counting.fit_unit` reads and copies LangChain messages."""

    def without_media(self, message: BaseMessage) -> BaseMessage | None:
        content = message.content
        if not isinstance(content, list):
            return None
        kept: list[Any] = []
        dropped = False
        for block in content:
            if isinstance(block, dict) and block.get("type") in MEDIA_BLOCKS:
                if not dropped:
                    kept.append({"type": "text", "text": _MEDIA_MARKER})
                dropped = True
                continue
            kept.append(block)
        return message.model_copy(update={"content": kept}) if dropped else None

    def longest_text(self, message: BaseMessage) -> tuple[str, int | None]:
        """The string content (at ``None``) or the longest text block (at its index)."""
        content = message.content
        if isinstance(content, str):
            return content, None
        best, where = "", None
        for index, block in enumerate(content):
            text = block if isinstance(block, str) else None
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
            if isinstance(text, str) and len(text) > len(best):
                best, where = text, index
        return best, where

    def with_text(self, message: BaseMessage, text: str, where: int | None) -> BaseMessage:
        if where is None:
            return message.model_copy(update={"content": text})
        content = list(message.content)
        block = content[where]
        content[where] = text if isinstance(block, str) else {**block, "text": text}
        return message.model_copy(update={"content": content})


PARTS = _Parts()
"""LangChain's :class:`cupel.counting.MessageParts`."""
