"""Simulated endpoints over real loopback HTTP, driven by a plain aiohttp client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import types
import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pipeline.carrier.prompts import SYSTEM_PROMPTS, fold_message
from pipeline.carrier.sim_model import CarrierSimModel, SimFact, SimProfile
from pipeline.commands import serve
from pipeline.endpoints.sim import FAULT_KINDS, SimOptions, SimServer, SimServerThread
from pipeline.simulated import SimReply
from pipeline.usererror import UserError

FACTS = (SimFact("api port", "62114"), SimFact("shard count", "19 shards"))
PROFILE = SimProfile("sim-00", skill=0.9, schema_penalty=0.1, partition_gain=0.1, model="m-00")
MODEL = CarrierSimModel(PROFILE, FACTS)
BODY: dict[str, Any] = {
    "model": "m-00",
    "max_tokens": 500,
    "messages": [
        {"role": "system", "content": SYSTEM_PROMPTS["fixed_headings"]},
        {"role": "user", "content": fold_message("", "api port 62114, 19 shards")},
    ],
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def serving(
    options: SimOptions, clock: FakeClock | None = None
) -> AsyncIterator[tuple[SimServer, str, aiohttp.ClientSession]]:
    server = SimServer(MODEL, options, clock=clock or time.monotonic)
    url = await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield server, url, session
    finally:
        await server.stop()


async def post(
    session: aiohttp.ClientSession, url: str, body: Any = BODY, **kwargs: Any
) -> tuple[int, dict[str, str], str]:
    async with session.post(f"{url}/chat/completions", json=body, **kwargs) as response:
        return response.status, dict(response.headers), await response.text()


async def test_chat_completion_returns_an_openai_envelope_with_usage() -> None:
    async with serving(SimOptions()) as (server, url, session):
        status, _, text = await post(session, url)
    body = json.loads(text)
    assert status == 200
    assert body["model"] == "m-00"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert "## Goal" in body["choices"][0]["message"]["content"]
    assert body["usage"]["prompt_tokens"] > 0
    assert server.counters().completion_tokens == body["usage"]["completion_tokens"]


async def test_models_lists_the_served_model_and_other_models_get_404() -> None:
    async with serving(SimOptions()) as (_, url, session):
        async with session.get(f"{url}/models") as response:
            listed = [m["id"] for m in (await response.json())["data"]]
        status, _, _ = await post(session, url, {**BODY, "model": "other"})
    assert listed == ["m-00"]
    assert status == 404


async def test_api_key_is_required_when_set_and_never_echoed() -> None:
    key = "sk-sim-secret-123"
    async with serving(SimOptions(api_key=key)) as (server, url, session):
        missing, _, missing_text = await post(session, url)
        wrong, _, _ = await post(session, url, headers={"Authorization": "Bearer nope"})
        right, _, right_text = await post(session, url, headers={"Authorization": f"Bearer {key}"})
    assert (missing, wrong, right) == (401, 401, 200)
    assert server.counters().auth_failures == 2
    assert key not in missing_text + right_text + repr(server.options)


async def test_rpm_limit_is_enforced_with_429_and_retry_after() -> None:
    clock = FakeClock()
    async with serving(SimOptions(rpm_limit=2), clock) as (server, url, session):
        first = [await post(session, url) for _ in range(3)]
        clock.now += 61.0
        after_window, _, _ = await post(session, url)
    assert [status for status, _, _ in first] == [200, 200, 429]
    assert 1 <= int(first[2][1]["Retry-After"]) <= 60
    assert after_window == 200
    assert server.counters().rate_limited_429 == 1


async def test_latency_is_added_to_each_reply() -> None:
    async with serving(SimOptions(latency_s=0.2)) as (_, url, session):
        started = time.monotonic()
        await post(session, url)
    assert time.monotonic() - started >= 0.15


@pytest.mark.parametrize("kind", ["rate_limit_429", "http_500", "http_502", "http_503"])
async def test_status_faults_return_their_status(kind: str) -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=(kind,), retry_after_s=2.0)
    async with serving(options) as (server, url, session):
        status, headers, _ = await post(session, url)
    assert status == {"rate_limit_429": 429}.get(kind, int(kind[-3:]))
    assert kind != "rate_limit_429" or headers["Retry-After"] == "2"
    assert server.counters().faults == {kind: 1}


async def test_timeout_fault_stalls_past_the_client_timeout_and_stop_ends_it() -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=("timeout",), stall_s=20.0)
    started = time.monotonic()
    async with serving(options) as (_, url, session):
        with pytest.raises(asyncio.TimeoutError):
            await post(session, url, timeout=aiohttp.ClientTimeout(total=0.2))
    assert time.monotonic() - started < 5.0


async def test_connection_reset_fault_drops_the_connection() -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=("connection_reset",))
    async with serving(options) as (_, url, session):
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await post(session, url)


async def test_malformed_body_fault_sends_200_that_is_not_json() -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=("malformed_body",))
    async with serving(options) as (_, url, session):
        status, _, text = await post(session, url)
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(text)


async def test_truncated_body_fault_sends_fewer_bytes_than_promised() -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=("truncated_body",))
    async with serving(options) as (_, url, session):
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(session, url)


async def test_error_body_fault_sends_200_with_an_error_object() -> None:
    options = SimOptions(fault_rate=1.0, fault_mix=("error_body",))
    async with serving(options) as (_, url, session):
        status, _, text = await post(session, url)
    assert status == 200
    assert "error" in json.loads(text)


async def test_mixed_faults_are_deterministic_and_counted() -> None:
    mix = ("http_500", "error_body", "malformed_body")
    statuses = []
    for _ in range(2):
        async with serving(SimOptions(fault_rate=0.5, fault_mix=mix, seed=3)) as (s, url, session):
            statuses.append([(await post(session, url))[0] for _ in range(12)])
            counters = s.counters()
    assert statuses[0] == statuses[1]
    assert counters.requests == 12
    assert counters.served_ok + sum(counters.faults.values()) == 12
    assert 0 < sum(counters.faults.values()) < 12


async def test_model_faults_are_served_as_200_when_enabled() -> None:
    options = SimOptions(model_faults=True, model_fault_rate=1.0)
    async with serving(options) as (server, url, session):
        statuses = [(await post(session, url, {**BODY, "seed": s}))[0] for s in range(6)]
    assert statuses == [200] * 6
    assert sum(server.counters().model_faults.values()) == 6


def test_unknown_fault_kind_and_non_loopback_host_are_rejected() -> None:
    with pytest.raises(ValueError, match="fault_mix"):
        SimOptions(fault_mix=("gremlins",))
    with pytest.raises(ValueError, match="loopback"):
        SimOptions(host="0.0.0.0")
    assert set(FAULT_KINDS) >= {"timeout", "connection_reset", "truncated_body"}


@dataclass(frozen=True)
class Echo:
    """A SimBehaviour of no study: it answers with the last user message."""

    config_id: str = "echo"
    served_model: str = "echo-model"

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        users = [m["content"] for m in request_body["messages"] if m["role"] == "user"]
        return SimReply(f"echo: {users[-1]}", "stop", 3, 2, "other")


async def test_server_serves_any_sim_behaviour_not_only_the_carrier_model() -> None:
    server = SimServer(Echo())
    url = await server.start()
    body = {"model": "echo-model", "messages": [{"role": "user", "content": "hello there"}]}
    try:
        async with aiohttp.ClientSession() as session:
            status, _, text = await post(session, url, body)
            wrong, _, _ = await post(session, url, {**body, "model": "m-00"})
    finally:
        await server.stop()
    reply = json.loads(text)
    assert status == 200
    assert reply["model"] == "echo-model"
    assert reply["choices"][0]["message"]["content"] == "echo: hello there"
    assert reply["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert wrong == 404  # the engine still checks the model id the behaviour answers to


def test_server_thread_serves_several_configs_for_synchronous_callers() -> None:
    profiles = [PROFILE, SimProfile("sim-01", 0.9, 0.1, 0.1, model="m-01")]
    thread = SimServerThread([SimServer(CarrierSimModel(p, FACTS)) for p in profiles])
    with thread:
        for url, model in zip(thread.base_urls, ("m-00", "m-01"), strict=True):
            data = json.dumps({**BODY, "model": model}).encode()
            request = urllib.request.Request(f"{url}/chat/completions", data=data)
            request.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(request, timeout=5) as response:
                assert json.loads(response.read())["model"] == model
        assert [c.served_ok for c in thread.counters()] == [1, 1]
    assert thread.base_urls[0] != thread.base_urls[1]
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{thread.base_urls[0]}/models", timeout=2)


def test_serve_rejects_an_unknown_kind_and_an_unset_key_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FOLDSWEEP_SIM_TEST_KEY", raising=False)
    with pytest.raises(UserError, match="unknown endpoint kind"):
        serve.main(["bogus"])
    with pytest.raises(UserError, match="FOLDSWEEP_SIM_TEST_KEY"):
        serve.main(["sim", "--api-key-env", "FOLDSWEEP_SIM_TEST_KEY"])


def test_serve_local_parses_its_options_in_the_cli_and_delegates_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[str, dict[str, object]]] = []

    def serve_local(family: str, **options: object) -> int:
        seen.append((family, options))
        return 5

    fake = types.ModuleType("pipeline.endpoints.local_serve")
    fake.serve_local = serve_local  # type: ignore[attr-defined]
    fake.FAMILIES = ("x", "all")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pipeline.endpoints.local_serve", fake)
    assert serve.main(["local", "--model", "x", "--port", "8100"]) == 5
    assert seen == [("x", {"port": 8100, "log_dir": None, "print_key": False})]
    with pytest.raises(UserError, match="serve local: argument --model"):
        serve.main(["local", "--model", "nope"])


def test_serve_sim_prints_base_urls_and_stops_on_sigterm() -> None:
    pytest.importorskip("pipeline.carrier.fixture")
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "pipeline", "serve", "sim", "--configs", "2"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().split() for _ in range(2)]
        assert [model for _, model in lines] == ["sim-model-00", "sim-model-01"]
        with urllib.request.urlopen(f"{lines[0][0]}/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "sim-model-00"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


async def test_a_held_reply_whose_client_left_is_counted_abandoned_not_served() -> None:
    async with serving(SimOptions(count_bodies=True)) as (server, url, session):
        await server.hold()
        with pytest.raises(asyncio.TimeoutError):
            await post(session, url, timeout=aiohttp.ClientTimeout(total=0.3))
        await asyncio.sleep(0.3)  # the client's close reaches the server
        await server.release()
        await asyncio.sleep(0.1)  # the held handler wakes and finds its client gone
        assert server.served_bodies() == {}
        assert sum(server.abandoned_bodies().values()) == 1
        status, _, _ = await post(session, url)  # released: the same body is now served
        assert status == 200
        assert server.served_bodies().keys() == server.abandoned_bodies().keys()
