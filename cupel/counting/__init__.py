"""Counting what a request costs the way providers bill it.

- :func:`estimate_tokens` — an approximate cl100k_base count of any text (every script,
  JSON, code, base64), computed from the text alone: nothing downloaded.
- :func:`text_counter` — every tokenizer a user may hold (``"approximate"``, a
  ``tiktoken`` encoding, a HuggingFace tokenizer, a callable returning a count or a list
  of tokens) as one ``str -> int``.
- :class:`Media` and :func:`media_pricer` — images by pixel size under OpenAI's and
  Anthropic's published rules (sizes read from PNG, JPEG, GIF and WebP headers without
  decoding: :func:`image_size`, :func:`base64_image_size`), audio and video by duration,
  documents by pages.
- :class:`MessageCost` — one message: text parts by the text counter, media by rule,
  :data:`MESSAGE_TOKENS` of overhead; :data:`REPLY_TOKENS` once per request;
  :func:`request_budget` reserves what a request sends besides its history.
- :class:`Calibration` — the provider's reported input tokens for an earlier request
  against cupel's count, tightening the current call when the provider counted more.
- :func:`cut_text` — a text too large for any window cut to fit, head and tail kept.

The LangChain and LlamaIndex adapters read their message types into text parts and
:class:`Media` and price them here, the same way whichever counter is chosen.

>>> from cupel.counting import Media, media_pricer
>>> media_pricer()(Media("image", width=4000, height=3000))
1598
"""

from cupel._public import publish
from cupel.counting._calibration import CALIBRATION_STAGE, MAX_RATIO, Calibration
from cupel.counting._counters import TextCounter, checked_count, is_tokenizer, text_counter
from cupel.counting._cut import MessageParts, cut_marker, cut_text, fit_unit
from cupel.counting._estimate import estimate_tokens
from cupel.counting._media import (
    UNKNOWN_IMAGE_TOKENS,
    ImageTokens,
    Media,
    anthropic_image_tokens,
    base64_image_size,
    describe_media,
    image_size,
    media_pricer,
    openai_image_tokens,
    split_payloads,
)
from cupel.counting._message import (
    MESSAGE_TOKENS,
    REPLY_TOKENS,
    MessageCost,
    check_headroom,
    remembered,
    request_budget,
)

__all__ = [
    "CALIBRATION_STAGE",
    "MAX_RATIO",
    "MESSAGE_TOKENS",
    "REPLY_TOKENS",
    "UNKNOWN_IMAGE_TOKENS",
    "Calibration",
    "ImageTokens",
    "Media",
    "MessageCost",
    "MessageParts",
    "TextCounter",
    "anthropic_image_tokens",
    "base64_image_size",
    "check_headroom",
    "checked_count",
    "cut_marker",
    "cut_text",
    "describe_media",
    "estimate_tokens",
    "fit_unit",
    "image_size",
    "is_tokenizer",
    "media_pricer",
    "openai_image_tokens",
    "remembered",
    "request_budget",
    "split_payloads",
    "text_counter",
]

publish(__name__, globals(), __all__)
