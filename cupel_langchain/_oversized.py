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

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from cupel.counting import cut_text

__all__ = ["MEDIA_BLOCKS", "fit_unit"]

MEDIA_BLOCKS = frozenset(
    {"image_url", "image", "audio", "input_audio", "video", "file", "document"}
)
"""Content block types dropped first when a message is cut."""

_MEDIA_MARKER = "[media removed: the message did not fit the budget]"


def _without_media(content: list[Any]) -> list[Any] | None:
    """``content`` with its media blocks replaced by a marker (``None``: none there)."""
    out: list[Any] = []
    dropped = False
    for block in content:
        if isinstance(block, dict) and block.get("type") in MEDIA_BLOCKS:
            if not dropped:
                out.append({"type": "text", "text": _MEDIA_MARKER})
            dropped = True
            continue
        out.append(block)
    return out if dropped else None


def _longest_text(message: BaseMessage) -> tuple[str, int | None]:
    """The message's longest text: its string content (index ``None``) or the text of
    its longest text block (that block's index)."""
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


def _with_text(message: BaseMessage, text: str, where: int | None) -> BaseMessage:
    if where is None:
        return message.model_copy(update={"content": text})
    content = list(message.content)
    block = content[where]
    content[where] = text if isinstance(block, str) else {**block, "text": text}
    return message.model_copy(update={"content": content})


def fit_unit(
    messages: Sequence[BaseMessage],
    allowed: int,
    count: Callable[[Sequence[BaseMessage]], int],
    count_text: Callable[[str], int],
) -> tuple[list[BaseMessage], int] | None:
    """Copies of a unit's ``messages`` cut until ``count(unit) <= allowed`` — media
    first, then the longest texts, head and tail kept — and the tokens cut; ``None``
    when the unit already fits or cannot be cut to fit (its tool calls alone exceed
    ``allowed``). The given messages are never modified."""
    current = list(messages)
    before = count(current)
    if before <= allowed:
        return None
    for i, message in enumerate(current):
        if isinstance(message.content, list):
            content = _without_media(message.content)
            if content is not None:
                current[i] = message.model_copy(update={"content": content})
    now = count(current)
    spent: set[int] = set()  # messages cut as far as they go
    for _ in range(4 * len(current) + 4):
        if now <= allowed:
            return current, before - now
        texts = [_longest_text(m) for m in current]
        left = [i for i in range(len(current)) if i not in spent and texts[i][0]]
        if not left:
            return None
        pick = max(left, key=lambda i: len(texts[i][0]))
        text, where = texts[pick]
        keep = max(count_text(text) - (now - allowed), 0)
        cut, _ = cut_text(text, keep, count_text)
        if cut == text:
            spent.add(pick)
            continue
        current[pick] = _with_text(current[pick], cut, where)
        now = count(current)
    return (current, before - now) if now <= allowed else None
