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
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Validity:
    valid: bool
    invalid_reason: str | None
    retryable: bool


@dataclass(frozen=True)
class ValidityInputs:
    """The facts of one attempt that the rule looks at."""

    error_kind: str | None  # None: no endpoint error ended the trajectory
    error_retryable: bool
    catch_up: bool
    graded: bool  # a recall answer was obtained and graded


def decide(facts: ValidityInputs) -> Validity:
    """Apply the rule; the order matters: infrastructure first, then arm behaviour."""
    if facts.error_kind is not None:
        if facts.error_retryable:
            return Validity(False, f"infrastructure:{facts.error_kind}", True)
        reason = facts.error_kind if ":" in facts.error_kind else f"rejected:{facts.error_kind}"
        return Validity(False, reason, False)
    if facts.catch_up:
        return Validity(False, "catch_up", False)
    if not facts.graded:
        # No error yet no graded answer would be a bug upstream: crash loudly, never drop.
        raise ValueError("a trajectory without an error must have a graded answer")
    return Validity(True, None, False)
