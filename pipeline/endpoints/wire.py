"""The OpenAI-compatible wire format: request bodies and reply envelopes. Pure; no I/O.

Request body decisions (recorded in docs/endpoints.md):
- `seed` is sent when the request has one and the client sends seeds; it is recorded either way.
- A schema goes out in the endpoint's declared form:
    json_schema         {"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}
    json_object_schema  {"type": "json_object", "schema": ...}   (llama-cpp-python's grammar form)
    none                not sent: RequestRejected(reason="schema_unsupported", status 0)
- `max_schema_chars`: every maxLength above it is removed and the ceiling is written into the
  field's description ("at most N characters"); the reply is marked schema_adapted=True and the
  study that sent the request enforces the ceiling client-side. Why: llama-cpp-python's
  grammar crashes the server process on maxLength > 1000.
- Reasoning off: OpenRouter `"reasoning": {"enabled": false}` (its documented switch; models
  whose reasoning is mandatory reject it, which the probe records); chat-template servers
  (vLLM, SGLang, llama.cpp) `"chat_template_kwargs": {"enable_thinking": false}`.
- A request's `template_kwargs` are merged over the endpoint's reasoning form: the request's
  keys win (a study that asks for enable_thinking=true gets it on a reasoning-off endpoint),
  and they are sent as `chat_template_kwargs` whatever the endpoint's form.
- `wire_messages`, `tools` and `top_p` go out as given when the request sets them.
- `sent_sampling` (ChatResponse) is read back from the final body: SAMPLING_KEYS, as sent.
- Provider pin, only on OpenRouter-style endpoints (reasoning == "openrouter" or an
  openrouter.ai base URL) with a provider set: {"order": [provider], "allow_fallbacks": false,
  "quantizations": [quantization] (if set), "require_parameters": true}.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import orjson

from pipeline.chat.errors import ErrorBodyFault, MalformedEnvelope, RequestRejected
from pipeline.chat.messages import ChatRequest, ChatResponse, ResponseSchema
from pipeline.config.schema import EndpointConfig, Prices
from pipeline.config.strict import ConfigError
from pipeline.endpoints.http_status import error_message, excerpt
from pipeline.endpoints.sampling import check_request
from pipeline.endpoints.usage import billed_usd, cache_discount_usd, cost_usd, parse_usage

RESPONSE_FORMS = ("json_schema", "json_object_schema", "none")
SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "seed",
    "max_tokens",
    "chat_template_kwargs",
    "reasoning_effort",
    "reasoning",
    "thinking",
)
REASONING_FORMS = ("openrouter", "chat_template_kwargs", "none")
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def check_endpoint_forms(endpoint: EndpointConfig) -> None:
    """Reject an unknown response_format / reasoning value before any request is built."""
    if endpoint.response_format not in RESPONSE_FORMS:
        raise ConfigError(
            f"{endpoint.config_id}: response_format {endpoint.response_format!r} is not one "
            f"of {', '.join(RESPONSE_FORMS)}"
        )
    if endpoint.reasoning not in REASONING_FORMS:
        raise ConfigError(
            f"{endpoint.config_id}: reasoning {endpoint.reasoning!r} is not one of "
            f"{', '.join(REASONING_FORMS)}"
        )


def is_openrouter(endpoint: EndpointConfig) -> bool:
    return endpoint.reasoning == "openrouter" or "openrouter.ai" in endpoint.base_url


def adapt_schema(schema: Mapping[str, Any], max_chars: int) -> tuple[dict[str, Any], bool]:
    """A copy of `schema` with every maxLength > max_chars moved into its description."""
    changed = False

    def walk(node: Any) -> Any:
        nonlocal changed
        if isinstance(node, Mapping):
            out = {key: walk(value) for key, value in node.items()}
            ceiling = out.get("maxLength")
            if isinstance(ceiling, int) and not isinstance(ceiling, bool) and ceiling > max_chars:
                del out["maxLength"]
                note = f"at most {ceiling} characters"
                description = out.get("description")
                has_text = isinstance(description, str) and description.strip()
                out["description"] = f"{description} ({note})" if has_text else note
                changed = True
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    return walk(schema), changed


def response_format(
    endpoint: EndpointConfig, schema: ResponseSchema
) -> tuple[dict[str, Any], bool]:
    """The response_format object for this endpoint, and whether the schema was adapted."""
    body_schema: dict[str, Any] = dict(schema.schema)
    adapted = False
    if endpoint.max_schema_chars is not None:
        body_schema, adapted = adapt_schema(body_schema, endpoint.max_schema_chars)
    if endpoint.response_format == "json_schema":
        name = _SCHEMA_NAME.sub("_", schema.name)[:64] or "reply"
        form = {"name": name, "strict": True, "schema": body_schema}
        return {"type": "json_schema", "json_schema": form}, adapted
    if endpoint.response_format == "json_object_schema":
        return {"type": "json_object", "schema": body_schema}, adapted
    raise RequestRejected(
        0,
        f"{endpoint.config_id} is configured with response_format none; no schema was sent",
        reason="schema_unsupported",
    )


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The request body's bytes: UTF-8, compact, keys in insertion order.

    orjson writes the same bytes as `json.dumps(ensure_ascii=False, separators=(",", ":"))`
    for what a body holds, in a sixth of the CPU (3 us against 20 for a 6.6 kB request,
    on every request a sweep sends; docs/benchmarks.md). What orjson refuses (a key that is
    not a string, an integer beyond 64 bits, a lone surrogate) goes through the standard
    encoder, which serialises it or fails as it always did.
    """
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def loads(text: str | bytes) -> Any:
    """JSON from a server: orjson (a third of json's CPU for a reply), and the standard
    decoder for what orjson refuses (NaN, integers beyond 64 bits), so both accept the same
    documents and a malformed one raises json.JSONDecodeError as before."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def plain_json(value: Any) -> Any:
    """A copy of `value` with every Mapping a dict and every tuple a list, so any JSON-able
    Mapping (a MappingProxyType, a frozen config) serialises exactly as its items read."""
    if isinstance(value, Mapping):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(item) for item in value]
    return value


def body_messages(request: ChatRequest) -> list[Any]:
    """The body's `messages`: the request's wire_messages verbatim, else role + content."""
    if request.wire_messages is not None:
        return [plain_json(m) for m in request.wire_messages]
    return [{"role": m.role, "content": m.content} for m in request.messages]


def chat_template_kwargs(endpoint: EndpointConfig, request: ChatRequest) -> dict[str, Any] | None:
    """`chat_template_kwargs`: the endpoint's reasoning-off form, the request's keys over it."""
    merged: dict[str, Any] = {}
    if endpoint.reasoning == "chat_template_kwargs":
        merged["enable_thinking"] = False
    if request.template_kwargs is not None:
        merged.update(plain_json(request.template_kwargs))
    return merged if merged or request.template_kwargs is not None else None


def sampling_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling-relevant fields of a body, as JSON reads them back (present ones only)."""
    picked = {key: body[key] for key in SAMPLING_KEYS if key in body}
    return dict(orjson.loads(encode_body(picked)))


def build_body(
    endpoint: EndpointConfig, request: ChatRequest, *, send_seed: bool = True
) -> tuple[dict[str, Any], bool]:
    """The JSON body of POST /chat/completions, and whether the schema was adapted."""
    check_request(endpoint, request)  # a value the endpoint refuses never goes out
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": body_messages(request),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if send_seed and request.seed is not None:
        body["seed"] = request.seed
    if request.tools is not None:
        body["tools"] = [plain_json(tool) for tool in request.tools]
    adapted = False
    if request.schema is not None:
        body["response_format"], adapted = response_format(endpoint, request.schema)
    if endpoint.reasoning == "openrouter":
        body["reasoning"] = {"enabled": False}
    kwargs = chat_template_kwargs(endpoint, request)
    if kwargs is not None:
        body["chat_template_kwargs"] = kwargs
    if endpoint.provider and is_openrouter(endpoint):
        pin: dict[str, Any] = {"order": [endpoint.provider], "allow_fallbacks": False}
        if endpoint.quantization:
            pin["quantizations"] = [endpoint.quantization]
        pin["require_parameters"] = True
        body["provider"] = pin
    return body, adapted


def _load_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedEnvelope(f"{what} is not JSON: {excerpt(text, 120)!r}") from exc
    if not isinstance(data, dict):
        raise MalformedEnvelope(f"{what} is JSON but not an object: {excerpt(text, 120)!r}")
    return data


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return "".join(p for p in parts if isinstance(p, str))
    raise MalformedEnvelope(f"message.content is a {type(content).__name__}")


SIMULATOR_FINGERPRINT = "foldsweep-sim"


def parse_reply(
    text: str,
    prices: Prices,
    *,
    schema_adapted: bool = False,
    sent_sampling: Mapping[str, Any] | None = None,
) -> ChatResponse:
    """A 2xx chat/completions body as data; envelope faults raise (they are infrastructure).

    `schema_adapted` and `sent_sampling` describe the request that was sent: given here, the
    reply is built once rather than copied with them on every request.
    """
    data = _load_object(text, "reply body")
    error = data.get("error")
    if error:
        words = error_message(text) or excerpt(json.dumps(error))
        raise ErrorBodyFault(f"HTTP 200 carrying an error: {words}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise MalformedEnvelope("reply has no choices")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise MalformedEnvelope("choices[0] has no message")
    refusal = message.get("refusal")
    finish = choices[0].get("finish_reason")
    usage = parse_usage(data.get("usage"))
    return ChatResponse(
        text=_content_text(message.get("content")),
        finish_reason=finish if isinstance(finish, str) and finish else "unknown",
        usage=usage,
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        cost_usd=cost_usd(usage, prices),
        # A standalone `serve sim` reached through +panel=endpoint still marks its rows.
        simulated=data.get("system_fingerprint") == SIMULATOR_FINGERPRINT,
        cache_discount_usd=cache_discount_usd(data),
        billed_usd=billed_usd(data),
        schema_adapted=schema_adapted,
        sent_sampling={} if sent_sampling is None else sent_sampling,
    )


def parse_models(text: str, model: str) -> int | None:
    """Context length a /models listing reports for `model` (OpenRouter, vLLM, llama.cpp keys).

    When no entry's id matches and the listing has exactly one model (a local server serving
    one GGUF under its file name), that entry is used.
    """
    entries = _load_object(text, "models listing").get("data")
    if not isinstance(entries, list):
        return None
    mappings = [e for e in entries if isinstance(e, Mapping)]
    matches = [e for e in mappings if e.get("id") == model]
    entry = matches[0] if matches else (mappings[0] if len(mappings) == 1 else None)
    if entry is None:
        return None
    top = entry.get("top_provider")
    meta = entry.get("meta")
    candidates = (
        entry.get("context_length"),
        top.get("context_length") if isinstance(top, Mapping) else None,
        entry.get("max_model_len"),
        meta.get("n_ctx_train") if isinstance(meta, Mapping) else None,
    )
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
