"""The client of an offline configuration (panel kind `offline`): it refuses every request.

An offline panel prices configurations without serving them (a replay study accounts requests
under a provider's cache rules and sends none). A runner that tries to send one anyway is a bug
in the study, so the refusal is a deterministic rejection, never retried.
"""

from __future__ import annotations

from pipeline.chat.errors import EndpointError, RequestRejected
from pipeline.chat.messages import ChatRequest, ChatResponse


class OfflineRefusal(RequestRejected):
    """No HTTP status: nothing was sent."""

    def __init__(self, config_id: str) -> None:
        EndpointError.__init__(
            self,
            f"configuration {config_id} is offline (panel kind offline): it has no endpoint, "
            "so no request can be sent",
        )
        self.status = 0
        self.reason = "offline"


class OfflineClient:
    def __init__(self, config_id: str) -> None:
        self.config_id = config_id

    async def complete(self, request: ChatRequest) -> ChatResponse:
        raise OfflineRefusal(self.config_id)
