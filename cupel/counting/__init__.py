"""Token counting helpers: :func:`estimate_tokens`, an approximate cl100k_base count."""

from cupel.counting._estimate import estimate_tokens

__all__ = ["estimate_tokens"]
