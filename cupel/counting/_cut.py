"""Cutting a text to a token budget: its head and tail kept around a marker that says how
many tokens were cut (for a message too large for any window: a pasted log, one huge
tool result)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from cupel.counting._counters import TextCounter

__all__ = ["MessageParts", "cut_marker", "cut_text", "fit_unit"]


def cut_marker(tokens: int) -> str:
    """The text standing for ``tokens`` cut tokens.

    >>> cut_marker(1234)
    '\\n[... 1,234 tokens cut ...]\\n'
    """
    return f"\n[... {tokens:,} tokens cut ...]\n"


def cut_text(text: str, tokens: int, count: TextCounter) -> tuple[str, int]:
    """``text`` cut to at most ``tokens`` by ``count`` — as much of its head and tail as
    fits, equal shares, around :func:`cut_marker` — and how many tokens were cut (0: the
    text already fits, returned as it is). When not even the marker fits, the marker
    alone is returned.

    >>> words = " ".join(f"w{i}" for i in range(100))
    >>> cut, gone = cut_text(words, 20, lambda text: len(text.split()))
    >>> cut.split()[:2], cut.split()[-2:], gone
    (['w0', 'w1'], ['w98', 'w99'], 85)
    >>> len(cut.split()) <= 20
    True
    """
    total = count(text)
    if total <= tokens:
        return text, 0
    low, high = 0, len(text) // 2  # characters kept at each end
    best = cut_marker(total)
    best_cut = total
    while low <= high:
        keep = (low + high) // 2
        head, tail = _ends(text, keep)
        kept = count(head) + count(tail) if keep else 0
        gone = max(total - kept, 1)
        candidate = head + cut_marker(gone) + tail
        if count(candidate) <= tokens:
            best, best_cut = candidate, gone
            low = keep + 1
        else:
            high = keep - 1
    return best, best_cut


_SNAP = 40
"""How far (characters) a cut moves to fall between words or lines."""


def _ends(text: str, keep: int) -> tuple[str, str]:
    """The first and last ``keep`` characters of ``text``, each shortened to end (start)
    at a space or line break when one is within :data:`_SNAP` characters."""
    if not keep:
        return "", ""
    head = text[:keep]
    space = max(head.rfind(" ", keep - _SNAP), head.rfind("\n", keep - _SNAP))
    if space > 0:
        head = head[:space]
    tail = text[len(text) - keep :]
    starts = [i for i in (tail.find(" ", 0, _SNAP), tail.find("\n", 0, _SNAP)) if i >= 0]
    if starts:
        tail = tail[min(starts) + 1 :]
    return head, tail


M = TypeVar("M")


def fit_unit(
    messages: Sequence[M],
    allowed: int,
    count: Callable[[Sequence[M]], int],
    count_text: TextCounter,
    parts: MessageParts[M],
) -> tuple[list[M], int] | None:
    """Copies of a unit's ``messages`` cut until ``count(unit) <= allowed`` — media
    first, then the longest texts, head and tail kept (:func:`cut_text`) — and the
    tokens cut; ``None`` when the unit already fits or cannot be cut to fit (what is left
    is not text: tool calls are never cut). ``parts`` reads and copies one framework's
    messages; the given messages are never modified."""
    current = list(messages)
    before = count(current)
    if before <= allowed:
        return None
    for i, message in enumerate(current):
        stripped = parts.without_media(message)
        if stripped is not None:
            current[i] = stripped
    now = count(current)
    spent: set[int] = set()  # messages cut as far as they go
    for _ in range(4 * len(current) + 4):
        if now <= allowed:
            return current, before - now
        texts = [parts.longest_text(m) for m in current]
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
        current[pick] = parts.with_text(current[pick], cut, where)
        now = count(current)
    return (current, before - now) if now <= allowed else None


class MessageParts(Protocol[M]):
    """How :func:`fit_unit` reads and copies one framework's messages."""

    def without_media(self, message: M) -> M | None:
        """A copy with its media replaced by a marker (``None``: it has none)."""

    def longest_text(self, message: M) -> tuple[str, Any]:
        """Its longest text and where it stands (passed back to :meth:`with_text`)."""

    def with_text(self, message: M, text: str, where: Any) -> M:
        """A copy with the text at ``where`` replaced by ``text``."""
