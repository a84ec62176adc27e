"""Messages too large for any window, cut to fit (``truncate_oversized=True``).

When the newest unit alone — one huge tool result, a pasted log — or the pinned latest
user message does not fit ``token_limit``, the default is a clear
:class:`~cupel.PinnedBudgetError` (or, for an unpinned unit, leaving it out). With
``truncate_oversized=True`` the memory returns a *copy* of the message instead: its media
blocks replaced by a marker first, then its longest text block cut to its head and tail
around a marker saying how many tokens were cut (:func:`cupel.counting.cut_text`).
Tool calls (``ToolCallBlock``, ``additional_kwargs``) are never changed, so the unit
stays valid; the stored messages are untouched; the unit's item carries
``metadata["cupel:cut_tokens"]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    TextBlock,
    VideoBlock,
)

from cupel import ContextBudget
from cupel.counting import cut_text
from cupel_llamaindex._mapping import MessageMapping

__all__ = ["fit_unit", "fitted_messages"]

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)
_MEDIA_MARKER = "[media removed: the message did not fit the budget]"


def _without_media(message: ChatMessage) -> ChatMessage | None:
    blocks = message.blocks
    if not any(isinstance(block, _MEDIA) for block in blocks):
        return None
    kept = [block for block in blocks if not isinstance(block, _MEDIA)]
    kept.append(TextBlock(text=_MEDIA_MARKER))
    return message.model_copy(update={"blocks": kept})


def _longest_text(message: ChatMessage) -> tuple[str, int | None]:
    best, where = "", None
    for index, block in enumerate(message.blocks):
        if isinstance(block, TextBlock) and len(block.text) > len(best):
            best, where = block.text, index
    return best, where


def fit_unit(
    messages: Sequence[ChatMessage],
    allowed: int,
    count: Callable[[ChatMessage], int],
    count_text: Callable[[str], int],
) -> tuple[list[ChatMessage], int] | None:
    """Copies of a unit's ``messages`` cut until their tokens (``count`` summed) are at
    most ``allowed`` — media first, then the longest text blocks, head and tail kept —
    and the tokens cut; ``None`` when the unit already fits or cannot be cut to fit.
    The given messages are never modified."""
    current = list(messages)
    before = sum(map(count, current))
    if before <= allowed:
        return None
    for i, message in enumerate(current):
        stripped = _without_media(message)
        if stripped is not None:
            current[i] = stripped
    now = sum(map(count, current))
    spent: set[int] = set()
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
        if cut == text or where is None:
            spent.add(pick)
            continue
        blocks = list(current[pick].blocks)
        blocks[where] = TextBlock(text=cut)
        current[pick] = current[pick].model_copy(update={"blocks": blocks})
        now = sum(map(count, current))
    return (current, before - now) if now <= allowed else None


def fitted_messages(
    mapping: MessageMapping,
    budget: ContextBudget,
    count: Callable[[ChatMessage], int],
    count_text: Callable[[str], int],
) -> tuple[list[ChatMessage], dict[int, int]] | None:
    """The mapping's messages with cut copies of the units too large for any window
    (:meth:`cupel.conversation.HistoryItems.oversized`), and the tokens cut by the index
    of each cut unit's first message; ``None`` when nothing is cut."""
    history = mapping.history
    plan = history.oversized(budget)
    if not plan:
        return None
    listed = list(mapping.messages)
    cuts: dict[int, int] = {}
    for position, allowed in plan:
        members = history.conversation.messages_of(history.units[position])
        fitted = fit_unit([listed[i] for i in members], allowed, count, count_text)
        if fitted is not None:
            for index, message in zip(members, fitted[0], strict=True):
                listed[index] = message
            cuts[members[0]] = fitted[1]
    return (listed, cuts) if cuts else None
