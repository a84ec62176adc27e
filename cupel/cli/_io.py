"""Input and output for the ``cupel`` command line: strict JSON in, strict JSON and
terminal-safe text out.

Package-private. Items come as a JSON array or as JSON Lines. JSON Lines are split on
``\\n`` only: U+2028, U+2029 and U+0085 are legal inside JSON strings (``json.dumps``
with ``ensure_ascii=False`` writes them raw), so ``str.splitlines()`` would cut lines
that cupel itself wrote. Numbers are held to what strict JSON parsers accept: ``NaN``,
``Infinity`` and ``-Infinity`` are refused, as are numbers that overflow a double
(``1e400``) and integers longer than Python converts (4,300 digits by default); the
error names the file, the line or item, and the field.

>>> parse_items('{"content": "a\\u2028b", "tokens": 2}\\n', "items.jsonl")[0].content
'a\\u2028b'
>>> parse_items('{"content": "a", "tokens": 1, "metadata": {"x": NaN}}', "items.jsonl")
... # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
cupel.CliError: items.jsonl, line 1: metadata.x: NaN is not a JSON number
(strict JSON has no NaN or Infinity)

Output: :func:`write_json` writes strict JSON (a non-finite float, which strict JSON
cannot express, becomes ``null``), streaming :class:`Lines` arrays (a report's entries)
one element a line as they are made; :func:`terminal_safe` shows control characters
(ANSI escape sequences among them) as visible escapes instead of sending them to the
terminal.

>>> terminal_safe("red \\x1b[31malert\\x1b[0m\\tdone")
'red \\\\x1b[31malert\\\\x1b[0m\\tdone'
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import IO, Any

from cupel._errors import CliError, CupelError
from cupel._model import ContextItem
from cupel.cli._transcript import Transcript, is_message, parse_transcript

__all__ = [
    "CliError",
    "Lines",
    "dump_json",
    "parse_input",
    "parse_items",
    "read_items",
    "strict_json_value",
    "terminal_safe",
    "write_json",
]


# -- strict numbers ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Refused:
    """Stands in for a number strict JSON cannot carry, until its path is known."""

    why: str


class _StrictDecoder:
    """``json.loads`` with hooks that replace refused numbers by :class:`_Refused`."""

    def __init__(self) -> None:
        self.refused = False

    def _mark(self, why: str) -> _Refused:
        self.refused = True
        return _Refused(why)

    def _constant(self, name: str) -> _Refused:
        return self._mark(f"{name} is not a JSON number (strict JSON has no NaN or Infinity)")

    def _float(self, text: str) -> float | _Refused:
        value = float(text)
        if math.isfinite(value):
            return value
        shown = text if len(text) <= 24 else text[:20] + "…"
        return self._mark(f"{shown} is out of range for a 64-bit float")

    def _int(self, text: str) -> int | _Refused:
        try:
            return int(text)
        except ValueError:  # longer than sys.get_int_max_str_digits()
            digits = len(text.lstrip("-"))
            limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
            return self._mark(f"an integer of {digits:,} digits is too long (at most {limit:,})")

    def loads(self, text: str) -> Any:
        self.refused = False
        return json.loads(
            text, parse_constant=self._constant, parse_float=self._float, parse_int=self._int
        )


def _first_refused(value: Any, path: str = "") -> tuple[str, _Refused] | None:
    """The first refused number in ``value`` (document order) and its dotted path."""
    if isinstance(value, _Refused):
        return path, value
    if isinstance(value, dict):
        for key, child in value.items():
            found = _first_refused(child, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found = _first_refused(child, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _refusal(entry: Any, where: str) -> CliError:
    found = _first_refused(entry)
    path, refused = found if found is not None else ("", _Refused("a number is not valid"))
    return CliError(f"{where}: {path + ': ' if path else ''}{refused.why}")


# -- reading items -------------------------------------------------------------------------
_JSON_WHITESPACE = " \t\r\n"


def _item(entry: Any, where: str) -> ContextItem:
    try:
        return ContextItem.from_dict(entry)
    except CupelError as exc:
        raise CliError(f"{where}: {exc}") from None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered JSON Lines, split on ``\\n`` only; blank lines are skipped."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip(_JSON_WHITESPACE):
            yield number, line


def _entries(
    text: str,
    source: str,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None,
) -> Iterator[tuple[str, Any]]:
    """The decoded entries of a JSON array or JSON Lines text, each with where it was
    read (``"items.jsonl, line 3"``); refused numbers and bad JSON are errors naming the
    place. A request body ``{"messages": [...]}`` gives its messages; an object wrapping
    the items (``{"items": [...]}``) gets one hint."""
    decoder = _StrictDecoder()
    stripped = text.lstrip(_JSON_WHITESPACE)
    data: Any = None
    place = "item {}"  # where an entry of the array was read
    if stripped.startswith("{"):
        try:
            whole = decoder.loads(text)
        except (json.JSONDecodeError, RecursionError):
            whole = None  # JSON Lines, or an error the line-by-line reading reports
        if isinstance(whole, dict):
            data = _unwrapped(whole, source)
            place = "messages[{}]"
    if data is None and stripped.startswith("["):
        try:
            data = decoder.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(
                f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise CliError(f"{source}: JSON nested too deeply") from None
        if not isinstance(data, list):
            raise CliError(f"{source}: expected a JSON array of items")
    if data is not None:
        entries: Iterable[Any] = enumerate(data)
        if progress is not None:
            entries = progress(entries, len(data))
        for index, entry in entries:
            where = f"{source}: {place.format(index)}"
            if decoder.refused and _first_refused(entry) is not None:
                raise _refusal(entry, where)
            yield where, entry
        return
    lines: Iterable[tuple[int, str]] = _lines(text)
    if progress is not None:
        numbered = list(lines)
        lines = progress(numbered, len(numbered))
    for number, line in lines:
        where = f"{source}, line {number}"
        try:
            entry = decoder.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{where}: invalid JSON at column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise CliError(f"{where}: JSON nested too deeply") from None
        if decoder.refused:
            raise _refusal(entry, where)
        yield where, entry


_WRAPPERS = ("items", "messages", "data", "records")


def _unwrapped(whole: dict[str, Any], source: str) -> list[Any] | None:
    """The messages of a request body ``{"messages": [...]}``; ``None`` for an object
    that is one item or message (JSON Lines of one line); a hint for an object wrapping a
    list of items."""
    if "content" in whole or "role" in whole:
        return None
    messages = whole.get("messages")
    if (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, dict) and "role" in m for m in messages)
    ):
        return messages
    key = next((k for k in _WRAPPERS if isinstance(whole.get(k), list)), None)
    if key is None:
        return None
    raise CliError(
        f'{source}: the items are wrapped in an object ({{"{key}": [...]}}): give the array '
        f"itself, a JSON array or one item per line (e.g. jq -c '.{key}[]' {source})"
    )


def parse_input(
    text: str,
    source: str,
    *,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
) -> list[ContextItem] | Transcript:
    """Items, or a chat transcript when the first entry is a chat message (it has a
    ``role`` and no ``tokens``; see :mod:`cupel.cli._transcript`)."""
    entries = _entries(text, source, progress)
    first = next(entries, None)
    if first is None:
        return []
    if is_message(first[1]):
        return parse_transcript(chain([first], entries))
    return [_item(entry, where) for where, entry in chain([first], entries)]


def parse_items(
    text: str,
    source: str,
    *,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
) -> list[ContextItem]:
    """Items from a JSON array or JSON Lines text; errors name ``source`` and the place.

    ``progress(iterable, total)`` may wrap the per-item loop (a progress bar).
    """
    return [_item(entry, where) for where, entry in _entries(text, source, progress)]


def read_items(
    path: str,
    *,
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
) -> list[ContextItem] | Transcript:
    """Read items or a chat transcript from ``path`` (``-`` for stdin)."""
    if path == "-":
        return parse_input(sys.stdin.read(), "<stdin>", progress=progress)
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_input(text, path, progress=progress)


# -- writing -------------------------------------------------------------------------------
def strict_json_value(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON ``null``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict_json_value(child) for key, child in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json_value(child) for child in value]
    return value


_ENCODERS = {
    indent: json.JSONEncoder(indent=indent, ensure_ascii=False, allow_nan=False).encode
    for indent in (2, None)
}


def dump_json(value: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text: never ``NaN`` / ``Infinity`` tokens (``indent``: 2 or ``None``)."""
    encode = _ENCODERS[indent]
    try:
        return encode(value)
    except ValueError:  # a non-finite float somewhere: write it as null
        return encode(strict_json_value(value))


class Lines:
    """A JSON array that :func:`write_json` streams: each element is made (by iterating
    ``elements``), written on a line of its own as compact JSON and let go, so neither
    the array nor its text is ever held whole. What a long report's entries are written
    as; the document parses to the same value as the indented form. With ``encoded``,
    the elements are already compact JSON texts (:func:`dump_json` with ``indent=None``)."""

    __slots__ = ("elements", "encoded")

    def __init__(self, elements: Iterable[Any], *, encoded: bool = False) -> None:
        self.elements = elements
        self.encoded = encoded


_BATCH = 1024
"""Elements of a :class:`Lines` array joined into one write."""


def write_json(value: Any, stream: IO[str] | None = None) -> None:
    """Write ``value`` as strict JSON and a newline to ``stream`` (stdout), indented like
    ``json.dumps(value, indent=2)``; a :class:`Lines` array (at the top or as the value of
    an object key) has one element a line.

    >>> import io
    >>> out = io.StringIO()
    >>> write_json({"n": 2, "entries": Lines(iter([{"a": [1]}, {"a": []}]))}, out)
    >>> print(out.getvalue(), end="")
    {
      "n": 2,
      "entries": [
        {"a": [1]},
        {"a": []}
      ]
    }
    """
    out = sys.stdout if stream is None else stream
    _write(value, out, "\n")
    out.write("\n")


def _streams(value: Any) -> bool:
    """Whether ``value`` is, or an object in it holds, a :class:`Lines` array."""
    if isinstance(value, Lines):
        return True
    return isinstance(value, dict) and any(map(_streams, value.values()))


def _write(value: Any, out: IO[str], newline: str) -> None:
    """``value`` at the indentation ``newline`` (a newline and the current indent)."""
    if not _streams(value):
        out.write(dump_json(value).replace("\n", newline))
        return
    inner = newline + "  "
    if isinstance(value, Lines):
        batch: list[str] = ["["]
        separator = inner
        encoded = value.encoded
        for element in value.elements:
            batch.append(separator)
            batch.append(element if encoded else dump_json(element, indent=None))
            separator = "," + inner
            if len(batch) > _BATCH:
                out.write("".join(batch))
                batch.clear()
        batch.append("]" if separator is inner else newline + "]")
        out.write("".join(batch))
        return
    separator = "{" + inner
    for key, child in value.items():
        out.write(separator + json.dumps(key, ensure_ascii=False) + ": ")
        _write(child, out, inner)
        separator = "," + inner
    out.write(newline + "}")


# C0 controls but tab and newline, DEL, and C1 controls (0x9b is an 8-bit CSI).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def terminal_safe(text: str) -> str:
    """``text`` with control characters (ANSI escapes among them) shown as ``\\xNN``;
    newlines and tabs stay."""
    return _CONTROL.sub(_visible, text)
