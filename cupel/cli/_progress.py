"""Progress for long ``cupel`` runs: tqdm bars on stderr, only when stderr is a terminal.

Package-private. Output that is redirected or piped never gets a bar, so scripts and
logs see exactly what they saw before; quick runs show nothing either (a bar appears
only after ``delay`` seconds) and a finished bar erases itself.

>>> with Progress(total=3, desc="probing") as bar:  # not a terminal here: silent
...     for _ in range(3):
...         bar.step("budget 100")
>>> bar.count
3
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from tqdm import tqdm

if TYPE_CHECKING:
    from typing_extensions import Never

__all__ = ["Progress", "on_terminal", "track"]

T = TypeVar("T")

READ_DELAY = 0.5
"""Seconds before the item-reading bar appears (short reads stay silent)."""


def on_terminal() -> bool:
    """Whether stderr is an interactive terminal (the only place bars are drawn)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def _on_stderr() -> dict[str, Any]:
    """What every bar shares: drawn on (the current) stderr, erased when done, as wide as
    the terminal."""
    return {"file": sys.stderr, "leave": False, "dynamic_ncols": True}


def track(iterable: Iterable[T], total: int, *, desc: str, unit: str = "item") -> Iterator[T]:
    """Iterate ``iterable`` with a bar of ``total`` steps (after :data:`READ_DELAY`)."""
    if not on_terminal():
        yield from iterable
        return
    with tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=True,
        delay=READ_DELAY,
        **_on_stderr(),
    ) as bar:
        yield from bar


class Progress:
    """A bar counting steps of known (or estimated) ``total``, shown at once on a terminal."""

    def __init__(self, *, total: int, desc: str, unit: str = "step") -> None:
        self.count = 0
        self._bar: tqdm[Never] | None = None
        if on_terminal():
            bar: tqdm[Never] = tqdm(
                total=total, desc=desc, unit=unit, mininterval=0.05, **_on_stderr()
            )
            bar.refresh()
            self._bar = bar

    def step(self, note: str = "") -> None:
        """One step done; ``note`` shows after the bar (e.g. what is being tried)."""
        self.count += 1
        if self._bar is not None:
            if self._bar.total is not None and self.count > self._bar.total:
                self._bar.total = self.count
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Erase the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
