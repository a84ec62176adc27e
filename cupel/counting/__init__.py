"""Token counting helpers: what a message's parts cost before a tokenizer sees them.

:mod:`cupel.counting` prices the non-text parts of messages the way providers bill them
(:class:`Media` and :func:`media_pricer`: images by pixel size under OpenAI's and
Anthropic's published rules, audio and video by duration, documents by pages) and reads
image sizes from headers without decoding (:func:`image_size`,
:func:`base64_image_size`). The LangChain and LlamaIndex adapters read media out of
their message types into :class:`Media`.

>>> from cupel.counting import Media, media_pricer
>>> media_pricer()(Media("image", width=4000, height=3000))
1598
"""

from cupel._public import publish
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

__all__ = [
    "UNKNOWN_IMAGE_TOKENS",
    "ImageTokens",
    "Media",
    "anthropic_image_tokens",
    "base64_image_size",
    "describe_media",
    "image_size",
    "media_pricer",
    "openai_image_tokens",
    "split_payloads",
]

publish(__name__, globals(), __all__)
