"""The HTTP status policy: which exception a non-2xx reply becomes. Pure; no I/O, no aiohttp.

Why a pure function: the line between "retry it" (InfrastructureFault) and "record it, never
retry" (RequestRejected) decides which rows a sweep re-runs, so it is tested on its own, one
table row per status and body.

    408, 429, 5xx                      HttpStatusFault (retry_after from Retry-After)
    402 + in_flight_budget_exhausted   InFlightBudgetExhausted
    other 402, 429 insufficient_quota  ProviderCreditsExhausted: out of credits or over a key's
                                       spend limit (OpenAI answers that with a 429); the run
                                       stops (never a unit's invalidity)
    500 + json_schema/response_format  RequestRejected(schema_unsupported): llama-cpp-python
          not supported / validation   answers OpenAI's json_schema form with a 500 every time
    400 mentioning the context         RequestRejected(context_too_long)
    404 "No endpoints found"           RequestRejected(no_endpoint_for_parameters) (OpenRouter)
    other 4xx                          RequestRejected (auth, moderation, not_found,
                                       schema_unsupported, reasoning_not_disableable,
                                       payload_too_large, rejected)
    1xx / 3xx (not followed)           MalformedEnvelope: not an answer at all

Body-text markers are matched case-insensitively; a body that matches nothing falls back to the
status alone, so an unknown wording never turns a server fault into a rejection.

An error body's own message leads the exception's text (`error_message`): OpenRouter's
`error.message`, then its `error.metadata.provider_name` and `raw` (which upstream refused,
and how), so a user reads who refused before the excerpt of the body.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime

from pipeline.chat.errors import (
    EndpointError,
    HttpStatusFault,
    InFlightBudgetExhausted,
    MalformedEnvelope,
    ProviderCreditsExhausted,
    RequestRejected,
)

BODY_EXCERPT_CHARS = 300  # how much of an error body an exception message keeps

_CONTEXT_MARKERS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "context_length_exceeded",
    "too many tokens",
    "prompt is too long",
)
_SCHEMA_SUBJECTS = ("json_schema", "response_format", "structured output")
_SCHEMA_COMPLAINTS = ("not supported", "unsupported", "validation error", "invalid", "not support")
_REASONING_COMPLAINTS = ("mandatory", "cannot be disabled", "can't be disabled", "not support")


def excerpt(body: str, limit: int = BODY_EXCERPT_CHARS) -> str:
    """A one-line prefix of an error body for exception messages."""
    flat = " ".join(body.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def error_message(body: str) -> str | None:
    """The error object's own words, with OpenRouter's upstream metadata; None if the body
    has no `error` object with a message (the caller then keeps an excerpt of the body)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, Mapping) else None
    if not isinstance(error, Mapping):
        return None
    message = error.get("message")
    if not isinstance(message, str) or not message.strip():
        return None
    words = [" ".join(message.split())]
    metadata = error.get("metadata")
    if isinstance(metadata, Mapping):
        provider = metadata.get("provider_name")
        if isinstance(provider, str) and provider:
            words.append(f"upstream {provider}")
        raw = metadata.get("raw")
        if raw is not None:
            raw_text = raw if isinstance(raw, str) else json.dumps(raw)
            words.append(f"raw: {excerpt(raw_text, BODY_EXCERPT_CHARS // 2)}")
        reasons = metadata.get("reasons")
        if isinstance(reasons, list) and reasons:
            words.append("reasons: " + ", ".join(str(r) for r in reasons[:5]))
    return excerpt("; ".join(words), 2 * BODY_EXCERPT_CHARS)


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date.

    `now` is the current POSIX time (injected for tests). A date in the past gives 0; a value
    that is neither form gives None (the retry policy then uses its own backoff).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


RATELIMIT_RESET_MS_FLOOR = 10**12  # an x-ratelimit-reset above this is epoch milliseconds


def server_wait(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait: `retry-after` (seconds or an HTTP-date), else
    `retry-after-ms`, else OpenRouter's `x-ratelimit-reset` (epoch milliseconds; epoch
    seconds are accepted too). Header names are lower-case (exchange.kept_headers)."""
    wait = parse_retry_after(headers.get("retry-after"), now=now)
    if wait is not None:
        return wait
    millis = parse_retry_after(headers.get("retry-after-ms"), now=now)
    if millis is not None:
        return millis / 1000.0
    reset = headers.get("x-ratelimit-reset")
    try:
        value = float(reset) if reset is not None else math.nan
    except ValueError:
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    at = value / 1000.0 if value >= RATELIMIT_RESET_MS_FLOOR else value
    return max(0.0, at - now) if at > now / 2 else value  # a small value is a delta


def _mentions(text: str, needles: tuple[str, ...]) -> bool:
    return any(n in text for n in needles)


def is_schema_complaint(text: str) -> bool:
    lowered = text.lower()
    return _mentions(lowered, _SCHEMA_SUBJECTS) and _mentions(lowered, _SCHEMA_COMPLAINTS)


_Rule = tuple[Callable[[int, str], bool], str]
_REJECTION_RULES: tuple[_Rule, ...] = (  # first match wins: most specific first
    (lambda st, b: st in (400, 413, 422) and _mentions(b, _CONTEXT_MARKERS), "context_too_long"),
    (lambda st, b: st == 404 and "no endpoints found" in b, "no_endpoint_for_parameters"),
    (lambda st, b: st == 403 and _mentions(b, ("moderation", "flagged")), "moderation"),
    (lambda st, b: st in (401, 403), "auth"),
    (lambda st, b: is_schema_complaint(b), "schema_unsupported"),
    (
        lambda st, b: "reasoning" in b and _mentions(b, _REASONING_COMPLAINTS),
        "reasoning_not_disableable",
    ),
    (lambda st, b: st == 404, "not_found"),
    (lambda st, b: st == 413, "payload_too_large"),
)


def rejection_reason(status: int, lowered_body: str) -> str:
    """Why a 4xx was a deterministic rejection (RequestRejected.reason); `http_<status>` when
    no rule names more."""
    return next(
        (reason for rule, reason in _REJECTION_RULES if rule(status, lowered_body)),
        f"http_{status}",
    )


def status_error(  # noqa: PLR0911 - one return per row of the policy table
    status: int, body: str, *, retry_after: float | None = None
) -> EndpointError | None:
    """The exception for an HTTP reply, or None for 2xx (the body is then parsed as an answer).

    `body` is the decoded (and already scrubbed) response text; only an excerpt reaches the
    exception message.
    """
    if 200 <= status < 300:
        return None
    lowered = body.lower()
    text = error_message(body) or excerpt(body)
    if status == 402 and "in_flight_budget_exhausted" in lowered:
        return InFlightBudgetExhausted(f"HTTP 402: {text}", retry_after=retry_after)
    if status == 402 or (status == 429 and "insufficient_quota" in lowered):
        return ProviderCreditsExhausted(status, text)  # OpenAI says "out of quota" with a 429
    if status in (408, 429):
        return HttpStatusFault(status, text, retry_after=retry_after)
    if status == 500 and is_schema_complaint(lowered):
        return RequestRejected(status, text, reason="schema_unsupported")
    if 500 <= status < 600:
        return HttpStatusFault(status, text, retry_after=retry_after)
    if 400 <= status < 500:
        return RequestRejected(status, text, reason=rejection_reason(status, lowered))
    return MalformedEnvelope(f"unexpected HTTP {status}: {text}")
