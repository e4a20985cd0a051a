"""When a fact of one text counts as present in another: the rule retention, precision and the
hybrid ledger share, so the ledger lists exactly what the metrics count as dropped.

A fact `f` of kind `k` is present in text `T` when either
- `f` is among the facts `facts.extract(T)` finds of kind `k` (so normalised forms meet:
  `30ms` in the trace and `30 ms` in the summary are one fact), or
- `f` occurs verbatim in `T` (whitespace normalised) with no letter, digit or underscore
  directly before or after it (so `line 9` is not present in `line 913`, while `app.py` is
  present in `src/app.py`). Line references compare case-insensitively (`Line 913`).

Each distinct fact counts once, however often either text repeats it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.traces.compression.facts import Fact, extract, normalise_space


@dataclass(frozen=True)
class Presence:
    """The facts of one text split by whether another text carries them."""

    present: tuple[Fact, ...]
    absent: tuple[Fact, ...]


def occurs(fact: Fact, text: str) -> bool:
    """`fact.value` appears in `text` as a whole token (whitespace normalised)."""
    flags = re.IGNORECASE if fact.kind == "line_ref" else 0
    pattern = rf"(?<!\w){re.escape(fact.value)}(?!\w)"
    return re.search(pattern, normalise_space(text), flags) is not None


def split(facts: Iterable[Fact], text: str, text_facts: Sequence[Fact] | None = None) -> Presence:
    """`facts` split into those present in `text` and those absent (order kept).

    `text_facts` is `extract(text)` when the caller already has it (saves a second scan).
    """
    found = set(extract(text) if text_facts is None else text_facts)
    present: list[Fact] = []
    absent: list[Fact] = []
    for fact in dict.fromkeys(facts):
        (present if fact in found or occurs(fact, text) else absent).append(fact)
    return Presence(tuple(present), tuple(absent))
