"""The request body a harness sends for a stored conversation, and the three layers' presence.

Seed 002: the "conversation" is three things, the transcript the harness stores, the payload
it sends, and the prompt the template renders. Its harness (Pi) replays a stored reasoning
block for the same model and serialises it onto the assistant message under the field its
signature names (`reasoning`, `reasoning_content` or `reasoning_text`).

`request_body` models that harness: each message keeps the OpenAI chat keys (`WIRE_KEYS`) and
exactly the reasoning field it was stored under; every other stored key stays home. With
`replay_reasoning=False` it models a harness that sends no reasoning back. The body is what the
live renderer (a llama.cpp server) receives and what the offline renderer renders.

`locate` finds a token in any JSON-able value and names where it sits (`messages[1].reasoning`),
so a row says which field carried a secret on the wire, not only that it was there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.traces.visibility.shapes import DIALECTS

WIRE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id")


def wire_message(
    message: Mapping[str, Any],
    *,
    replay_reasoning: bool = True,
    reasoning_fields: Sequence[str] = DIALECTS,
) -> dict[str, Any]:
    """One stored message as sent: the chat keys, plus its reasoning field when replayed
    (one of `reasoning_fields`: `DIALECTS` and any other field a shape plants)."""
    keep = WIRE_KEYS + (tuple(reasoning_fields) if replay_reasoning else ())
    return {key: message[key] for key in keep if key in message}


def request_body(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    replay_reasoning: bool = True,
    reasoning_fields: Sequence[str] = DIALECTS,
) -> dict[str, Any]:
    """The body's conversation part (`messages`, `tools`); model and sampling are the glue's."""
    fields = (*DIALECTS, *(f for f in reasoning_fields if f not in DIALECTS))
    body: dict[str, Any] = {
        "messages": [
            wire_message(m, replay_reasoning=replay_reasoning, reasoning_fields=fields)
            for m in messages
        ]
    }
    if tools:
        body["tools"] = [dict(tool) for tool in tools]
    return body


def locate(value: Any, token: str, path: str = "") -> list[str]:
    """Paths of the string leaves (and object keys) of `value` that contain `token`."""
    found: list[str] = []
    if isinstance(value, str):
        if token in value:
            found.append(path or "$")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if token in str(key):
                found.append(child)
            found += locate(item, token, child)
    elif isinstance(value, Sequence):
        for index, item in enumerate(value):
            found += locate(item, token, f"{path}[{index}]")
    return found


@dataclass(frozen=True)
class Presence:
    """Where one secret is: stored transcript, wire body (and under which field), prompt."""

    in_stored: bool
    in_wire: bool
    wire_fields: tuple[str, ...]
    in_rendered: bool


def presence(
    stored: Sequence[Mapping[str, Any]],
    body: Mapping[str, Any],
    prompt: str | None,
    token: str,
) -> Presence:
    """The three layers for one token; a prompt that failed to render holds nothing."""
    wire_fields = tuple(locate(body, token))
    return Presence(
        in_stored=token in json.dumps(list(stored), ensure_ascii=False),
        in_wire=bool(wire_fields),
        wire_fields=wire_fields,
        in_rendered=prompt is not None and token in prompt,
    )
