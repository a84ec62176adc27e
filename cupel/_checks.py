"""Validation helpers shared by the model classes (private): pydantic errors as cupel
errors, field types and the timestamp rule."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Annotated, Any, NoReturn

from pydantic import BeforeValidator, Strict, ValidationError

from cupel._errors import ConfigurationError, ItemError
from cupel._frozen import MAX_METADATA_DEPTH

__all__ = [
    "Number",
    "StrictBool",
    "StrictInt",
    "json_object",
    "raise_as",
    "utc_timestamp",
]


def utc_timestamp(value: datetime, *, where: str = "ContextItem.timestamp") -> datetime:
    """``value`` as an aware UTC datetime: naive values are taken as UTC, aware ones are
    converted. An instant that has no UTC date within ``datetime``'s range (year 1 to
    9999), such as ``9999-12-31T23:59:59-05:00``, raises :class:`~cupel.ItemError`
    (``where`` names the field).

    >>> utc_timestamp(datetime(2025, 1, 1, 12)).isoformat()
    '2025-01-01T12:00:00+00:00'
    >>> utc_timestamp(datetime.fromisoformat("9999-12-31T23:59:59-05:00"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ItemError: ContextItem.timestamp: 9999-12-31T23:59:59-05:00 is outside ...
    """
    if not isinstance(value, datetime):
        raise ItemError(
            f"{where}: must be a datetime, got {type(value).__name__} {value!r}",
            field=where.split(".", 1)[-1],
            value=value,
        )
    if value.tzinfo is timezone.utc:
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ItemError(
            f"{where}: {value.isoformat()} is outside the range of UTC datetimes "
            f"(0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z)",
            field=where.split(".", 1)[-1],
            value=value,
        ) from None


def _not_bool_or_text(value: Any) -> Any:
    """Numbers only: ``True`` or ``"0.5"`` is not a float field's value."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"must be a number, got {type(value).__name__} {value!r}")
    return value


def raise_as(exc: ValidationError, model: str, error: type[ConfigurationError]) -> NoReturn:
    """Raise ``exc`` as ``error``: a validator's own error, else one line per problem
    (``<model>.<field>: <message>``), naming the first field and value."""
    errors = exc.errors(include_url=False)
    for err in errors:
        original = (err.get("ctx") or {}).get("error")
        if isinstance(original, ConfigurationError):
            raise original from None
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        where = f"{model}.{loc}" if loc else model
        if err.get("type") == "value_error" or "got" in msg:
            parts.append(f"{where}: {msg}")
        else:
            parts.append(f"{where}: {msg}, got {err.get('input')!r}")
    first = errors[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or None
    raise error("; ".join(parts), field=field, value=first.get("input")) from None


StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
Number = Annotated[float, BeforeValidator(_not_bool_or_text)]


def json_object(text: str | bytes, model: str, error: type[ConfigurationError]) -> Any:
    """``json.loads(text)``, with a document nested too deeply for the parser, bytes that
    are not UTF-8 and invalid JSON refused as ``error`` (one line, naming ``model``)."""
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise error(
            f"{model}: the JSON bytes are not UTF-8 ({exc.reason} at byte {exc.start}); "
            "pass text or UTF-8 bytes"
        ) from None
    except json.JSONDecodeError as exc:
        raise error(
            f"{model}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise error(
            f"{model}: the JSON document is nested too deeply to parse (metadata may nest "
            f"at most {MAX_METADATA_DEPTH} levels)"
        ) from None
