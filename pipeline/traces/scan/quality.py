"""Trace quality, as the seed read it: does a trace correct itself, hedge, or repeat itself?

Seed 002 found that about half of its tool-call traces self-correct, a third hedge, and almost
none repeat. Each detector here is a documented heuristic, not a judgement of quality: a
pattern set over the text (case-insensitive, on word boundaries), with pass and fail tests in
tests/traces/test_scan_quality.py. A trace counts once per detector however many matches it has.

- **self-correction** (`SELF_CORRECTION`): the writer revises what it just thought: "wait",
  "actually", "hmm", "oops", "on second thought", "let me re-check / rethink / reconsider /
  re-read", "I was wrong", "that's not right", "I made a mistake", "scratch that", "I misread",
  "turns out", "that didn't work", "no, that ...". A bare "no" or "but" is not enough.
- **hedging** (`HEDGING`): the writer marks its own uncertainty: "maybe", "perhaps",
  "possibly", "probably", "might", "could be", "I think", "I believe", "I guess", "I suspect",
  "not sure", "it seems", "seems to/like", "likely", "unclear", "presumably".
- **repetition** (`is_repetitive`): the trace repeats itself: some sentence of at least
  `MIN_SENTENCE_WORDS` words occurs twice (after lower-casing and dropping punctuation), or, in
  a trace of at least `MIN_NGRAM_WORDS` words, at least `REPEATED_NGRAM_SHARE` of its word
  `NGRAM`-grams are repeats of an earlier one. Repeating a file path or a command once is not
  repetition; restating whole sentences or looping on a phrase is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SELF_CORRECTION = re.compile(
    r"\b(?:wait|actually|hmm+|oops|on second thought|let me (?:re-?check|rethink|reconsider"
    r"|re-?read|re-?examine|re-?think|double[- ]check)|i was wrong|i made a mistake"
    r"|that(?:'s| is) (?:not right|wrong|incorrect)|scratch that|i misread|i mis(?:understood"
    r"|remembered)|turns out|that (?:didn't|did not|doesn't|does not) work|no,\s+(?:that|it|this"
    r"|wait))\b",
    re.IGNORECASE,
)
HEDGING = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|could be|i think|i believe|i guess|i suspect"
    r"|(?:i'm |i am )?not (?:sure|certain)|it seems|seems (?:to|like)|likely|unclear"
    r"|presumably)\b",
    re.IGNORECASE,
)
MIN_SENTENCE_WORDS = 5
NGRAM = 6
MIN_NGRAM_WORDS = 60
REPEATED_NGRAM_SHARE = 0.3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9_']+")


@dataclass(frozen=True)
class Quality:
    self_correction: bool
    hedging: bool
    repetition: bool


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def is_repetitive(text: str) -> bool:
    """A repeated long sentence, or a high share of repeated word n-grams (module doc)."""
    seen: set[tuple[str, ...]] = set()
    for sentence in _SENTENCE_END.split(text):
        words = tuple(_words(sentence))
        if len(words) < MIN_SENTENCE_WORDS:
            continue
        if words in seen:
            return True
        seen.add(words)
    all_words = _words(text)
    if len(all_words) < MIN_NGRAM_WORDS:
        return False
    grams = [tuple(all_words[i : i + NGRAM]) for i in range(len(all_words) - NGRAM + 1)]
    repeats = len(grams) - len(set(grams))
    return repeats / len(grams) >= REPEATED_NGRAM_SHARE


def quality(text: str) -> Quality:
    """The three detectors over one trace."""
    return Quality(
        self_correction=SELF_CORRECTION.search(text) is not None,
        hedging=HEDGING.search(text) is not None,
        repetition=is_repetitive(text),
    )
