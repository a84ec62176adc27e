"""Text rules shared by the model (private): the spec's ASCII case folding and the
valid-Unicode check."""

from __future__ import annotations

import string

__all__ = ["ascii_fold", "is_unicode_text"]

_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_fold(text: str) -> str:
    """Lower-case ASCII letters only (the spec's case folding; not ``str.lower``).

    >>> ascii_fold("ToolOutput"), ascii_fold("ÄB")
    ('tooloutput', 'Äb')
    """
    return text.translate(_ASCII_FOLD)


def is_unicode_text(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (no lone surrogates such as ``"\\ud800"``,
    which would make JSON output, terminals and tokenizers fail halfway).

    >>> is_unicode_text("café"), is_unicode_text("bad \\udc00")
    (True, False)
    """
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
