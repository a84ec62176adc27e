"""Text counters: every form of tokenizer a user may already hold, as one ``str -> int``.

======================================  ============================================
what is passed                          how a text is counted
======================================  ============================================
``"approximate"``                       :func:`~cupel.counting.estimate_tokens`
a ``tiktoken`` ``Encoding``             ``len(encoding.encode_ordinary(text))``
a HuggingFace ``tokenizers.Tokenizer``  its ``encode(text).ids`` (no special tokens)
a ``transformers`` tokenizer            its ``encode(text)`` (no special tokens)
a callable returning an ``int``         ``counter(text)``
a callable returning tokens (a list)    ``len(counter(text))`` (LlamaIndex's ``tokenizer_fn``)
======================================  ============================================

A counter only ever sees text: images and other media, the per-message overhead and the
tool calls' structure are priced by :class:`~cupel.counting.MessageCost`, the same way
whichever counter is chosen.

>>> count = text_counter(str.split)       # a LlamaIndex-style tokenizer_fn: returns a list
>>> count("three little words")
3
>>> text_counter(lambda text: len(text) // 4)("x" * 40)
10
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sized
from typing import Any

from cupel._errors import ConfigurationError
from cupel.counting._estimate import estimate_tokens

__all__ = ["TextCounter", "checked_count", "is_tokenizer", "text_counter"]

TextCounter = Callable[[str], int]
"""A text → token count function (what :func:`text_counter` returns)."""

_WHAT_TO_PASS = (
    "'approximate', a tiktoken Encoding, a HuggingFace tokenizer, or a callable taking "
    "text and returning a token count or a list of tokens"
)


def checked_count(value: object, field: str = "token_counter") -> int:
    """A counter's result as an exact ``int`` >= 0: an int, a whole float, or the length
    of a sized result (a list of tokens); anything else is a
    :class:`~cupel.ConfigurationError` naming ``field``.

    >>> checked_count(3), checked_count([1, 2]), checked_count(2.0)
    (3, 2, 2)
    """
    kind = type(value)
    if kind is int and value >= 0:  # type: ignore[operator]
        return value  # type: ignore[return-value]
    if kind is list or kind is tuple or kind is range:  # a tokenizer's tokens
        return len(value)  # type: ignore[arg-type]
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, Sized) and not isinstance(value, (str, bytes, dict)):
        return len(value)
    raise ConfigurationError(
        f"{field} returned {type(value).__name__} {value!r:.80} for a text; it must return "
        f"a non-negative int or a list of tokens",
        field=field,
        value=value,
    )


def is_tokenizer(counter: object) -> bool:
    """Whether ``counter`` is a tokenizer object :func:`text_counter` knows (tiktoken,
    HuggingFace ``tokenizers`` or ``transformers``), as opposed to a plain callable."""
    return _tokenizer_route(counter) is not None


def _tokenizer_route(counter: object) -> Callable[[str], int] | None:
    encode_ordinary = getattr(counter, "encode_ordinary", None)
    if callable(encode_ordinary):  # tiktoken.Encoding: special-token text counts as text
        return lambda text: len(encode_ordinary(text))
    module = type(counter).__module__ or ""
    encode = getattr(counter, "encode", None)
    if not callable(encode):
        return None
    if module.split(".", 1)[0] == "tokenizers":  # tokenizers.Tokenizer: encode -> Encoding
        return lambda text: len(encode(text, add_special_tokens=False).ids)
    if callable(getattr(counter, "convert_tokens_to_ids", None)):  # transformers tokenizers
        return lambda text: len(encode(text, add_special_tokens=False))
    return None


def text_counter(counter: object, field: str = "token_counter") -> TextCounter:
    """``counter`` as a function counting one text (see the module table), checked once.

    Anything else — a name other than ``"approximate"``, a number, ``None`` — is a
    :class:`~cupel.ConfigurationError` naming ``field`` and what to pass.

    >>> text_counter("approximate")("How long is the Nile?")  # cl100k: 6
    7
    """
    if isinstance(counter, str):
        if counter == "approximate":
            return estimate_tokens
        raise ConfigurationError(
            f"{field}: unknown counter name {counter!r}; pass {_WHAT_TO_PASS}",
            field=field,
            value=counter,
        )
    route = _tokenizer_route(counter)
    if route is not None:
        return route
    if not callable(counter):
        raise ConfigurationError(
            f"{field} must be {_WHAT_TO_PASS}; got {type(counter).__name__} {counter!r:.80}",
            field=field,
            value=counter,
        )
    call: Callable[[str], Any] = counter
    return lambda text: checked_count(call(text), field)
