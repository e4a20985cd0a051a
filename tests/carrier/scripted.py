"""Scripted chat clients and a tiny hand-built fixture for protocol tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.carrier.fixture_model import Chunk, Fact, Message
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage

Reply = ChatResponse | Exception | Callable[[ChatRequest], ChatResponse]


def text(body: str, finish: str = "stop", **kw: object) -> ChatResponse:
    return ChatResponse(
        text=body, finish_reason=finish, usage=Usage(prompt_tokens=100, completion_tokens=20), **kw
    )  # type: ignore[arg-type]


def as_json(fields: dict[str, str]) -> ChatResponse:
    return text(json.dumps(fields))


@dataclass
class ScriptedClient:
    """Answers fold requests from `folds` in order and the recall request with `recall`."""

    folds: list[Reply]
    recall: Reply = field(default_factory=lambda: text(""))
    requests: list[ChatRequest] = field(default_factory=list)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        reply = self.recall if request.purpose == "recall" else self.folds.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply


GRADED = (
    Fact("ingress port", "41873", "port", True, 0, "tool"),
    Fact("shard count", "19 shards", "count", True, 1, "user"),
    Fact("signing key id", "kid-7f3a9c2e", "key_id", True, 2, "assistant"),
)

CHUNKS = (
    Chunk(0, (Message("tool", "listener bound on port 41873 at edge-7.corp.internal", "bash"),)),
    Chunk(1, (Message("user", "Please reshard the index into 19 shards tonight."),)),
    Chunk(2, (Message("assistant", "Rotated the signing key; new key id is kid-7f3a9c2e."),)),
)

GOOD_ANSWER = "ingress port: 41873\nshard count: 19 shards\nsigning key id: kid-7f3a9c2e"
