"""Simulated endpoints in a child process: served over real loopback HTTP, counted, stopped.

Each test bounds every wait: start and stop get explicit timeouts, and a test that starts a
process it cannot stop through the API kills it by its pid.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest

from pipeline.carrier.sim_model import CarrierSimModel, SimProfile
from pipeline.endpoints.sim import SimOptions
from pipeline.endpoints.sim_process import SimProcessError, SimServerProcess, SimServerSpec
from tests.endpoints.test_sim import BODY, FACTS, MODEL

ROOT = Path(__file__).resolve().parents[2]
START_S = 20.0  # a spawn imports aiohttp afresh: about 1 s idle, more on a loaded machine
SPECS = (
    SimServerSpec(MODEL),
    SimServerSpec(CarrierSimModel(SimProfile("sim-01", 0.9, 0.1, 0.1, model="m-01"), FACTS)),
)


def chat(url: str, model: str) -> dict[str, object]:
    data = json.dumps({**BODY, "model": model}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=data)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as response:
        reply: dict[str, object] = json.loads(response.read())
    return reply


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def refuses(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/models", timeout=2).close()
    except OSError:
        return True
    return False


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_servers_in_the_child_answer_chat_and_count_each_request() -> None:
    servers = SimServerProcess(SPECS)
    urls = servers.start(timeout_s=START_S)
    try:
        for url, model in zip(urls, ("m-00", "m-01"), strict=True):
            assert chat(url, model)["model"] == model
        counted = servers.counters(timeout_s=5)
    finally:
        servers.stop(timeout_s=10)
    assert urls[0] != urls[1]
    assert [(c.requests, c.served_ok) for c in counted] == [(1, 1), (1, 1)]
    assert all(c.completion_tokens > 0 for c in counted)
    assert servers.counters() == counted  # the final counts outlive the child


def test_stop_ends_the_child_and_closes_its_ports() -> None:
    with SimServerProcess(SPECS[:1]) as servers:
        pid = servers.pid
        url = servers.base_urls[0]
        assert pid is not None and is_running(pid)
    assert servers.pid is None
    assert not is_running(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # joined, so reaped: no zombie either
    assert refuses(url)
    servers.stop()  # idempotent


def test_child_ignores_sigint_and_sigterm_so_in_flight_work_can_finish() -> None:
    with SimServerProcess(SPECS[:1]) as servers:
        assert servers.pid is not None
        os.kill(servers.pid, signal.SIGINT)
        os.kill(servers.pid, signal.SIGTERM)
        time.sleep(0.2)
        assert chat(servers.base_urls[0], "m-00")["model"] == "m-00"
        assert servers.counters(timeout_s=5)[0].served_ok == 1


HOLDER = """
import sys, time
from pipeline.endpoints.sim_process import SimServerProcess, SimServerSpec
from pipeline.carrier.sim_model import CarrierSimModel, SimProfile
model = CarrierSimModel(SimProfile("sim-00", 0.9, 0.1, 0.1, model="m-00"))
servers = SimServerProcess([SimServerSpec(model)])
url = servers.start(timeout_s=float(sys.argv[1]))[0]
print(servers.pid, url, flush=True)
time.sleep(60)
"""


def test_child_exits_when_its_parent_is_killed() -> None:
    command = [sys.executable, "-c", HOLDER, str(START_S)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    child = None
    try:
        assert holder.stdout is not None
        pid, url = holder.stdout.readline().split()
        child = int(pid)
        assert chat(url, "m-00")["model"] == "m-00"
        holder.kill()  # SIGKILL: no atexit, no stop(); only the pipe's EOF tells the child
        holder.wait(timeout=10)
        assert wait_until(lambda: not is_running(child), timeout_s=5.0), "orphaned sim child"
        assert refuses(url)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        if holder.stdout is not None:
            holder.stdout.close()
        if child is not None and is_running(child):
            os.kill(child, signal.SIGKILL)


def test_a_failed_start_in_the_child_raises_its_message_in_the_parent() -> None:
    key = "sk-sim-process-secret-42"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = SimServerSpec(SPECS[1].behaviour, SimOptions(port=port, api_key=key))
        servers = SimServerProcess([SPECS[0], busy])
        started = time.monotonic()
        with pytest.raises(SimProcessError, match="failed") as caught:
            servers.start(timeout_s=START_S)
    assert time.monotonic() - started < START_S
    message = str(caught.value)
    assert str(port) in message and "address already in use" in message.lower()
    assert key not in message + repr(servers.specs)
    assert servers.pid is None
    assert not [p for p in multiprocessing.active_children() if p.name == "sim-servers"]


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_endpoint_servers_fill_base_urls_and_count_by_config(
    mode: Literal["process", "thread"],
) -> None:
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    p = prepare(["+panel=sim", "sim.configs=2", "arms=[j]", "out_dir=/nonexistent-test-only"])
    endpoints = [inc.endpoint for inc in p.resolution.included]
    models = p.study.sim_models([(ep.config_id, ep.model) for ep in endpoints], p.cfg.sim.seed)
    logs = Path("/nonexistent")  # only local servers write logs
    with EndpointServers(
        "sim", endpoints, p.cfg, logs, sim_models=models, sim_servers=mode
    ) as servers:
        for ep in servers.endpoints:
            assert ep.base_url is not None
            assert chat(ep.base_url, ep.model)["model"] == ep.model
        counted = servers.counters()
    assert sorted(counted) == sorted(ep.config_id for ep in endpoints)
    assert all(c["served_ok"] == 1 for c in counted.values())


def test_endpoint_servers_reject_sim_models_that_do_not_match_the_endpoints() -> None:
    from pipeline.carrier.sim_model import carrier_sim_models
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    p = prepare(["+panel=sim", "sim.configs=2", "arms=[j]", "out_dir=/nonexistent-test-only"])
    endpoints = [inc.endpoint for inc in p.resolution.included]
    logs = Path("/nonexistent")
    with pytest.raises(ValueError, match="one sim model per endpoint"):
        EndpointServers("sim", endpoints, p.cfg, logs, sim_models=[MODEL])
    swapped = carrier_sim_models([(ep.config_id, ep.model) for ep in reversed(endpoints)], (), 7)
    with pytest.raises(ValueError, match="in the place of"):
        EndpointServers("sim", endpoints, p.cfg, logs, sim_models=swapped)
