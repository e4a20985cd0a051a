"""The ChatClient protocol: the only seam between a pure study protocol and the network.

Study protocols (e.g. carrier `trajectory.py`) depend on this package alone; the HTTP client
(pipeline.endpoints.client), the simulated models and the scripted test clients implement it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ChatMessage:
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class ResponseSchema:
    """A JSON schema the reply must conform to; the client picks the wire form."""

    name: str
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    schema: ResponseSchema | None = None  # None: plain text, no response_format sent
    purpose: str = "fold"  # fold | recall | probe (for accounting and the event log)


@dataclass(frozen=True)
class Usage:
    """Token usage as reported; None where the endpoint did not report it."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class ChatResponse:
    text: str
    finish_reason: str  # stop | length | content_filter | ...
    usage: Usage = field(default_factory=Usage)
    refusal: str | None = None
    cost_usd: float = 0.0
    schema_adapted: bool = False  # the client relaxed the schema for this server
    simulated: bool = False  # the server identified itself as foldsweep's simulator
    cache_discount_usd: float | None = None  # OpenRouter's `cache_discount`, where reported


class ChatClient(Protocol):
    """Anything that can answer one chat request.

    Infrastructure faults raise `pipeline.chat.errors.InfrastructureFault` after the
    client's own bounded retries; a deterministic rejection raises `RequestRejected`. Model
    behaviour (refusal, empty text, `length`) is returned as data, never raised.
    """

    async def complete(self, request: ChatRequest) -> ChatResponse: ...
