"""Turning pydantic validation errors of the adapters' fields into cupel errors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

from pydantic import ValidationError

from cupel import ConfigurationError

__all__ = ["raise_configuration_error"]


def raise_configuration_error(
    exc: ValidationError, component: str, options: Iterable[str] = ()
) -> NoReturn:
    """Raise a :class:`~cupel.ConfigurationError` naming the first bad field, its value
    and what was expected (for an unknown option: the ``options`` the component takes).

    >>> from pydantic import BaseModel, ConfigDict
    >>> class Options(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     max_tokens: int
    >>> try:
    ...     Options(max_tokens=1, max_token=2)
    ... except ValidationError as exc:
    ...     raise_configuration_error(exc, "Options", ["max_tokens"])
    Traceback (most recent call last):
    ...
    cupel._errors.ConfigurationError: Options.max_token: unknown option, got 2; allowed: max_tokens
    """
    errors = exc.errors(include_url=False)
    first = errors[0]
    location = tuple(first.get("loc", ())) or ("<input>",)
    value: object = first.get("input")
    if first.get("type") == "extra_forbidden":
        field = str(location[0])
        message = f"unknown option, got {value!r}; allowed: {', '.join(options)}"
    else:
        alternatives = [e for e in errors if tuple(e.get("loc", ()))[:1] == location[:1]]
        if len(alternatives) > 1:  # a union field: every alternative failed
            field = str(location[0])
            expected = dict.fromkeys(
                str(e.get("msg", "invalid")).removeprefix("Input should be ") for e in alternatives
            )
            message = f"Input should be {' or '.join(expected)}, got {value!r}"
        else:
            field = ".".join(str(part) for part in location)
            message = f"{first.get('msg', 'invalid')}, got {value!r}"
    raise ConfigurationError(f"{component}.{field}: {message}", field=field, value=value) from None
