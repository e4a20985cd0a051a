"""The status policy (pure) and the aiohttp exception mapping, each on its own."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import format_datetime

import aiohttp
import pytest
from aiohttp import client_exceptions as ce
from aiohttp.client_reqrep import ConnectionKey, RequestInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from pipeline.chat.errors import (
    EndpointError,
    HttpStatusFault,
    InFlightBudgetExhausted,
    InfrastructureFault,
    MalformedEnvelope,
    ProviderCreditsExhausted,
    RequestRejected,
    TimeoutFault,
    TransportFault,
)
from pipeline.endpoints.client import map_client_exception
from pipeline.endpoints.http_status import parse_retry_after, status_error

# Verbatim from llama-cpp-python 0.3.36 (POST with OpenAI's json_schema form), 2026-11-29.
LLAMA_CPP_SCHEMA_500 = (
    "{\"error\":{\"message\":\"1 validation error:\\n  {'type': 'literal_error', 'loc': "
    "('body', 'response_format', 'type'), 'msg': \\\"Input should be 'text' or 'json_object'"
    "\\\", 'input': 'json_schema', 'ctx': {'expected': \\\"'text' or 'json_object'\\\"}}"
    '","type":"internal_server_error","param":null,"code":null}}'
)
# Verbatim from llama-cpp-python 0.3.36 for a prompt longer than n_ctx.
LLAMA_CPP_CONTEXT_400 = (
    '{"error":{"message":"This model\'s maximum context length is 2048 tokens. However, you '
    "requested 3036 tokens (3031 in the messages, 5 in the completion). Please reduce the length "
    'of the messages or completion.","type":"invalid_request_error","param":"messages",'
    '"code":"context_length_exceeded"}}'
)


@pytest.mark.parametrize(
    ("status", "body", "expected", "reason"),
    [
        (408, "", HttpStatusFault, None),
        (429, "rate limited", HttpStatusFault, None),
        (500, "internal error", HttpStatusFault, None),
        (502, "bad gateway", HttpStatusFault, None),
        (503, "overloaded", HttpStatusFault, None),
        (504, "", HttpStatusFault, None),
        (402, '{"error": {"code": "in_flight_budget_exhausted"}}', InFlightBudgetExhausted, None),
        (402, '{"error": "insufficient credits"}', ProviderCreditsExhausted, None),
        (500, LLAMA_CPP_SCHEMA_500, RequestRejected, "schema_unsupported"),
        (400, LLAMA_CPP_CONTEXT_400, RequestRejected, "context_too_long"),
        (
            500,
            "response_format json_schema is not supported",
            RequestRejected,
            "schema_unsupported",
        ),
        (
            400,
            "This model's maximum context length is 8192 tokens",
            RequestRejected,
            "context_too_long",
        ),
        (
            400,
            "Requested tokens (9000) exceed context window of 8192",
            RequestRejected,
            "context_too_long",
        ),
        (400, "bad request", RequestRejected, "http_400"),
        (401, "invalid key", RequestRejected, "auth"),
        (403, "forbidden", RequestRejected, "auth"),
        (
            404,
            "No endpoints found that support the requested parameters",
            RequestRejected,
            "no_endpoint_for_parameters",
        ),
        (404, "model not found", RequestRejected, "not_found"),
        (422, "unprocessable", RequestRejected, "http_422"),
        (
            400,
            "Reasoning is mandatory for this endpoint and cannot be disabled",
            RequestRejected,
            "reasoning_not_disableable",
        ),
        (
            400,
            "response_format json_schema unsupported by this provider",
            RequestRejected,
            "schema_unsupported",
        ),
        (418, "teapot", RequestRejected, "http_418"),
        (302, "", MalformedEnvelope, None),
    ],
)
def test_status_policy_maps_status_and_body_to_the_right_type(
    status: int, body: str, expected: type[EndpointError], reason: str | None
) -> None:
    error = status_error(status, body)
    assert type(error) is expected
    if reason is not None:
        assert isinstance(error, RequestRejected)
        assert error.reason == reason
        assert error.status == status


def test_2xx_is_not_an_error() -> None:
    assert status_error(200, "{}") is None
    assert status_error(204, "") is None


def test_retry_after_seconds_reach_the_fault() -> None:
    error = status_error(429, "slow down", retry_after=7.0)
    assert isinstance(error, HttpStatusFault)
    assert error.retry_after == 7.0
    assert error.kind == "rate_limited"


def test_long_error_body_is_excerpted_in_the_message() -> None:
    error = status_error(503, "x" * 10_000)
    assert error is not None
    assert len(str(error)) < 400


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("120", 120.0),
        ("0", 0.0),
        (" 3 ", 3.0),
        ("1.5", 1.5),
        ("-4", 0.0),
        (None, None),
        ("", None),
        ("soon", None),
        ("nan", None),
    ],
)
def test_retry_after_delta_seconds(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header, now=1_000_000.0) == expected


def test_retry_after_http_date_is_seconds_from_now() -> None:
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(datetime(2026, 11, 29, 12, 0, 45, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(header, now=now.timestamp()) == pytest.approx(45.0)


def test_retry_after_http_date_in_the_past_is_zero() -> None:
    header = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after(header, now=datetime(2026, 1, 1, tzinfo=UTC).timestamp()) == 0.0


# --- aiohttp exception mapping ---------------------------------------------------------------

_KEY = ConnectionKey("127.0.0.1", 1, False, True, None, None, None, None)
_INFO = RequestInfo(URL("http://127.0.0.1:1/v1"), "POST", CIMultiDictProxy(CIMultiDict()))


def _response_error(cls: type[ce.ClientResponseError], status: int) -> Callable[[], Exception]:
    return lambda: cls(_INFO, (), status=status, message="m")


# Every ce.ClientError subclass, reviewed: how to build one, and what it must become.
EXPECTED: dict[type[Exception], tuple[Callable[[], Exception], type[EndpointError]]] = {
    ce.ClientError: (lambda: ce.ClientError("x"), TransportFault),
    ce.ClientResponseError: (
        _response_error(ce.ClientResponseError, 503),
        HttpStatusFault,
    ),
    ce.ContentTypeError: (_response_error(ce.ContentTypeError, 200), TransportFault),
    ce.WSServerHandshakeError: (
        _response_error(ce.WSServerHandshakeError, 400),
        RequestRejected,
    ),
    ce.ClientHttpProxyError: (
        _response_error(ce.ClientHttpProxyError, 502),
        HttpStatusFault,
    ),
    ce.TooManyRedirects: (_response_error(ce.TooManyRedirects, 301), RequestRejected),
    ce.ClientConnectionError: (lambda: ce.ClientConnectionError("x"), TransportFault),
    ce.ClientConnectionResetError: (
        lambda: ce.ClientConnectionResetError("x"),
        TransportFault,
    ),
    ce.ClientOSError: (lambda: ce.ClientOSError(104, "reset"), TransportFault),
    ce.ClientConnectorError: (
        lambda: ce.ClientConnectorError(_KEY, ConnectionRefusedError(111, "refused")),
        TransportFault,
    ),
    ce.ClientConnectorDNSError: (
        lambda: ce.ClientConnectorDNSError(_KEY, OSError(-2, "no such host")),
        TransportFault,
    ),
    ce.ClientProxyConnectionError: (
        lambda: ce.ClientProxyConnectionError(_KEY, OSError(1, "proxy")),
        TransportFault,
    ),
    ce.UnixClientConnectorError: (
        lambda: ce.UnixClientConnectorError("/tmp/s", _KEY, OSError(2, "no socket")),
        TransportFault,
    ),
    ce.ClientSSLError: (
        lambda: ce.ClientSSLError(_KEY, OSError(1, "ssl")),
        TransportFault,
    ),
    ce.ClientConnectorSSLError: (
        lambda: ce.ClientConnectorSSLError(_KEY, ssl.SSLError(1, "ssl")),
        TransportFault,
    ),
    ce.ClientConnectorCertificateError: (
        lambda: ce.ClientConnectorCertificateError(_KEY, ssl.SSLCertVerificationError("c")),
        TransportFault,
    ),
    ce.ServerConnectionError: (lambda: ce.ServerConnectionError("x"), TransportFault),
    ce.ServerDisconnectedError: (ce.ServerDisconnectedError, TransportFault),
    ce.ServerTimeoutError: (lambda: ce.ServerTimeoutError("t"), TimeoutFault),
    ce.ConnectionTimeoutError: (lambda: ce.ConnectionTimeoutError("t"), TimeoutFault),
    ce.SocketTimeoutError: (lambda: ce.SocketTimeoutError("t"), TimeoutFault),
    ce.ServerFingerprintMismatch: (
        lambda: ce.ServerFingerprintMismatch(b"a", b"b", "h", 1),
        TransportFault,
    ),
    ce.ClientPayloadError: (lambda: ce.ClientPayloadError("cut"), MalformedEnvelope),
    ce.InvalidURL: (lambda: ce.InvalidURL("::"), RequestRejected),
    ce.InvalidUrlClientError: (lambda: ce.InvalidUrlClientError("::"), RequestRejected),
    ce.InvalidUrlRedirectClientError: (
        lambda: ce.InvalidUrlRedirectClientError("::"),
        RequestRejected,
    ),
    ce.RedirectClientError: (lambda: ce.RedirectClientError("r"), RequestRejected),
    ce.NonHttpUrlClientError: (
        lambda: ce.NonHttpUrlClientError("ftp://x"),
        RequestRejected,
    ),
    ce.NonHttpUrlRedirectClientError: (
        lambda: ce.NonHttpUrlRedirectClientError("ftp://x"),
        RequestRejected,
    ),
}
if hasattr(ce, "UploadAbortedError"):  # newer aiohttp only
    EXPECTED[ce.UploadAbortedError] = (lambda: ce.UploadAbortedError("aborted"), TransportFault)


def _aiohttp_error_classes() -> Iterator[type[Exception]]:
    seen: set[type[Exception]] = set()
    stack: list[type[Exception]] = [aiohttp.ClientError]
    while stack:
        cls = stack.pop()
        if cls in seen or not cls.__module__.startswith("aiohttp"):
            continue
        seen.add(cls)
        yield cls
        stack.extend(cls.__subclasses__())


def test_every_aiohttp_client_error_subclass_has_a_reviewed_mapping() -> None:
    unreviewed = sorted(c.__name__ for c in _aiohttp_error_classes() if c not in EXPECTED)
    assert unreviewed == [], f"aiohttp grew exception types; map and add them: {unreviewed}"


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_aiohttp_exception_maps_into_the_tree(cls: type[Exception]) -> None:
    build, expected = EXPECTED[cls]
    exc = build()
    assert type(exc) is cls
    mapped = map_client_exception(exc)  # type: ignore[arg-type]
    assert type(mapped) is expected


def test_generic_client_error_still_maps_into_the_tree() -> None:
    class NewUpstreamError(aiohttp.ClientError):
        pass

    mapped = map_client_exception(NewUpstreamError("surprise"))
    assert isinstance(mapped, InfrastructureFault)


def test_plain_timeout_error_maps_to_timeout_fault() -> None:
    assert isinstance(map_client_exception(TimeoutError()), TimeoutFault)


def test_disconnect_mid_body_is_a_malformed_envelope() -> None:
    mapped = map_client_exception(aiohttp.ServerDisconnectedError(), phase="body")
    assert isinstance(mapped, MalformedEnvelope)


def test_mapped_message_is_scrubbed() -> None:
    mapped = map_client_exception(
        aiohttp.ClientConnectionError("echo sk-secret-123"),
        scrub=lambda s: s.replace("sk-secret-123", "***"),
    )
    assert "sk-secret-123" not in str(mapped)
