"""The label-bound grader and the carrier audit (paper §3.1, §4.10, §4.11, §6 "Grading").

A check passes when the expected value appears as a whole token on the answer line for its
label and no other graded value appears on that line. Every rule the paper leaves open is
decided here and recorded in docs/carrier.md ("Grading"):

Whole token (`contains_token`)
- Text and value are NFC-normalized; the match is case-sensitive.
- Whitespace inside the value matches any run of non-newline whitespace ("19 shards" matches
  "19\u00a0shards"); the value never spans lines.
- Not a token: a letter or digit (any script) directly before or after the value, or a
  joiner character (one of - _ . / : @ \\ + ~) directly before/after it with a letter or
  digit beyond. So "62114." and "(62114)," pass; "621145", "x62114", "62114.5",
  "/opt/a/b.lock.bak" (for "/opt/a/b.lock"), "62114/tcp" and "host:62114" fail.

Answer line
- Scanned top to bottom; the first line whose label part matches is the answer line.
- Before the label: any mix of whitespace, bullets (- * • · + – —), blockquote '>', heading
  '#', table '|', numbering ("1." "2)" "(3)"), emphasis/code/quote marks (* _ ` " ').
- The label matches case-insensitively; spaces, '_' and '-' inside it are interchangeable
  (markdown often escapes "_" as "\\_", which is accepted too).
- After the label: optional closing emphasis/quote marks, then a separator: ':' (or '：'),
  '=', '|', or a dash (- – —) with whitespace on both sides. Emphasis may close after the
  separator too ("**Port:** 62114").
- "The line" for both the expected and the other-values test is the value part after the
  separator. Occurrences of the expected value are masked before looking for other graded
  values, so a graded value nested inside the expected one cannot fail it.

Outcome of a failing check: `missing` (no answer line, or a value part with no letter, digit
or '?'), else `abstention` (an abstention marker on the line, or only '?'; see answers.py),
else `fabrication` (including a correct value sharing its line with another graded value);
a fabrication matching `is_stock_value` is flagged `stock_signature`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

from pipeline.carrier.answers import abstains, is_stock_value

__all__ = [
    "Check",
    "ExpectedFact",
    "Grade",
    "Outcome",
    "abstains",
    "answer_line_value",
    "contains_token",
    "grade",
    "is_stock_value",
]

Outcome = Literal["passed", "abstention", "fabrication", "missing"]


class ExpectedFact(Protocol):
    """A graded fact: the fixture's graded facts satisfy this structurally."""

    @property
    def label(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class Check:
    """One graded check of one answer (one row of the checks table)."""

    label: str
    expected: str
    kind: str
    answered: str | None  # the value part of the answer line; None when there is no line
    passed: bool
    present_in_carrier: bool | None  # None when no carrier was audited
    outcome: Outcome
    stock_signature: bool  # only ever True for a fabrication


@dataclass(frozen=True)
class Grade:
    checks: tuple[Check, ...]
    recall: float  # checks_passed / checks_total
    checks_passed: int
    checks_total: int
    abstains: bool  # an abstention marker anywhere in the answer


_ALNUM = r"[^\W_]"
_JOINER = r"[-_./:@\\+~]"


def _token_regex(words: Sequence[str]) -> str:
    body = r"[^\S\n]+".join(re.escape(word) for word in words)
    return rf"(?<!{_ALNUM})(?<!{_ALNUM}{_JOINER}){body}(?!{_ALNUM})(?!{_JOINER}{_ALNUM})"


@lru_cache(maxsize=1024)
def _token_parts(value: str) -> tuple[str, re.Pattern[str]]:
    """(the word every match starts with, the whole-token pattern) of a non-blank value."""
    words = unicodedata.normalize("NFC", value).split()
    return words[0], re.compile(_token_regex(words))


def _token_pattern(value: str) -> re.Pattern[str]:
    return _token_parts(value)[1]


@lru_cache(maxsize=1024)
def _any_token_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation matching any of `values` as a whole token (None if all are blank).

    A check looks for every other graded value on its answer line; one search replaces 13.
    """
    regexes = [_token_regex(unicodedata.normalize("NFC", v).split()) for v in values if v.strip()]
    return re.compile("|".join(f"(?:{r})" for r in regexes)) if regexes else None


@lru_cache(maxsize=64)
def _nfc(text: str) -> str:
    """NFC form, cached: one answer and one carrier are searched for every graded value."""
    return unicodedata.normalize("NFC", text)


@lru_cache(maxsize=64)
def _lines(text: str) -> tuple[str, ...]:
    """The NFC lines of an answer, cached: each graded label scans them."""
    return tuple(_nfc(text).splitlines())


def contains_token(text: str, value: str) -> bool:
    """True when `value` occurs in `text` as a whole token (rules in the module docstring)."""
    if not value.strip():
        return False
    # The pattern's leading lookbehinds defeat the regex engine's literal-prefix scan, so
    # `search` crawled through every carrier; `str.find` jumps to where a match can start
    # and `match` there still sees the characters before it.
    first, pattern = _token_parts(value)
    normal = _nfc(text)
    at = normal.find(first)
    while at >= 0:
        if pattern.match(normal, at) is not None:
            return True
        at = normal.find(first, at + 1)
    return False


_LEAD = r"^(?:[\s*_`\"'•·+>|#\-–—]|\(?\d{1,3}[.)])*"
_CLOSE = r"[\s*_`\"']*"
_SEPARATOR = r"(?:[:：=|]|(?<=\s)[-–—](?=\s))"


@lru_cache(maxsize=256)
def _label_pattern(label: str) -> re.Pattern[str]:
    words = [re.escape(word) for word in re.split(r"[\s_\-]+", label.strip()) if word]
    body = r"[\s_\\\-]+".join(words)
    return re.compile(rf"{_LEAD}{body}{_CLOSE}{_SEPARATOR}", re.IGNORECASE)


def answer_line_value(answer: str, label: str) -> str | None:
    """The raw value part of the first line answering `label`, or None if no line does."""
    pattern = _label_pattern(unicodedata.normalize("NFC", label))
    for line in _lines(answer):
        match = pattern.match(line)
        if match is not None:
            return line[match.end() :]
    return None


_WRAPPERS = " \t\r\u00a0\u202f*_`\"'|"


def _clean(value_part: str) -> str:
    """The value part without surrounding whitespace, emphasis, quotes, pipes or a final comma."""
    return value_part.strip(_WRAPPERS).rstrip(",;").strip(_WRAPPERS)


def _others_on_line(value_part: str, expected: str, others: tuple[str, ...]) -> bool:
    masked = _token_pattern(expected).sub(" ", value_part)
    pattern = _any_token_pattern(others)
    return pattern is not None and pattern.search(_nfc(masked)) is not None


def _classify(answered: str | None, kind: str) -> tuple[Outcome, bool]:
    if answered is None:
        return "missing", False
    if not any(character.isalnum() for character in answered):
        return ("abstention", False) if "?" in answered else ("missing", False)
    if abstains(answered):
        return "abstention", False
    return "fabrication", is_stock_value(kind, answered)


def _check(fact: ExpectedFact, others: tuple[str, ...], answer: str, carrier: str | None) -> Check:
    value_part = answer_line_value(answer, fact.label)
    passed = (
        value_part is not None
        and contains_token(value_part, fact.value)
        and not _others_on_line(value_part, fact.value, others)
    )
    answered = None if value_part is None else _clean(value_part)
    outcome: Outcome = "passed"
    stock = False
    if not passed:
        outcome, stock = _classify(answered, fact.kind)
    return Check(
        label=fact.label,
        expected=fact.value,
        kind=fact.kind,
        answered=answered,
        passed=passed,
        present_in_carrier=None if carrier is None else contains_token(carrier, fact.value),
        outcome=outcome,
        stock_signature=stock,
    )


@lru_cache(maxsize=64)
def _others_by_value(values: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """For each graded value, every other graded value (one fixture grades thousands of times)."""
    return {value: tuple(other for other in values if other != value) for value in values}


def grade(graded: Sequence[ExpectedFact], answer: str, carrier: str | None = None) -> Grade:
    """Grade one recall answer against the graded facts; audit `carrier` when given.

    Each check is binary and repeated appearances add nothing (paper §3.1). Raises
    ValueError for an empty fact list: recall over no checks is undefined, and a fixture
    without graded facts is a bug, not data.
    """
    if not graded:
        raise ValueError("grade() needs at least one graded fact")
    others = _others_by_value(tuple(fact.value for fact in graded))
    checks = tuple(_check(fact, others[fact.value], answer, carrier) for fact in graded)
    passed = sum(check.passed for check in checks)
    return Grade(
        checks=checks,
        recall=passed / len(checks),
        checks_passed=passed,
        checks_total=len(checks),
        abstains=abstains(answer),
    )
