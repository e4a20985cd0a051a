"""The ChatClient protocol: the only seam between a pure study protocol and the network.

Study protocols (e.g. carrier `trajectory.py`) depend on this package alone; the HTTP client
(pipeline.endpoints.client), the simulated models and the scripted test clients implement it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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
    """One chat request. Frozen, but not hashable once a Mapping field is set: nothing hashes
    requests (the simulator keys its choices on the received JSON body, not on this value).

    `wire_messages` exists for conversations a harness would send (assistant messages with
    reasoning fields, `tool_calls`, `tool` messages): when set it goes out verbatim as the
    body's `messages` and `messages` may be empty. `template_kwargs` is merged over whatever
    the endpoint's `reasoning` form puts into `chat_template_kwargs`; the request's keys win.
    """

    messages: tuple[ChatMessage, ...]
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    schema: ResponseSchema | None = None  # None: plain text, no response_format sent
    purpose: str = "fold"  # fold | recall | probe (for accounting and the event log)
    wire_messages: tuple[Mapping[str, Any], ...] | None = None  # JSON-able; replaces messages
    tools: tuple[Mapping[str, Any], ...] | None = None  # sent as `tools` when set
    template_kwargs: Mapping[str, Any] | None = None  # sent as `chat_template_kwargs`
    top_p: float | None = None  # sent when set


@dataclass(frozen=True)
class Usage:
    """Token usage as reported; None where the endpoint did not report it.

    `cached_tokens` is None only when the reply had no usage object at all: a usage report
    without a cache count means no cache read. `cache_write_tokens` and `reasoning_tokens` are
    None whenever the field is absent (most providers never report writes, so absence is not 0).
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = 0
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None  # part of completion_tokens

    @property
    def overlapping(self) -> bool:
        """Cache reads and writes that together exceed the prompt: the provider counted the
        same tokens as both (pipeline/endpoints/usage.py prices them so)."""
        prompt, cached, writes = self.prompt_tokens, self.cached_tokens, self.cache_write_tokens
        return prompt is not None and (cached or 0) + (writes or 0) > prompt and bool(writes)

    @property
    def reported(self) -> bool:
        """Both counts a bill needs were reported (else the engine bills an upper estimate)."""
        return self.prompt_tokens is not None and self.completion_tokens is not None


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
    # What the provider says it charged for this reply (OpenRouter's `usage.cost`), else None.
    billed_usd: float | None = None
    # The sampling fields of the body as sent (after every default, cap and adaptation), so a
    # row can record what the endpoint was asked for, not what the caller meant to ask for.
    sent_sampling: Mapping[str, Any] = field(default_factory=dict)


class ChatClient(Protocol):
    """Anything that can answer one chat request.

    Infrastructure faults raise `pipeline.chat.errors.InfrastructureFault` after the
    client's own bounded retries; a deterministic rejection raises `RequestRejected`. Model
    behaviour (refusal, empty text, `length`) is returned as data, never raised.
    """

    async def complete(self, request: ChatRequest) -> ChatResponse: ...


@runtime_checkable
class TemplateRenderer(Protocol):
    """Anything that can say how the endpoint's own chat template renders a request.

    Raises `RequestRejected(reason="no_apply_template")` when the server has no such route,
    and the chat path's errors otherwise.
    """

    async def apply_template(self, request: ChatRequest) -> str: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that can count the tokens of a text with the endpoint's own vocabulary.

    Raises `RequestRejected(reason="no_tokenize")` when the server has no such route, and the
    chat path's errors otherwise.
    """

    async def count_tokens(self, text: str) -> int: ...


def offers(client: object, *methods: str) -> bool:
    """What `isinstance(client, P)` answers for a runtime-checkable protocol P of just these
    methods (an attribute that is there and not None), without the walk over P's attributes
    that Python 3.11 redoes on every check: a sweep asks once per unit."""
    return all(getattr(client, method, None) is not None for method in methods)


def counter_of(client: object) -> TokenCounter | None:
    """`client` as a TokenCounter, or None when it cannot count tokens (as `renderer_of`)."""
    return client if offers(client, "count_tokens") else None  # type: ignore[return-value]


def renderer_of(client: object) -> TemplateRenderer | None:
    """`client` as a TemplateRenderer, or None when it cannot render templates.

    Wrappers (the worker's CappedClient, CountingClient) carry `apply_template` only when
    the client they wrap does, so this answers truthfully through them.
    """
    return client if offers(client, "apply_template") else None  # type: ignore[return-value]
