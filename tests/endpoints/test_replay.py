"""The replay endpoint: recorded bytes served exactly, in the documented order; and the round
trip endpoint.record -> load_recordings -> replay, with no key anywhere on disk."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import OpenAIChatClient, make_session
from pipeline.endpoints.limits import EndpointLimiter
from pipeline.endpoints.recording import RecordingWriter, load_recordings
from pipeline.endpoints.replay import ReplayServer, served_models
from pipeline.endpoints.retry import build_retry
from tests.endpoints.recordings import chat_body, recording, write

KEY = "sk-or-v1-PLANTED-KEY-123"


@asynccontextmanager
async def serving(server: ReplayServer) -> AsyncIterator[str]:
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


async def post(url: str, body: object) -> tuple[int, dict[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", data=json.dumps(body)) as response,
    ):
        headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status, headers, await response.read()


def three_recordings(root: Path) -> None:
    write(root, "or/2.json", recording(body=chat_body("second", 20, 4)))
    write(root, "or/1.json", recording(body=chat_body("first", 10, 2)))
    limited = recording(
        status=429,
        body='{"error": {"message": "rate limited", "code": 429}}\n',
        headers={"content-type": "application/json", "retry-after": "7", "set-cookie": "a=b"},
    )
    write(root, "or/3.json", limited)
    write(root, "ds/1.json", recording("deepseek", model="deepseek-chat"))


async def test_each_model_cycles_through_its_recordings_in_path_order(tmp_path: Path) -> None:
    three_recordings(tmp_path)
    recordings = load_recordings(tmp_path)
    server = ReplayServer(served_models(recordings))
    expected = {r.name: r for r in recordings}
    order = ["or/1.json", "or/2.json", "or/3.json", "or/1.json"]
    async with serving(server) as url:
        for name in order:
            status, headers, body = await post(url, {"model": "vendor/model-a", "messages": []})
            want = expected[name]
            assert (status, body) == (want.status, want.body.encode()), name
            assert headers["content-type"] == "application/json"
    assert server.served() == {"or/1.json": 2, "or/2.json": 1, "or/3.json": 1}


async def test_an_error_recording_keeps_its_status_and_retry_after_but_no_cookie(
    tmp_path: Path,
) -> None:
    three_recordings(tmp_path)
    models = served_models(load_recordings(tmp_path), "fixed", "or/3.json")
    async with serving(ReplayServer(models)) as url:
        status, headers, body = await post(url, {"model": "vendor/model-a"})
    assert (status, headers["retry-after"]) == (429, "7")
    assert "set-cookie" not in headers
    assert body == b'{"error": {"message": "rate limited", "code": 429}}\n'


async def test_models_are_listed_and_an_unknown_model_is_a_404_in_openai_shape(
    tmp_path: Path,
) -> None:
    three_recordings(tmp_path)
    async with serving(ReplayServer(served_models(load_recordings(tmp_path)))) as url:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/models") as response:
            listed = await response.json()
        status, _, body = await post(url, {"model": "nobody/none", "messages": []})
        bad_status, _, _ = await post(url, "not an object")
    assert [m["id"] for m in listed["data"]] == ["deepseek-chat", "vendor/model-a"]
    assert status == 404
    assert json.loads(body)["error"]["code"] == "model_not_found"
    assert bad_status == 400


def test_fixed_order_needs_a_known_file(tmp_path: Path) -> None:
    three_recordings(tmp_path)
    recordings = load_recordings(tmp_path)
    with pytest.raises(ValueError, match="needs --file"):
        served_models(recordings, "fixed")
    with pytest.raises(ValueError, match="2 recordings of that name"):
        served_models(recordings, "fixed", "1.json")
    assert list(served_models(recordings, "fixed", "ds/1.json")) == ["deepseek-chat"]


async def echo_authorization(request: web.Request) -> web.Response:
    """A provider that (wrongly) echoes the Authorization header back inside its reply."""
    sent = request.headers.get("Authorization", "")
    body = json.loads(chat_body(f"you sent {sent}", 12, 3, cached=5))
    body["echo"] = sent
    return web.json_response(body, headers={"x-ratelimit-remaining": "99", "x-request-id": "r"})


async def test_recorded_exchanges_load_and_replay_byte_for_byte_without_the_key(
    tmp_path: Path,
) -> None:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", echo_authorization)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    endpoint = EndpointConfig(
        "echo", "vendor/echo", "vendor", base_url=f"http://127.0.0.1:{port}/v1"
    )
    record = tmp_path / "record"
    session = make_session(TimeoutConfig())
    try:
        client = OpenAIChatClient(
            endpoint,
            session,
            EndpointLimiter(endpoint.limits),
            build_retry(RetryConfig(request_attempts=1)),
            api_key=KEY,
            recorder=RecordingWriter.for_endpoint(record, endpoint),
        )
        request = ChatRequest(messages=(ChatMessage("user", "hi"),), max_tokens=8)
        replies = [await client.complete(request) for _ in range(2)]
    finally:
        await session.close()
        await runner.cleanup()
    for path in record.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(), path
    recordings = load_recordings(record)
    sha = recordings[0].request_sha256
    assert sha is not None and sha == recordings[1].request_sha256  # one request, sent twice
    sha12 = sha[:12]
    assert [r.name for r in recordings] == [f"vendor-echo/00000{i}-{sha12}.json" for i in (0, 1)]
    assert recordings[0].headers == {
        "content-type": "application/json; charset=utf-8",
        "x-ratelimit-remaining": "99",
    }
    async with serving(ReplayServer(served_models(recordings))) as url:
        status, headers, body = await post(url, {"model": "vendor/echo", "messages": []})
    assert (status, body) == (200, recordings[0].body.encode())
    assert headers["x-ratelimit-remaining"] == "99" and "x-request-id" not in headers
    assert json.loads(body)["echo"] == "Bearer ***"
    assert replies[0].text == "you sent Bearer ***"
