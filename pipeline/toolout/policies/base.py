"""The policy interface: what the replay shows a policy, and what the policy answers.

The replay calls a policy once per (request being built, tool output visible in it) with an
`OutputView`, and puts the returned `Rendering.text` in the request in place of the output.
A policy is a frozen value; whatever it needs to remember across requests it reads from the
view (`previous`, `exposures`, `later_outputs`), so it holds no state of its own.

Stability contract: once a policy has rendered an output in a non-exact form, it returns
identical bytes for that output on every later request. A policy whose rendering of one output
deliberately changes after it was first compacted (a moving window that rewrites an already
rewritten output) says so with `stable = False`; none of the shipped policies does (see each
policy's docstring). The rule policies keep the contract by construction: deterministic and
keyword renderings are pure functions of the output and its intent, and a model summary is
reused from `previous`, never asked for twice.

The model mode calls no model itself: a `ModelSummaries` carries an injected summariser and
an injected economic gate (a `(view, candidate_bytes) -> (approve, reason)` callable; the study
adapts pipeline/toolout/economics.py's preflight and final checks into one). Without either,
the model mode stays exact with the reason saying which is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, NamedTuple, Protocol

Mode = Literal[
    "exact",  # the output's own bytes
    "deterministic",  # bounded head and tail plus size, SHA-256, omitted bytes, rerun
    "keyword",  # intent-matching lines with context
    "model",  # a summary from the injected summariser
    "cleared",  # Anthropic clear_tool_uses placeholder
    "elided",  # SWE-agent "Old environment output" line
    "masked",  # OpenHands <MASKED>
    "truncated",  # mini-swe-agent head + tail
]

# Reasons of a non-exact rendering: the compacted text shown for the first time for this
# output, or the same bytes as on the previous request (a cache reuse).
TRANSFORMED = "transformed"
REUSED = "reused"

# Characters per token in the peers' byte estimate (Anthropic's trigger is in input tokens).
BYTES_PER_TOKEN = 4


def utf8_len(text: str) -> int:
    """UTF-8 bytes of `text`. An ASCII string (`isascii` reads a flag the string carries: O(1))
    is one byte a character, so only other text is encoded: no copy of every output's bytes
    per render."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def estimate_tokens(n_bytes: int) -> int:
    """The peers' token estimate of `n_bytes` UTF-8 bytes: ceil(bytes / 4)."""
    return -(-n_bytes // BYTES_PER_TOKEN)


@dataclass(frozen=True)
class OutputRef:
    """Another tool output visible in the same request (for peers that count or size them)."""

    output_index: int
    tool_name: str
    size_bytes: int  # its original UTF-8 size


@dataclass(frozen=True, kw_only=True)
class OutputView:
    """One visible tool output as the request being built would show it, uncompacted."""

    tool_name: str
    arguments: str  # the call's arguments as sent (JSON text or a raw command)
    content: str  # the output's exact text
    output_index: int  # 0-based among the transcript's tool outputs
    first_request: int  # index of the first request that shows it
    request_index: int  # the request being built
    exposures: int  # requests already sent that showed it, in any form
    later_outputs: int  # tool outputs that became visible after it, as of this request
    intent: str  # what a policy may rank by: the calling turn's text plus the arguments
    previous: str | None = None  # its text on the previous request; None on first exposure
    # Read only by Anthropic clear_tool_uses (the replay may pass them for every policy):
    request_bytes: int | None = None  # UTF-8 bytes of the whole request as sent, uncompacted
    visible_outputs: Sequence[OutputRef] | None = None  # every output in the request, in order

    def __post_init__(self) -> None:
        if self.exposures < 0 or self.later_outputs < 0 or self.output_index < 0:
            raise ValueError(f"output {self.output_index}: negative index or count in its view")
        if self.request_index < self.first_request:
            raise ValueError(f"output {self.output_index}: request precedes its first exposure")
        if self.exposures == 0 and self.previous is not None:
            raise ValueError(f"output {self.output_index}: a previous text on first exposure")

    @cached_property
    def size_bytes(self) -> int:
        return utf8_len(self.content)

    @classmethod
    def trusted(cls, fields: dict[str, Any]) -> OutputView:
        """A view from every field (and `size_bytes`), unchecked: the replay's own, per asked
        output and request, whose values hold the checks by construction; `fields` becomes
        the view's own dict (the caller must not keep it). A frozen dataclass's `__init__`
        sets each field through `object.__setattr__` and then checks: four times the cost,
        on the hot path."""
        view = object.__new__(cls)
        object.__setattr__(view, "__dict__", fields)  # the caller's dict, not a copy
        return view


class Rendering(NamedTuple):
    """What a policy shows for one output on one request, and why.

    A named tuple: a policy makes one per asked output and request, and a tuple is a quarter
    of a frozen dataclass's cost to build.
    """

    text: str
    mode: Mode
    reason: str  # e.g. forced_exact:error_marker, below_min_bytes, not_worthwhile, transformed
    changed: bool  # text != the output's content
    detail: str = ""  # evidence: the marker or token matched, the rule, the gate's reason


# `tuple.__new__` itself: a named tuple's constructor is a Python function around it.
_tuple = tuple.__new__


def exact(view: OutputView, reason: str, detail: str = "") -> Rendering:
    """The output unchanged, with the reason it stays exact."""
    return _tuple(Rendering, (view.content, "exact", reason, False, detail))


def compacted(view: OutputView, text: str, mode: Mode, detail: str = "") -> Rendering:
    """A non-exact rendering; the reason says whether it repeats the previous request's bytes."""
    reason = REUSED if view.previous == text else TRANSFORMED
    return _tuple(Rendering, (text, mode, reason, text != view.content, detail))


@dataclass(frozen=True)
class Recheck:
    """When the replay must next ask a policy about an output it has just rendered.

    Until then the policy promises the same text for that output (its mode, reason and detail
    may differ, the bytes do not). Conditions combine: the earliest request meeting any of
    them is asked; none set means never again. Every condition is monotone in the request
    (later requests show more outputs and more bytes), so a skipped request cannot change.
    """

    next_request: bool = False
    request_index: int | None = None  # ask at this request
    later_outputs: int | None = None  # ask once this many outputs follow the output
    request_bytes: int | None = None  # ask once the uncompacted request holds this many bytes


NEVER = Recheck()
NEXT_REQUEST = Recheck(next_request=True)


class Policy(Protocol):
    """A compaction policy: one arm of the study."""

    @property
    def name(self) -> str: ...

    @property
    def stable(self) -> bool:
        """True when a non-exact rendering of an output never changes on later requests."""
        ...

    def render(self, view: OutputView) -> Rendering: ...


# A policy may also define `recheck(view, rendering) -> Recheck`: when its rendering of that
# output could next change. The replay asks a policy without it about every visible output on
# every request (correct, and quadratic in the transcript's length).

Summariser = Callable[[OutputView], str | None]
"""An intent-guided summary of the view's output, or None when none could be had."""

Gate = Callable[[OutputView, int], tuple[bool, str]]
"""The economic gate: (view, candidate_bytes) -> (approve, reason).

Called twice per candidate, as Torana's compactor does: a preflight with candidate_bytes = 0
(the best case, before paying for a summary) and a final check with the summary's UTF-8 size.
A NamedTuple `GateDecision(approve, reason)` is such a tuple.
"""


@dataclass(frozen=True)
class ModelSummaries:
    """The model mode's injected collaborators; None fails closed (the output stays exact)."""

    summarise: Summariser | None = None
    gate: Gate | None = None
