"""What one HTTP exchange leaves behind: the attempt's outcome, and its response side.

Two consumers, one shape each:
- `SentAttempt`: one per HTTP request actually sent (retries included), so the engine's
  `requests` table holds a row for each, not one per logical request;
- `Exchange`: the response side of a chat exchange (status, the headers that matter, the
  body) with the request body's SHA-256, for `endpoint.record` and `serve replay`. No request
  header is ever kept: the Authorization header, and so the key, cannot reach a recording.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# Response headers worth keeping: what a bill, a retry or a limiter reads, and nothing that
# could identify an account (cookies, request ids) or carry a secret.
KEPT_HEADERS = ("content-type", "retry-after", "retry-after-ms")
KEPT_HEADER_PREFIXES = ("x-ratelimit-",)


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers a recording and the retry policy read, names lower-cased."""
    kept: dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if lowered in KEPT_HEADERS or lowered.startswith(KEPT_HEADER_PREFIXES):
            kept[lowered] = value
    return kept


def request_sha256(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


@dataclass(frozen=True)
class SentAttempt:
    """One HTTP request sent for a logical request: its status (None without a reply), the
    error kind it raised (None on success), its latency and the wait the server asked for."""

    status: int | None
    error: str | None
    latency_s: float
    wait_s: float | None = None
    detail: str | None = None

    @classmethod
    def failed(cls, exc: Exception, latency_s: float, *, status: int | None = None) -> SentAttempt:
        """`status`: the reply's, where the exception does not carry it (a 2xx whose body was
        an error or not an answer)."""
        status = getattr(exc, "status", status)
        wait = getattr(exc, "retry_after", None)
        return cls(
            status if isinstance(status, int) and status > 0 else None,
            str(getattr(exc, "kind", None) or type(exc).__name__),
            latency_s,
            wait if isinstance(wait, float | int) else None,
            str(exc),
        )


@dataclass(frozen=True)
class Exchange:
    """The response side of one chat exchange, as `endpoint.record` writes it."""

    model: str
    request_sha256: str
    status: int
    headers: Mapping[str, str]
    body: str


Recorder = Callable[[Exchange], None]
