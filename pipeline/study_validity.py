"""One validity vocabulary for every study: the words of `invalid_reason`, built and parsed here.

An invalid attempt's `invalid_reason` is one of three kinds, and its kind alone decides
`retryable` (DESIGN §4):

    infrastructure:<cause>  the transport or the server failed, not the model: transport,
                            timeout, rate_limited, http_503, malformed_envelope, error_body,
                            in_flight_budget_exhausted, worker_lost. Retryable: the engine
                            re-runs the unit as a new attempt, up to the attempt limit.
    rejected:<reason>       the endpoint deterministically refused the request shape:
                            schema_unsupported, context_too_long, auth, not_found,
                            no_endpoint_for_parameters, http_<status> when the status says no
                            more, ... (RequestRejected.reason). Never retried: the same request
                            gets the same answer. Any other endpoint error not known to be
                            transient is also a rejection (`rejected:<kind>`).
    <reason>                the arm's own behaviour made the row unusable (carrier: catch_up).
                            A bare word, no prefix, as the carrier has written since its first
                            run. Never retried: retrying would select for the arm succeeding.

Causes are snake_case words. `rejected:rejected` (a kind repeated as its own cause) says
nothing and is refused. Parse failures, refusals and `length` stops are data: the row stays
valid and none of these words applies. Studies build their labels with `infrastructure`,
`rejected`, `arm` or `endpoint_failure`, never by hand; `parse` reads one back. Pure: it
imports only the chat error tree, so study protocols may use it.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from pipeline.chat.errors import EndpointError, InfrastructureFault, RequestRejected

INFRASTRUCTURE = "infrastructure"
REJECTED = "rejected"
LabelKind = Literal["infrastructure", "rejected", "arm"]
_WORD = re.compile(r"[a-z][a-z0-9_]*")
_PREFIXED: tuple[LabelKind, ...] = ("infrastructure", "rejected")


class Label(NamedTuple):
    """A parsed `invalid_reason`: its kind and its cause."""

    kind: LabelKind
    cause: str

    @property
    def retryable(self) -> bool:
        """Only an infrastructure fault is retried."""
        return self.kind == "infrastructure"

    def __str__(self) -> str:
        return self.cause if self.kind == "arm" else f"{self.kind}:{self.cause}"


class Failure(NamedTuple):
    """What ends an attempt early: its label, whether it is retried, the error's text."""

    invalid_reason: str
    retryable: bool
    detail: str


def _cause(cause: str, kind: str) -> str:
    if not _WORD.fullmatch(cause) or cause in (INFRASTRUCTURE, REJECTED, kind):
        raise ValueError(f"{cause!r} is not a {kind} cause (a snake_case word, not a kind)")
    return cause


def infrastructure(cause: str) -> str:
    """`infrastructure:<cause>`: retryable."""
    return f"{INFRASTRUCTURE}:{_cause(cause, INFRASTRUCTURE)}"


def rejected(reason: str) -> str:
    """`rejected:<reason>`: the endpoint refused the request shape; never retried."""
    return f"{REJECTED}:{_cause(reason, REJECTED)}"


def arm(reason: str) -> str:
    """`<reason>`: the arm's own behaviour; never retried."""
    return _cause(reason, "arm")


def parse(label: str) -> Label:
    """The kind and cause of `label`; ValueError when it is not in the vocabulary."""
    kind, sep, cause = label.partition(":")
    if not sep:
        return Label("arm", arm(label))
    for known in _PREFIXED:
        if kind == known:
            return Label(known, _cause(cause, known))
    raise ValueError(f"{label!r} is not a validity label (infrastructure:, rejected: or a word)")


def _specific(cause: str) -> str:
    """A cause that names more than its kind (a bare InfrastructureFault says only that)."""
    return "unclassified" if cause in (INFRASTRUCTURE, REJECTED) else cause


def endpoint_failure(exc: EndpointError) -> Failure:
    """The label of an endpoint error that ends an attempt, by the error tree's types."""
    if isinstance(exc, InfrastructureFault):
        return Failure(infrastructure(_specific(exc.kind)), True, str(exc))
    if isinstance(exc, RequestRejected):
        return Failure(rejected(_specific(exc.reason)), False, str(exc))
    return Failure(rejected(_specific(exc.kind)), False, str(exc))  # not known to be transient


__all__ = [
    "INFRASTRUCTURE",
    "REJECTED",
    "Failure",
    "Label",
    "LabelKind",
    "arm",
    "endpoint_failure",
    "infrastructure",
    "parse",
    "rejected",
]
