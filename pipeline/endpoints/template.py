"""POST /apply-template: how the server's own chat template renders a request. Pure; no I/O.

llama-server serves the route at its root, not under /v1, and renders with its own Jinja
engine, which is what a study of template visibility needs (a local re-rendering could differ
from the server's). The body carries the fields that reach a template: messages (or
wire_messages verbatim), tools and chat_template_kwargs, built exactly as the chat body
builds them. A server without the route (404, 405, 501) is a deterministic answer,
RequestRejected(reason="no_apply_template"), never retried; every other status follows the
chat path's policy.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.chat.errors import EndpointError, MalformedEnvelope, RequestRejected
from pipeline.chat.messages import ChatRequest
from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.http_status import excerpt, status_error
from pipeline.endpoints.wire import body_messages, chat_template_kwargs, plain_json

TEMPLATE_PATH = "/apply-template"
NO_ROUTE_STATUSES = frozenset({404, 405, 501})
_TEMPLATE_FIELDS = ("model", "messages", "tools", "chat_template_kwargs")


def server_root(base_url: str) -> str:
    """The server's root URL: base_url without its trailing slash and `/v1` suffix."""
    return base_url.rstrip("/").removesuffix("/v1")


def template_body(endpoint: EndpointConfig, request: ChatRequest) -> dict[str, Any]:
    """The body of POST /apply-template, the chat body's template-facing fields."""
    body: dict[str, Any] = {"model": endpoint.model, "messages": body_messages(request)}
    if request.tools is not None:
        body["tools"] = [plain_json(tool) for tool in request.tools]
    kwargs = chat_template_kwargs(endpoint, request)
    if kwargs is not None:
        body["chat_template_kwargs"] = kwargs
    return {key: body[key] for key in _TEMPLATE_FIELDS if key in body}


def template_status_error(
    status: int, body: str, *, retry_after: float | None = None
) -> EndpointError | None:
    """The chat status policy, except that a missing route is a rejection with its reason."""
    if status in NO_ROUTE_STATUSES:
        return RequestRejected(
            status,
            f"the server has no {TEMPLATE_PATH}: {excerpt(body)}",
            reason="no_apply_template",
        )
    return status_error(status, body, retry_after=retry_after)


def parse_prompt(text: str) -> str:
    """The rendered prompt from a 2xx reply; a reply without one is a malformed envelope."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedEnvelope(
            f"apply-template reply is not JSON: {excerpt(text, 120)!r}"
        ) from exc
    prompt = data.get("prompt") if isinstance(data, dict) else None
    if not isinstance(prompt, str):
        raise MalformedEnvelope(f"apply-template reply has no prompt: {excerpt(text, 120)!r}")
    return prompt
