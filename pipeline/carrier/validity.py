"""THE validity rule (DESIGN §4): one function decides whether a row may enter any aggregate.

Every statistic reads the three columns this produces: `valid`, `invalid_reason`, `retryable`.

- Infrastructure faults (transport, timeout, 408/429/5xx after request-level retries,
  malformed envelopes, a lost worker) make a row invalid and retryable: the whole trajectory
  is re-run as a new attempt, up to the attempt limit.
- A deterministic rejection of the request shape is invalid and not retryable.
- The catch-up branch invalidates the row (its chunks were folded together, so it answers a
  different question) and is never retried: retrying would select for the arm succeeding.
- Parse failures, refusals at the recall turn, empty answers and `length` stops are model
  behaviour: the row stays valid and they are counted.

The words are the shared vocabulary of every study (pipeline.study_validity): `catch_up` is
an arm reason, an endpoint error's label comes from `endpoint_failure`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.study_validity import Label, arm, parse

CATCH_UP = arm("catch_up")


@dataclass(frozen=True)
class Validity:
    valid: bool
    invalid_reason: str | None
    retryable: bool


@dataclass(frozen=True)
class ValidityInputs:
    """The facts of one attempt that the rule looks at."""

    error_kind: str | None  # a validity label, or a bare fault kind; None: no endpoint error
    error_retryable: bool
    catch_up: bool
    graded: bool  # a recall answer was obtained and graded


def decide(facts: ValidityInputs) -> Validity:
    """Apply the rule; the order matters: infrastructure first, then arm behaviour."""
    if facts.error_kind is not None:
        kind = facts.error_kind
        if ":" not in kind:  # a bare fault kind: its retryability says which
            kind = str(Label("infrastructure" if facts.error_retryable else "rejected", kind))
        label = parse(kind)
        return Validity(False, str(label), label.retryable)
    if facts.catch_up:
        return Validity(False, CATCH_UP, False)
    if not facts.graded:
        # No error yet no graded answer would be a bug upstream: crash loudly, never drop.
        raise ValueError("a trajectory without an error must have a graded answer")
    return Validity(True, None, False)
