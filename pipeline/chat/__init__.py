"""The chat seam: the `ChatClient` protocol, its request/response/usage values, the error tree.

A leaf (import-linter holds it): it imports nothing else from the project, so the HTTP client,
the simulator, every study's protocol and the scripted test clients can all depend on it
without depending on each other.
"""

from pipeline.chat.errors import (
    EndpointError,
    ErrorBodyFault,
    HttpStatusFault,
    InFlightBudgetExhausted,
    InfrastructureFault,
    MalformedEnvelope,
    ProviderCreditsExhausted,
    RequestRejected,
    TimeoutFault,
    TransportFault,
)
from pipeline.chat.messages import (
    ChatClient,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    ResponseSchema,
    TemplateRenderer,
    Usage,
    renderer_of,
)

__all__ = [
    "ChatClient",
    "ChatMessage",
    "ChatRequest",
    "ChatResponse",
    "EndpointError",
    "ErrorBodyFault",
    "HttpStatusFault",
    "InFlightBudgetExhausted",
    "InfrastructureFault",
    "MalformedEnvelope",
    "ProviderCreditsExhausted",
    "RequestRejected",
    "ResponseSchema",
    "TemplateRenderer",
    "TimeoutFault",
    "TransportFault",
    "Usage",
    "renderer_of",
]
