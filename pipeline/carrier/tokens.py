"""A frozen, offline token estimate: character classes weighted in quarter tokens.

Why: chunk boundaries, carry caps and `prompt_tokens_est` must not move when a tokenizer
library or a provider changes, and the paper's public v2 fixture replaced the live tokenizer of
v1 by "a frozen offline size heuristic" (§6). This is that heuristic. It is deliberately
simple, integer-only (no float rounding differences between machines) and fast (the UTF-8 bytes
are weighted by one `bytes.translate` and summed in C).

Weights, in quarter tokens per character (documented in docs/carrier.md, "Token estimate"):

- ASCII letters and whitespace: 1  (about 4 characters per token for English prose)
- ASCII digits: 2                  (numbers split into 1-3 digit pieces)
- ASCII punctuation and symbols: 2 (paths, URLs, JSON and logs are denser than prose)
- ASCII control characters other than whitespace: 4
- any non-ASCII character: 3       (Cyrillic, CJK, emoji: about 1 token per 1-2 characters)

The estimate is ceil(total quarters / 4). It is an estimate, not a tokenizer: real counts for a
given model are recorded separately (`prompt_tokens`) whenever an endpoint reports usage.
Changing any weight changes every fixture's chunking, so it requires a new generator version.
"""

from __future__ import annotations

import string
import zlib

ESTIMATOR_ID = "chars-q4-v1"  # recorded with fixtures; bump with any weight change

_LETTER_OR_SPACE = 1
_DIGIT = 2
_PUNCT = 2
_CONTROL = 4
_NON_ASCII = 3  # charged once per character, on its UTF-8 lead byte


def _byte_weights() -> bytes:
    table = bytearray(256)
    for code in range(128):
        char = chr(code)
        if char in string.ascii_letters or char in " \t\n\r\f\v":
            table[code] = _LETTER_OR_SPACE
        elif char in string.digits:
            table[code] = _DIGIT
        elif char in string.punctuation:
            table[code] = _PUNCT
        else:
            table[code] = _CONTROL
    for code in range(0x80, 0xC0):  # UTF-8 continuation bytes: already charged on the lead
        table[code] = 0
    for code in range(0xC0, 0x100):  # UTF-8 lead bytes: one per non-ASCII character
        table[code] = _NON_ASCII
    return bytes(table)


_WEIGHTS = _byte_weights()
_WEIGHT_VALUES = tuple(sorted(set(_WEIGHTS) - {0}))


# Adler-32's low half is 1 + the sum of the bytes, mod 65521: exact while the weights of a
# piece add up to less than 65520, and a weight is at most 4.
_SUM_PIECE = 16_000
_ADLER_MOD = 65_521
assert _SUM_PIECE * max(_WEIGHT_VALUES) + 1 < _ADLER_MOD


def _byte_sum(data: bytes) -> int:
    """The sum of the bytes of `data`, whose bytes are weights (at most 4).

    Why Adler-32: its one C pass sums the bytes as they stream; counting each weight with
    `bytes.count` took four passes and cost about 120k instructions a carrier request
    (docs/benchmarks.md, "The request path, counted").
    """
    if len(data) <= _SUM_PIECE:
        return (zlib.adler32(data) & 0xFFFF) - 1
    view = memoryview(data)
    pieces = range(0, len(data), _SUM_PIECE)
    return sum((zlib.adler32(view[at : at + _SUM_PIECE]) & 0xFFFF) - 1 for at in pieces)


def estimate_quarters(text: str) -> int:
    """The estimate in quarter tokens (additive over concatenation, unlike the rounded one)."""
    return _byte_sum(text.encode("utf-8").translate(_WEIGHTS))


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(quarters / 4); 0 only for the empty string."""
    return -(-estimate_quarters(text) // 4)
