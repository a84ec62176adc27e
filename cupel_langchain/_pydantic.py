"""Turning pydantic validation errors of the adapters' fields into cupel errors."""

from __future__ import annotations

from typing import NoReturn

from pydantic import ValidationError

from cupel import ConfigurationError

__all__ = ["raise_configuration_error"]


def raise_configuration_error(exc: ValidationError, component: str) -> NoReturn:
    """Raise a :class:`~cupel.ConfigurationError` naming the first bad field, its value
    and what was expected."""
    parts = []
    field: str | None = None
    value: object = None
    for index, error in enumerate(exc.errors(include_url=False)):
        location = ".".join(str(part) for part in error.get("loc", ())) or "<input>"
        if index == 0:
            field, value = location, error.get("input")
        message = str(error.get("msg", "invalid"))
        parts.append(f"{component}.{location}: {message}, got {error.get('input')!r}")
    raise ConfigurationError("; ".join(parts), field=field, value=value) from None
