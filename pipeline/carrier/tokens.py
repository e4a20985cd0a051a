"""A frozen, offline token estimate: character classes weighted in quarter tokens.

Why: chunk boundaries, carry caps and `prompt_tokens_est` must not move when a tokenizer
library or a provider changes, and the paper's public v2 fixture replaced the live tokenizer of
v1 by "a frozen offline size heuristic" (§6). This is that heuristic. It is deliberately
simple, integer-only (no float rounding differences between machines) and fast (the UTF-8 bytes
are weighted by one `bytes.translate` and counted in C).

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


def estimate_quarters(text: str) -> int:
    """The estimate in quarter tokens (additive over concatenation, unlike the rounded one).

    Counting each weight's bytes (`bytes.count` runs in C) is twice as fast as summing the
    translated bytes, which iterates in Python-object space; it runs for every request.
    """
    weighted = text.encode("utf-8").translate(_WEIGHTS)
    return sum(weight * weighted.count(weight) for weight in _WEIGHT_VALUES)


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ceil(quarters / 4); 0 only for the empty string."""
    return -(-estimate_quarters(text) // 4)
