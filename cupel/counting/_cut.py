"""Cutting a text to a token budget: its head and tail kept around a marker that says how
many tokens were cut (for a message too large for any window: a pasted log, one huge
tool result)."""

from __future__ import annotations

from cupel.counting._counters import TextCounter

__all__ = ["cut_marker", "cut_text"]


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
