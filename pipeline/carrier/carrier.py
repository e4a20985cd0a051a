"""Reply -> carrier: strip, parse strictly, fail safe, render, and apply the carry cap.

Decisions (docs/carrier.md):
- `<think>` blocks (closed, or an unclosed leading one) and one surrounding code fence are
  stripped before anything else, for every arm.
- JSON arms parse with `json.loads(strict=True)`: raw control characters inside strings fail
  (llama-cpp-python's grammar lets raw newlines through). The reply must be an object whose
  required fields are all strings. Anything else is a parse failure: the fail-safe carries the
  stripped raw text, and the row stays valid with `parse_failures` counted.
- When the client had to relax a schema (`schema_adapted`), each parsed field is clipped to its
  declared ceiling here, so the declared capacity still binds.
- The carry cap keeps the longest prefix whose estimated tokens fit; a clipped carrier loses
  its tail (the newest material a model tends to append last).
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass

from pipeline.carrier.arms import Arm
from pipeline.carrier.tokens import estimate_tokens
from pipeline.chat.messages import ChatResponse

_THINK_CLOSED = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_HEADING_LINE = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*|__)?\s*(?P<text>[^:#*_\n]+?)\s*(?:\*\*|__)?\s*:?\s*$"
)


@dataclass(frozen=True)
class FoldOutcome:
    """What one fold reply turned into."""

    carrier: str  # the carrier before the carry cap
    usable: bool  # False: empty or refused -> catch-up
    parse_failed: bool
    refused: bool


def strip_reply(text: str) -> str:
    """Remove reasoning blocks and one wrapping code fence."""
    text = _THINK_CLOSED.sub("", text)
    if _THINK_OPEN.match(text):
        text = ""  # an unclosed think block never reached the answer
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    return text.strip()


def is_refusal(response: ChatResponse) -> bool:
    """A refusal is what the API says it is: the refusal field or a content-filter stop.

    Reply text is not pattern-matched: a model saying "I can't" inside a summary is content.
    """
    return bool(response.refusal) or response.finish_reason == "content_filter"


def parse_fields(arm: Arm, text: str) -> dict[str, str] | None:
    """Strictly parse a JSON reply into the arm's fields; None on any deviation."""
    try:
        data = json.loads(text, strict=True)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fields: dict[str, str] = {}
    for spec in arm.fields:
        value = data.get(spec.name)
        if not isinstance(value, str):
            return None
        fields[spec.name] = value
    return fields


def render_fields(arm: Arm, fields: dict[str, str]) -> str:
    """Render parsed fields under one heading each, in the schema's order."""
    blocks = [
        f"## {heading}\n{fields[spec.name].strip()}"
        for heading, spec in zip(arm.headings, arm.fields, strict=True)
    ]
    return "\n\n".join(blocks)


def _clip_fields(arm: Arm, fields: dict[str, str]) -> dict[str, str]:
    limits = {f.name: f.max_chars for f in arm.fields}
    return {k: v[: limits[k]] if limits.get(k) is not None else v for k, v in fields.items()}


def carrier_from_reply(arm: Arm, response: ChatResponse) -> FoldOutcome:
    """Turn one fold reply into the next carrier under the arm's rule."""
    refused = is_refusal(response)
    text = "" if refused else strip_reply(response.text)
    if not text:
        return FoldOutcome(carrier="", usable=False, parse_failed=False, refused=refused)
    rule = arm.carrier_from_reply
    if rule == "text":
        return FoldOutcome(carrier=text, usable=True, parse_failed=False, refused=False)
    fields = parse_fields(arm, text)
    if fields is None:
        return FoldOutcome(carrier=text, usable=True, parse_failed=True, refused=False)
    if response.schema_adapted:
        fields = _clip_fields(arm, fields)
    if rule == "raw":
        carried = text if not response.schema_adapted else json.dumps(fields, ensure_ascii=False)
    elif rule == "parsed":
        carried = fields["summary"] if "summary" in fields else next(iter(fields.values()))
    else:
        carried = render_fields(arm, fields)
    usable = bool(carried.strip())
    return FoldOutcome(carrier=carried.strip(), usable=usable, parse_failed=False, refused=False)


def apply_carry_cap(carrier: str, cap_tokens: int) -> tuple[str, bool]:
    """Clip to the longest prefix within `cap_tokens` estimated tokens; say if clipped."""
    if estimate_tokens(carrier) <= cap_tokens:
        return carrier, False
    lo, hi = 0, len(carrier)
    while lo < hi:  # largest prefix length whose estimate fits
        mid = (lo + hi + 1) // 2
        if estimate_tokens(carrier[:mid]) <= cap_tokens:
            lo = mid
        else:
            hi = mid - 1
    return carrier[:lo], True


# Every character `str.strip()` removes (Unicode whitespace), plus the heading markup: one
# strip with this set equals alternating the two strips until nothing changes.
UNICODE_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WHITESPACE_AND_MARKUP = UNICODE_WHITESPACE + "#*_:"


# The line without any mix of whitespace and heading markup (# * _ :) at either end; a
# method caller, so a carrier's lines are stripped and folded in C (`map`), not one Python
# call per line.
_bare = operator.methodcaller("strip", _WHITESPACE_AND_MARKUP)


def count_headings(carrier: str, headings: tuple[str, ...]) -> int:
    """How many of the requested headings arrived as heading lines (any markdown style)."""
    wanted = {h.casefold() for h in headings}
    if not wanted:
        return 0
    lines = carrier.splitlines()
    seen: set[str] = set()
    for line, bare in zip(lines, map(str.casefold, map(_bare, lines)), strict=True):
        # Outside its text a heading line holds only whitespace and markup, so its bare form
        # is the heading: other lines skip the regex, which backtracks on long prose lines
        # (it ran for every fold of every trajectory).
        if bare not in wanted:
            continue
        match = _HEADING_LINE.match(line)
        if match and match.group("text").strip().casefold() in wanted:
            seen.add(match.group("text").strip().casefold())
    return len(seen)
