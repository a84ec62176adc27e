"""Messages too large for any window, cut to fit (``truncate_oversized=True``).

When the newest unit alone (a huge tool result) or the pinned latest user message does not
fit ``token_limit``, the memory returns a *copy* of the message instead of raising
:class:`~cupel.PinnedBudgetError` (or leaving it out): its media replaced by a marker
first, then its longest text block cut around a marker (:func:`cupel.counting.cut_text`).
Tool calls are never changed, so the unit stays valid; the stored messages are untouched;
the unit's item carries ``metadata["cupel:cut_tokens"]``.
"""

from __future__ import annotations

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    VideoBlock,
)

__all__ = ["PARTS"]

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)
_MEDIA_MARKER = "[media removed: the message did not fit the budget]"


class _Parts:
    """How :func:`cupel.counting.fit_unit` reads and copies LlamaIndex messages."""

    def without_media(self, message: ChatMessage) -> ChatMessage | None:
        blocks = message.blocks
        if not any(isinstance(block, _MEDIA) for block in blocks):
            return None
        kept = [block for block in blocks if not isinstance(block, _MEDIA)]
        kept.append(TextBlock(text=_MEDIA_MARKER))
        return message.model_copy(update={"blocks": kept})

    def longest_text(self, message: ChatMessage) -> tuple[str, int | None]:
        """The longest ``TextBlock``'s text and its index."""
        best, where = "", None
        for index, block in enumerate(message.blocks):
            if isinstance(block, TextBlock) and len(block.text) > len(best):
                best, where = block.text, index
        return best, where

    def with_text(self, message: ChatMessage, text: str, where: int | None) -> ChatMessage:
        blocks = list(message.blocks)
        if where is None:
            blocks.append(TextBlock(text=text))
        else:
            blocks[where] = TextBlock(text=text)
        return message.model_copy(update={"blocks": blocks})


PARTS = _Parts()
"""LlamaIndex's :class:`cupel.counting.MessageParts`."""
