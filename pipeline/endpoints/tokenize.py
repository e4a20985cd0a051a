"""POST /tokenize: how many tokens a text is in the served model's own vocabulary. Pure.

llama-server serves the route at its root (like /apply-template): the body is
`{"content": text}` and the reply `{"tokens": [id, ...]}`. The count is the length of that
list; special tokens are not added (llama-server's default, `add_special: false`), so a
trace and its summary are counted alike. A server without the route (404, 405, 501) is a
deterministic answer, `RequestRejected(reason="no_tokenize")`, never retried; every other
status follows the chat path's policy.
"""

from __future__ import annotations

import json

from pipeline.chat.errors import EndpointError, MalformedEnvelope, RequestRejected
from pipeline.endpoints.http_status import excerpt, status_error

TOKENIZE_PATH = "/tokenize"
NO_ROUTE_STATUSES = frozenset({404, 405, 501})


def tokenize_body(text: str) -> bytes:
    return json.dumps({"content": text}, ensure_ascii=False).encode("utf-8")


def tokenize_status_error(
    status: int, body: str, *, retry_after: float | None = None
) -> EndpointError | None:
    """The chat status policy, except that a missing route is a rejection with its reason."""
    if status in NO_ROUTE_STATUSES:
        return RequestRejected(
            status, f"the server has no {TOKENIZE_PATH}: {excerpt(body)}", reason="no_tokenize"
        )
    return status_error(status, body, retry_after=retry_after)


def parse_token_count(text: str) -> int:
    """The number of tokens in a 2xx reply; a reply without a token list is malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedEnvelope(f"tokenize reply is not JSON: {excerpt(text, 120)!r}") from exc
    tokens = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(tokens, list):
        raise MalformedEnvelope(f"tokenize reply has no tokens: {excerpt(text, 120)!r}")
    return len(tokens)
