"""Builders for request-boundary tests: a boundary around any client, scripted clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.config.schema import EndpointConfig
from pipeline.study import UnitSpec
from pipeline.sweep.boundary import BoundaryContext, RequestBoundary, endpoint_identity
from pipeline.sweep.budget import BudgetGate
from pipeline.sweep.response_cache import ResponseCache
from tests.endpoints.conftest import endpoint_config


def spec(repeat: int = 0, arm: str = "j", run_id: str = "run") -> UnitSpec:
    return UnitSpec(run_id, "cfg-a", "test-model", "test", arm, 0, repeat, 0)


def boundary(
    inner: Any,
    *,
    endpoint: EndpointConfig | None = None,
    cache_dir: Path | None = None,
    gate: BudgetGate | None = None,
    unit: UnitSpec | None = None,
    session: int = 0,
) -> RequestBoundary:
    ep = endpoint or endpoint_config()
    context = BoundaryContext(
        endpoint=ep,
        identity=endpoint_identity(ep),
        step_purpose="fold",
        session=session,
        cache=ResponseCache(cache_dir) if cache_dir is not None else None,
        gate=gate,
    )
    return RequestBoundary(inner, context, unit or spec())


class Priced:
    """Answers every request with a fixed cost and usage; counts what it was sent."""

    def __init__(self, cost: float = 0.01, *, tokens: int | None = 10) -> None:
        self.cost = cost
        self.tokens = tokens
        self.sent: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.sent.append(request)
        usage = Usage(self.tokens, self.tokens, 2 if self.tokens else 0)
        return ChatResponse(
            text=f"reply {len(self.sent)}", finish_reason="stop", usage=usage, cost_usd=self.cost
        )


class Renders(Priced):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.rendered: list[ChatRequest] = []
        self.fail = fail

    async def apply_template(self, request: ChatRequest) -> str:
        self.rendered.append(request)
        if self.fail:
            raise RequestRejected(404, "no route", reason="no_apply_template")
        return f"<prompt>{request.messages[0].content}</prompt>"
