"""An approximate count of the tokens OpenAI's cl100k_base encoding makes of a text,
computed from the text alone (no vocabulary, nothing downloaded).

The estimate is a sum of per-byte weights over the text's UTF-8 bytes plus a charge for
the places where cl100k starts a new token inside a run of letters and digits:

- ASCII: a lowercase letter weighs 3/16 of a token (an English word of five letters and
  its space come to about one token), an uppercase letter 7/16, a digit 9/16, other
  ASCII characters 9/16, a space 3/16 and a newline 2 (its token plus the indentation
  token that usually follows it). Each lowercase→uppercase, uppercase→digit and
  digit→letter step costs 18/16 more: camelCase humps, random-case base64 and hex runs
  are split there.
- Other scripts: a weight per character, chosen by the UTF-8 lead byte (and, for the
  three-byte blocks of South and Southeast Asian scripts and for four-byte characters,
  by the second byte too), calibrated on real text of each script and set at the high
  end of what was measured: Cyrillic 0.63-0.81, Arabic 0.88, Greek 1, CJK ideographs
  1.38, kana 1, Hangul 1.31, Devanagari 1.38, emoji 3; an accented Latin letter 2.5 (it
  splits its word); blocks cl100k encodes byte by byte (Ethiopic, Oriya, most astral
  characters) 3 or 4.

The weights are summed without a Python loop: two ``bytes.translate`` tables map each
byte to a byte whose set bits count its weight (in sixteenths of a token, eight at a time
in the coarse table), and ``int.from_bytes(...).bit_count()`` adds them up; the token
boundaries are flag bits of neighbouring bytes, ANDed the same way.

Measured against cl100k_base on the seeded corpus of ``benchmarks/token_corpus.py``
(450 texts of 50 to 2,000 tokens; ``python -m benchmarks.token_corpus --check``), the
estimate divided by the true count is at least MINRATIO for every text; its median is
ENGMED for English prose, and from CATMEDS for the other categories (see
docs or the check's table). Text in other Latin-script languages without accents (Dutch,
Indonesian, Swahili, ...) is undercounted: cl100k splits their words more than English
ones, and nothing in the bytes tells them apart.
"""

from __future__ import annotations

import string

__all__ = ["estimate_tokens"]

_SIXTEENTHS = 16

# Tokens per byte: ASCII by character class, and other characters by their lead byte
# (continuation bytes weigh nothing). Every weight is a multiple of 1/16, at most 4.5.
_WEIGHTS: dict[bytes | str, float] = {
    string.ascii_lowercase: 3 / 16,
    string.ascii_uppercase: 7 / 16,
    string.digits: 9 / 16,
    " ": 3 / 16,
    "\t": 4 / 16,
    "\n\r": 2.0,
    bytes([0xC2]): 1.0,  # Latin-1 punctuation and symbols: NBSP, ©, «, °
    bytes([0xC3]): 2.5,  # Latin-1 letters: é, ü, ñ
    bytes([0xC4, 0xC5]): 3.0,  # Latin Extended-A: ł, č, ő
    bytes(range(0xC6, 0xCE)): 2.0,  # Latin Extended-B, IPA, combining marks
    bytes([0xCE, 0xCF]): 1.0,  # Greek
    bytes([0xD0]): 9 / 16,  # Cyrillic Ѐ-п
    bytes([0xD1]): 12 / 16,  # Cyrillic р-џ (plus extra for ѐ-џ)
    bytes([0xD2, 0xD3]): 1.75,  # Cyrillic extensions
    bytes([0xD4, 0xD5, 0xD6]): 2.0,  # Armenian
    bytes([0xD7]): 1.25,  # Hebrew
    bytes([0xD8, 0xD9]): 14 / 16,  # Arabic
    bytes([0xDA, 0xDB]): 1.25,  # Arabic for Persian, Urdu, ...
    bytes(range(0xDC, 0xE0)): 2.0,  # Syriac, Thaana, N'Ko
    bytes([0xE0]): 1.0,  # Indic scripts, Thai, Lao, Tibetan (plus the second byte's extra)
    bytes([0xE1]): 1.5,  # Myanmar, Georgian, Ethiopic, Khmer, Vietnamese (plus extra)
    bytes([0xE2]): 1.5,  # punctuation (— “ ” …), arrows, symbols, box drawing
    bytes([0xE3]): 1.0,  # CJK punctuation, kana
    bytes(range(0xE4, 0xEA)): 22 / 16,  # CJK ideographs
    bytes([0xEA, 0xEB, 0xEC, 0xED]): 22 / 16,  # Hangul
    bytes([0xEE]): 3.0,  # private use
    bytes([0xEF]): 1.5,  # fullwidth forms, compatibility ideographs, variation selectors
    bytes([0xF0]): 3.0,  # emoji (plus the second byte's extra for other astral blocks)
    bytes([0xF1, 0xF2, 0xF3, 0xF4]): 4.0,
}
_OTHER_ASCII = 9 / 16  # punctuation, symbols and control characters

# Extra tokens for a character by its lead byte and second byte, in quarters (at most 2).
_SECOND_BYTE_EXTRA: dict[int, dict[range, float]] = {
    0xD1: {range(0x90, 0xA0): 0.5},  # ѐ-џ: Ukrainian, Serbian, Belarusian letters
    0xE0: {
        range(0x80, 0xC0): 2.0,  # Samaritan, Oriya, ... (byte by byte)
        range(0xA4, 0xA6): 0.25,  # Devanagari
        range(0xA6, 0xA8): 0.5,  # Bengali
        range(0xA8, 0xAC): 1.0,  # Gurmukhi, Gujarati
        range(0xAE, 0xB0): 0.75,  # Tamil
        range(0xB0, 0xB4): 1.0,  # Telugu, Kannada
        range(0xB4, 0xB6): 1.0,  # Malayalam
        range(0xB6, 0xB8): 1.25,  # Sinhala
        range(0xB8, 0xBA): 0.0,  # Thai
        range(0xBA, 0xBC): 1.0,  # Lao
        range(0xBC, 0xC0): 1.25,  # Tibetan
    },
    0xE1: {
        range(0x80, 0xC0): 1.5,  # Ethiopic, Cherokee, Mongolian, ... (byte by byte)
        range(0x80, 0x84): 0.75,  # Myanmar, Georgian
        range(0x84, 0x88): 0.0,  # Hangul Jamo
        range(0x9E, 0xA0): 0.25,  # Khmer
        range(0xB8, 0xBC): 0.0,  # Latin Extended Additional (Vietnamese)
        range(0xBC, 0xC0): 0.5,  # Greek Extended
    },
    0xF0: {range(0x80, 0xC0): 1.0, range(0x9F, 0xA0): 0.0},  # astral; 0x9F: emoji
}

# Flag bits: 0 lowercase, 1 uppercase, 2 digit, 3 letter. ``flags & (flags >> 9)`` has
# bit 8i+b set where byte i has flag b and byte i+1 flag b+1: lowercase→uppercase,
# uppercase→digit and digit→letter steps.
_FLAGS = bytes(
    0b1001
    if chr(b) in string.ascii_lowercase
    else 0b1010
    if chr(b) in string.ascii_uppercase
    else 0b0100
    if chr(b) in string.digits
    else 0
    for b in range(256)
)
_BOUNDARY = 18  # sixteenths of a token per flagged step


def _bit_tables(sixteenths: list[int]) -> tuple[bytes, bytes]:
    """Translate tables whose set bits count each byte's weight: eight sixteenths per bit
    of the coarse table, one per bit of the fine one."""
    coarse = bytes((1 << (n // 8)) - 1 for n in sixteenths)
    fine = bytes((1 << (n % 8)) - 1 for n in sixteenths)
    return coarse, fine


def _byte_sixteenths() -> list[int]:
    weights = [round(_OTHER_ASCII * _SIXTEENTHS)] * 128 + [0] * 128
    for chars, tokens in _WEIGHTS.items():
        for byte in chars.encode("ascii") if isinstance(chars, str) else chars:
            weights[byte] = round(tokens * _SIXTEENTHS)
    return weights


_COARSE, _FINE = _bit_tables(_byte_sixteenths())

# (lead byte, table marking it, table of the extra quarters by second byte)
_SECOND_BYTE_TABLES = []
for _lead, _extras in _SECOND_BYTE_EXTRA.items():
    _quarters = [0] * 256
    for _seconds, _extra in _extras.items():
        for _byte in _seconds:
            _quarters[_byte] = round(_extra * 4)
    _SECOND_BYTE_TABLES.append(
        (
            bytes([_lead]),
            bytes(0xFF if b == _lead else 0 for b in range(256)),
            bytes((1 << q) - 1 for q in _quarters),
        )
    )


def _bits(data: bytes, table: bytes) -> int:
    return int.from_bytes(data.translate(table), "little")


def estimate_tokens(text: str) -> int:
    """An approximate count of the cl100k_base tokens of ``text``, meant not to fall
    short: see the module's docstring for the method and its measured accuracy.

    >>> estimate_tokens("")
    0
    >>> estimate_tokens("The quick brown fox jumps over the lazy dog.")
    11
    """
    data = text.encode("utf-8", "surrogatepass")
    sixteenths = 8 * _bits(data, _COARSE).bit_count() + _bits(data, _FINE).bit_count()
    flags = _bits(data, _FLAGS)
    sixteenths += _BOUNDARY * (flags & (flags >> 9)).bit_count()
    if not text.isascii():
        for lead, mark, extra in _SECOND_BYTE_TABLES:
            if data.find(lead) >= 0:
                on_lead = _bits(data, mark) & (_bits(data, extra) >> 8)
                sixteenths += 4 * on_lead.bit_count()
    return -(-sixteenths // _SIXTEENTHS)
