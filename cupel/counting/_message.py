"""One counting model for chat messages, shared by every adapter.

A message costs what a provider bills for it:

=======================  ==========================================================
part                     tokens
=======================  ==========================================================
text content             the text counter, per text part
images, audio, video...  by rule (:func:`~cupel.counting.media_pricer`), never as text
each message             :data:`MESSAGE_TOKENS` (3: role and separators)
each tool call           the text counter on its name, JSON arguments and id — valid
                         and invalid calls alike (both are sent)
a tool result            its content plus its call id
a message ``name``       the text counter on it
the reply                :data:`REPLY_TOKENS` (3), once per request
=======================  ==========================================================

The adapters read a message into its text parts (content, call names, arguments, ids)
and its media, and :class:`MessageCost` prices them; the rule is the same whichever text
counter is chosen (``"approximate"``, a tokenizer, a callable).

>>> cost = MessageCost(str.split)
>>> cost(["How long is the Nile?"])       # 5 words + 3 per message
8
>>> cost(["Look:"], [Media("image")])      # an image of unknown size: 1,600
1604
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from cupel._budget import ContextBudget
from cupel._errors import ConfigurationError
from cupel.counting._counters import TextCounter, text_counter
from cupel.counting._media import ImageTokens, Media, media_pricer

__all__ = [
    "MESSAGE_TOKENS",
    "REPLY_TOKENS",
    "MessageCost",
    "check_headroom",
    "remembered",
    "request_budget",
]

MESSAGE_TOKENS = 3
"""Tokens every message costs beyond its content (OpenAI's published rule: role and
separators)."""

REPLY_TOKENS = 3
"""Tokens every request costs once, priming the reply (OpenAI's published rule)."""


_REMEMBERED = 1 << 23
"""How many characters of text a :func:`remembered` counter keeps (8 Mi: a few tens of
MB at most) before it starts afresh."""


class _Remembered(dict[str, int]):
    """Counts by text; a text not yet seen is counted on look-up (``__missing__``)."""

    __slots__ = ("count", "held", "limit")

    def __init__(self, count: TextCounter, limit: int) -> None:
        super().__init__()
        self.count = count
        self.limit = limit
        self.held = 0  # characters of the texts kept

    def __missing__(self, text: str) -> int:
        value = self.count(text)
        self.held += len(text)
        if self.held > self.limit:
            self.clear()
            self.held = len(text)
        self[text] = value
        return value


def remembered(count: TextCounter, limit: int = _REMEMBERED) -> TextCounter:
    """``count`` with the counts of texts already seen kept, by the text itself (a
    history is counted again on every call; a string caches its hash, so a repeated text
    costs one dictionary look-up, done in C). Bounded: emptied once the texts kept hold
    more than ``limit`` characters. A counter is a function of the text, so the result
    never changes.

    >>> count = remembered(lambda text: len(text.split()))
    >>> count("a b c"), count("a b c")
    (3, 3)
    """
    return _Remembered(count, limit).__getitem__


class MessageCost:
    """Prices one message from its text parts and media (see the module table).

    ``counter``: any form :func:`~cupel.counting.text_counter` accepts;
    ``image_tokens``: the image rule (:data:`~cupel.counting.ImageTokens`).
    Both are checked here, once.
    """

    __slots__ = ("count_text", "price_media")

    def __init__(self, counter: object = "approximate", image_tokens: ImageTokens = "max") -> None:
        self.count_text: TextCounter = remembered(text_counter(counter))
        self.price_media = media_pricer(image_tokens)

    def __call__(self, texts: Iterable[str], media: Iterable[Media] = ()) -> int:
        """The tokens of one message made of ``texts`` and ``media``."""
        texts_tokens = sum(map(self.count_text, filter(None, texts)))
        return MESSAGE_TOKENS + texts_tokens + sum(map(self.price_media, media))


def check_headroom(value: object, field: str = "headroom") -> float:
    """``headroom`` as a share of the budget kept free, ``0 <= h < 1``, or a
    :class:`~cupel.ConfigurationError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ConfigurationError(
            f"{field} must be a number with 0 <= {field} < 1 (the share of the budget kept "
            f"free for a provider whose tokenizer counts more, e.g. 0.1), got {value!r}",
            field=field,
            value=value,
        )
    return float(value)


def request_budget(
    max_tokens: int,
    target_tokens: int | None = None,
    output_reserve: int = 0,
    *,
    headroom: float = 0.0,
    fixed: int = REPLY_TOKENS,
) -> ContextBudget:
    """The budget for a request's history: reserved with ``output_reserve`` (at most the
    whole budget) are ``fixed`` tokens sent besides the history (the reply's
    :data:`REPLY_TOKENS`, tool definitions) and ``headroom``'s share of ``max_tokens``
    (rounded up).

    The settings as given are checked first (a :class:`~cupel.BudgetError` naming the
    field: a negative or non-integer ``output_reserve``, one above ``max_tokens``, ...).

    >>> request_budget(1000, headroom=0.1).output_reserve   # 3 + 100
    103
    """
    requested = ContextBudget(
        max_tokens=max_tokens,
        target_tokens=max_tokens if target_tokens is None else target_tokens,
        output_reserve=output_reserve,
    )
    reserve = requested.output_reserve + fixed + math.ceil(headroom * requested.max_tokens)
    return requested.model_copy(update={"output_reserve": min(requested.max_tokens, reserve)})
