"""Cache-stable windows across calls: the option, the pipeline it implies, and the state a
component keeps per conversation (thread-safe, bounded).

The selection itself is :meth:`HistoryItems.select` with ``previous=``; this module holds
what every adapter needs around it:

- :func:`check_cache_stable`: the ``cache_stable`` option (``False``, ``True`` or a
  low-water mark) as a mark or ``None``;
- :func:`cache_stable_pipeline`: a pipeline whose recency window refills to that mark;
- :class:`StableWindow`: what a call remembers (the history it selected from and its
  window) and :meth:`StableWindow.previous_for`, which decides whether the next history
  extends it (else the next call starts fresh);
- :class:`StableWindows`: those records per conversation key, behind a lock, LRU-bounded.

>>> from cupel import Pipeline
>>> cache_stable_pipeline(Pipeline.from_policy("chat"), check_cache_stable(True, "demo")).slicer
RecencyWindowSlice(low_water=0.6)
>>> state = StableWindow(("system", "hi", "hello"), (0, 1, 2), cut=1)
>>> state.previous_for(["system", "hi", "hello", "how are you?"])
[0, 1, 2]
>>> state.previous_for(["system", "bye"]) is None  # not an extension: start fresh
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from cupel._errors import ConfigurationError
from cupel._pipeline import Pipeline
from cupel.slicers.recency_window import RecencyWindowSlice

__all__ = [
    "DEFAULT_LOW_WATER",
    "DEFAULT_MAX_CONVERSATIONS",
    "StableWindow",
    "StableWindows",
    "cache_stable_pipeline",
    "check_cache_stable",
]

DEFAULT_LOW_WATER = 0.6
"""The low-water mark of ``cache_stable=True``: when the window overflows, it is cut back
to 60% of the budget, then only appended to until it overflows again."""

DEFAULT_MAX_CONVERSATIONS = 1024
"""How many conversations a component remembers (least recently used first out)."""


def check_cache_stable(value: object, owner: str) -> float | None:
    """The low-water mark of a ``cache_stable`` option: ``None`` for ``False`` (off),
    :data:`DEFAULT_LOW_WATER` for ``True``, the number itself for ``0 < value <= 1``.

    >>> check_cache_stable(False, "x"), check_cache_stable(0.75, "x")
    (None, 0.75)
    """
    if value is False:
        return None
    if value is True:
        return DEFAULT_LOW_WATER
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1:
        return float(value)
    raise ConfigurationError(
        f"{owner}: cache_stable must be False (off), True (low-water mark "
        f"{DEFAULT_LOW_WATER}) or a low-water mark with 0 < mark <= 1 (the share of the "
        f"budget an overflowing window is cut back to), got {value!r}",
        field="cache_stable",
        value=value,
    )


def cache_stable_pipeline(pipeline: Pipeline, low_water: float | None) -> Pipeline:
    """``pipeline`` with its recency window refilling to ``low_water`` (unchanged for
    ``None``, or when its window already has that mark).

    A pipeline whose slicer is not a :class:`~cupel.RecencyWindowSlice` has no window
    to keep stable: :class:`~cupel.ConfigurationError`.
    """
    if low_water is None:
        return pipeline
    slicer = pipeline.slicer
    if type(slicer) is not RecencyWindowSlice:
        raise ConfigurationError(
            f"cache_stable needs a recency-window policy (the presets chat, tool_use, "
            f"long_running, or a RecencyWindowSlice); this pipeline's slicer is "
            f"{slicer!r}, which selects by score and has no cut to keep stable",
            field="cache_stable",
            value=low_water,
        )
    if slicer.low_water == low_water:
        return pipeline
    window = RecencyWindowSlice(
        slicer.block_key, scored_share=slicer.scored_share, low_water=low_water
    )
    return Pipeline(
        pipeline.scorer,
        window,
        pipeline.placer,
        deduplication=pipeline.deduplication,
        overflow_strategy=pipeline.overflow_strategy,
        on_overflow=pipeline.on_overflow,
    )


def _same(a: object, b: object) -> bool:
    return a is b or a == b


@dataclass(frozen=True, slots=True)
class StableWindow:
    """What a cache-stable call remembers: the ``history`` it selected from (the message
    objects), its ``window`` (indices into it, ascending) and the window's ``cut`` (where
    its stretch of the conversation starts, :attr:`HistoryWindow.cut`)."""

    history: tuple[object, ...]
    window: tuple[int, ...]
    cut: int

    def previous_for(self, history: Sequence[object]) -> list[int] | None:
        """The previous window as indices into ``history``, or ``None`` (start fresh).

        - ``history`` extends the remembered one: at least as long, and the messages of
          the previous window and of its stretch (from the cut on) are the same objects
          or equal at the same positions — the previous window's indices;
        - ``history`` extends the previous *window* (a caller that stored the window
          back, e.g. a persistent agent state): its leading messages are the window's —
          the window's positions there;
        - anything else (another conversation, an edited or shortened history): ``None``.
        """
        old = self.history
        if len(history) >= len(old):
            positions = set(self.window)
            positions.update(range(self.cut, len(old)))
            if all(_same(history[i], old[i]) for i in positions):
                return list(self.window)
        kept = [old[i] for i in self.window]
        if (
            kept
            and len(history) >= len(kept)
            and all(_same(history[i], message) for i, message in enumerate(kept))
        ):
            return list(range(len(kept)))
        return None


class StableWindows:
    """The :class:`StableWindow` of each conversation, by key (a thread id, a session
    id, ...; ``None`` is the slot of calls without one). Thread-safe (one lock); holds at
    most ``max_conversations`` keys, dropping the least recently used. Copies and pickles
    start empty (the state is a cache: losing it costs one fresh window).
    """

    __slots__ = ("_lock", "_states", "max_conversations")

    def __init__(self, max_conversations: int = DEFAULT_MAX_CONVERSATIONS) -> None:
        if (
            isinstance(max_conversations, bool)
            or not isinstance(max_conversations, int)
            or max_conversations < 1
        ):
            raise ConfigurationError(
                f"max_conversations must be an int >= 1, got {max_conversations!r}",
                field="max_conversations",
                value=max_conversations,
            )
        self.max_conversations = max_conversations
        self._lock = threading.Lock()
        self._states: OrderedDict[Hashable, StableWindow] = OrderedDict()

    def __reduce__(self) -> tuple[type[StableWindows], tuple[int]]:
        return (type(self), (self.max_conversations,))

    def __len__(self) -> int:
        with self._lock:
            return len(self._states)

    def __repr__(self) -> str:
        return f"StableWindows({len(self)} conversations, max {self.max_conversations})"

    def get(self, key: Hashable) -> StableWindow | None:
        """The state of conversation ``key`` (``None``: none yet)."""
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                self._states.move_to_end(key)
            return state

    def put(self, key: Hashable, state: StableWindow) -> None:
        """Remember ``state`` for ``key`` (evicting the least recently used past the cap)."""
        with self._lock:
            self._states[key] = state
            self._states.move_to_end(key)
            while len(self._states) > self.max_conversations:
                self._states.popitem(last=False)

    def forget(self, key: Hashable) -> None:
        """Drop the state of ``key`` (its next call starts fresh)."""
        with self._lock:
            self._states.pop(key, None)

    def clear(self) -> None:
        """Drop every state."""
        with self._lock:
            self._states.clear()
