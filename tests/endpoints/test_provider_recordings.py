"""Real provider replies through the real client (issue 31; STYLE.md habit 18).

Every recording under data/provider-replies/ (public SDK test cassettes, and a few written by
hand where no public recording exists: their `why` says so) is served byte for byte by an
in-process aiohttp server on 127.0.0.1 and fetched by OpenAIChatClient. Each is held against
its `expected` block, written by hand from the recorded body: the parsed usage, the price
estimate, the billed charge, and an error's classification.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.chat.errors import (
    EndpointError,
    InfrastructureFault,
    ProviderCreditsExhausted,
    RequestRejected,
)
from pipeline.config.schema import Prices
from pipeline.endpoints.exchange import SentAttempt

from .conftest import Reply, ScriptedServer, endpoint_config, open_test_client, user_request

RECORDINGS = Path(__file__).resolve().parents[2] / "data" / "provider-replies"
FILES = sorted(p for p in RECORDINGS.glob("*/*.json"))
# Distinct prices per token class, so a token counted in the wrong class moves the estimate.
PRICES = Prices(
    input_per_mtok=3.0, output_per_mtok=15.0, cached_input_per_mtok=0.3, cache_write_per_mtok=3.75
)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def estimate(expected: dict[str, Any]) -> float:
    """The documented estimate, from hand-written counts (docs/endpoints.md, "Usage dialects")."""
    prompt = expected["prompt_tokens"] or 0
    cached = expected["cached_tokens"] or 0
    writes = expected["cache_write_tokens"] or 0
    overlapping = writes and cached + writes > prompt
    uncached = prompt - max(cached, writes) if overlapping else prompt - cached - writes
    return (
        max(0, uncached) * 3.0
        + cached * 0.3
        + writes * 3.75
        + (expected["completion_tokens"] or 0) * 15.0
    ) / 1e6


async def fetch(recording: dict[str, Any]) -> tuple[Any, list[SentAttempt]]:
    """The client's answer to the recorded reply: a ChatResponse, or the error it raised."""
    response = recording["response"]
    headers = {k: v for k, v in response["headers"].items() if k.lower() != "content-type"}
    reply = Reply(status=response["status"], raw=response["body"].encode(), headers=headers)
    server = ScriptedServer({"/v1/chat/completions": [reply]})
    attempts: list[SentAttempt] = []
    async with server.running():
        endpoint = endpoint_config(server.base_url, prices=PRICES)
        async with open_test_client(endpoint, attempts=1) as client:
            try:
                answer: Any = await client.send(client.encode(user_request()), attempts)
            except EndpointError as exc:
                answer = exc
    return answer, attempts


def test_at_least_forty_recordings_are_shipped_with_their_sources() -> None:
    sources = json.loads((RECORDINGS / "SOURCES.json").read_text())
    assert len(FILES) >= 40
    for path in FILES:
        name = f"{path.parent.name}/{path.name}"
        recording = load(path)
        assert recording["format"] == "foldsweep-provider-reply/1", name
        if recording["handwritten"]:
            assert recording.get("why"), name
        else:
            assert sources["files"][name]["source"] in sources["sources"], name
    real = [p for p in FILES if not load(p)["handwritten"]]
    assert len(real) >= 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
async def test_a_recorded_reply_parses_as_written_by_hand(path: Path) -> None:
    recording = load(path)
    expected = recording["expected"]
    answer, attempts = await fetch(recording)
    assert len(attempts) == 1 and attempts[0].status == recording["response"]["status"]
    if expected["kind"] == "reply":
        assert not isinstance(answer, EndpointError), answer
        usage = answer.usage
        assert usage.prompt_tokens == expected["prompt_tokens"]
        assert usage.completion_tokens == expected["completion_tokens"]
        # a usage object without a cache count means no cache read (docs/endpoints.md)
        cached = expected["cached_tokens"]
        assert usage.cached_tokens == (cached if cached is not None else 0)
        assert usage.cache_write_tokens == expected["cache_write_tokens"]
        assert usage.reasoning_tokens == expected["reasoning_tokens"]
        assert usage.reported is expected["usage_reported"]
        assert answer.billed_usd == pytest.approx(expected["billed_usd"])
        assert answer.cost_usd == pytest.approx(estimate(expected))
        assert answer.text.startswith(expected["text"] or "")
        assert answer.finish_reason == (expected["finish_reason"] or "unknown")
        return
    assert isinstance(answer, EndpointError), f"{path.name} parsed as a reply"
    kind = expected["class"]
    if kind == "retry":
        assert isinstance(answer, InfrastructureFault)
        assert answer.retry_after == expected["retry_after_s"] or (
            expected["retry_after_s"] is None and expected["ratelimit_reset_ms"] is not None
        )
    elif kind == "credits":
        assert isinstance(answer, ProviderCreditsExhausted)
        assert expected["provider_message"][:60] in answer.provider_message
    else:
        assert isinstance(answer, RequestRejected)
        assert answer.reason == expected["reason"]
    if expected.get("upstream_provider"):
        assert f"upstream {expected['upstream_provider']}" in str(answer)
