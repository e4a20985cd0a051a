"""One rooted exception tree for everything that talks to an endpoint.

    EndpointError
    ├── InfrastructureFault            retryable: the request may succeed if sent again
    │   ├── TransportFault             connection refused / reset, DNS
    │   ├── TimeoutFault               connect or read timeout
    │   ├── HttpStatusFault            408, 429, 5xx (status, retry_after)
    │   ├── MalformedEnvelope          truncated body, not JSON, invalid UTF-8, no choices
    │   ├── ErrorBodyFault             HTTP 200 whose body carries an error object
    │   └── InFlightBudgetExhausted    402 in_flight_budget_exhausted
    ├── RequestRejected                deterministic: sending it again gives the same answer
    │                                  (4xx, llama-cpp-python's 500 on json_schema, context)
    └── ProviderCreditsExhausted       402 out of credits / a key's spend limit: the account,
                                       not the request, so the whole run stops (never retried,
                                       never a unit's own invalidity)

Retryability is a type, not a string: the retry policy checks `isinstance(exc,
InfrastructureFault)`. Third-party exceptions are mapped to these at the client boundary.
This module is pure (no aiohttp import) so the protocol layer can catch these types.
"""

from __future__ import annotations


class EndpointError(Exception):
    """Root of every error raised by the endpoint layer."""

    kind: str = "endpoint_error"


class InfrastructureFault(EndpointError):
    """A fault of the transport or the server, not of the model: retry it."""

    kind = "infrastructure"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TransportFault(InfrastructureFault):
    kind = "transport"


class TimeoutFault(InfrastructureFault):
    kind = "timeout"


class HttpStatusFault(InfrastructureFault):
    kind = "http_status"

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}", retry_after=retry_after)
        self.status = status
        self.kind = "rate_limited" if status == 429 else f"http_{status}"


class MalformedEnvelope(InfrastructureFault):
    kind = "malformed_envelope"


class ErrorBodyFault(InfrastructureFault):
    kind = "error_body"


class InFlightBudgetExhausted(InfrastructureFault):
    kind = "in_flight_budget_exhausted"


class RequestRejected(EndpointError):
    """The endpoint deterministically refuses this request shape; never retried."""

    kind = "rejected"

    def __init__(self, status: int, message: str, *, reason: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        # e.g. schema_unsupported, context_too_long, auth; else the status (`http_400`): the
        # validity label `rejected:<reason>` then says what was refused (pipeline.study_validity)
        self.reason = reason or (f"http_{status}" if status else "unclassified")


class ProviderCreditsExhausted(EndpointError):
    """The provider refuses to bill the account any further (HTTP 402 other than the in-flight
    budget): every later request would be refused the same way, so the run stops like a budget
    stop and a resume continues once credits are added."""

    kind = "provider_credits"

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.provider_message = message
