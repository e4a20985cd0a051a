"""Hostile endpoints: huge, truncated, non-JSON and non-UTF-8 replies, and servers that stall.

Two levels:
- the client (OpenAIChatClient) against one hostile kind at a time: every reply becomes an
  infrastructure fault within its timeouts, and a 100 MB reply costs at most the client's
  body cap in memory (tracemalloc peak, which also counts the in-process server);
- a whole sweep (+panel=endpoint) against a server that interleaves hostile replies with good
  ones forwarded to a SimServer: it completes, no attempt outlives its time bound, every invalid
  row is an infrastructure fault, and the EndpointWorker's resident memory stays bounded.
"""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.carrier.study import CarrierStudy
from pipeline.chat.errors import InfrastructureFault, MalformedEnvelope, TimeoutFault
from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config import load
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import DEFAULT_MAX_BODY_BYTES, open_client
from pipeline.endpoints.sim import SimServer
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.reliability.servers import HOSTILE_KINDS, HUGE_BYTES, HostileServer, LoopThread
from tests.reliability.tables import key_of, view

pytestmark = pytest.mark.slow

REQUEST_S = 1.5
ATTEMPTS = 2
RETRY = RetryConfig(request_attempts=ATTEMPTS, initial_wait_s=0.01, max_wait_s=0.05)
TIMEOUTS = TimeoutConfig(connect_s=1.0, request_s=REQUEST_S)
EXPECTED = {
    "huge": MalformedEnvelope,
    "huge_declared": MalformedEnvelope,
    "truncated": MalformedEnvelope,
    "not_json": MalformedEnvelope,
    "bad_utf8": MalformedEnvelope,
    "stall": TimeoutFault,
    "stall_body": TimeoutFault,
}
MEMORY_BOUND = 4 * DEFAULT_MAX_BODY_BYTES  # the cap, a copy, and slack; far below 100 MB


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[HostileServer]:
    server = HostileServer([request.param])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("hostile", HOSTILE_KINDS, indirect=True)
async def test_hostile_reply_is_an_infrastructure_fault_within_bounded_time_and_memory(
    hostile: HostileServer,
) -> None:
    kind = hostile.cycle[0]
    endpoint = EndpointConfig("hostile", "hostile-model", "hostile", base_url=hostile.base_url)
    request = ChatRequest(messages=(ChatMessage("user", "hello"),), max_tokens=16)
    tracemalloc.start()
    started = time.monotonic()
    try:
        async with open_client(endpoint, retry=RETRY, timeouts=TIMEOUTS) as client:
            with pytest.raises(InfrastructureFault) as caught:
                await client.complete(request)
        wall = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"{kind}: {type(caught.value).__name__} in {wall:.2f}s, peak {peak / 2**20:.1f} MiB")
    assert isinstance(caught.value, EXPECTED[kind]), caught.value
    assert hostile.sent[kind] == ATTEMPTS  # retried as infrastructure, and only that often
    assert wall < ATTEMPTS * (REQUEST_S + 0.1) + 5.0
    assert peak < MEMORY_BOUND
    if kind.startswith("huge"):
        assert hostile.huge_bytes_sent < ATTEMPTS * HUGE_BYTES / 3  # the client hung up early


SWEEP_CYCLE = (
    "good", "huge", "good", "truncated", "good", "not_json", "good",
    "bad_utf8", "good", "stall", "good", "huge_declared", "good", "stall_body",
)  # fmt: skip
SWEEP_REQUEST_S = 2.0
SWEEP_ATTEMPTS = 3
WORKER_RSS_BOUND_KB = 700 * 1024


class RssSampler:
    """Samples the resident memory of the harness's EndpointWorker processes."""

    def __init__(self, h: SweepHarness) -> None:
        self.h = h
        self.peak_kb = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for pid in self.h.marked_pids():
                if not self.h.cmdline(pid).startswith("ray::EndpointWorker"):
                    continue
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                        self.samples += 1

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.mark.ray
def test_sweep_against_a_hostile_endpoint_completes_without_hanging(
    harness: SweepHarness, tmp_path: Path
) -> None:
    cfg = load(["+panel=sim", "arms=[j]"])
    fixture = CarrierStudy.from_node(cfg.study).fixture
    profile = profiles_for(1, cfg.sim.seed)[0]
    backend_loop = LoopThread()
    backend = SimServer(CarrierSimModel(profile, tuple(fixture.planted)))
    hostile = HostileServer(SWEEP_CYCLE, backend_loop.call(backend.start()))
    hostile.start()
    try:
        with RssSampler(harness) as rss:
            result = harness.run(
                [
                    "+panel=endpoint",
                    f"endpoint.base_url={hostile.base_url}",
                    f"endpoint.model={profile.served_model}",
                    "arms=[j,q]",
                    "repeats=3",
                    f"timeouts.request_s={SWEEP_REQUEST_S}",
                    f"retry.request_attempts={SWEEP_ATTEMPTS}",
                    "retry.initial_wait_s=0.01",
                    "retry.max_wait_s=0.05",
                    f"out_dir={tmp_path}",
                ],
                timeout_s=SWEEP_TIMEOUT_S,
            )
    finally:
        hostile.stop()
        backend_loop.call(backend.stop())
        backend_loop.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    run = view(result.run_dir)
    print(
        f"hostile sweep: {result.wall_s:.1f}s, sent {dict(hostile.sent)}, "
        f"worker peak RSS {rss.peak_kb / 1024:.0f} MiB over {rss.samples} samples"
    )
    assert set(HOSTILE_KINDS) <= set(hostile.sent), "some hostile kind never reached the client"
    assert run.manifest.status == "completed"
    finals = run.finals()
    for item in run.plan:
        if item["status"] != "not_run":
            assert key_of(item) in finals
    for row in run.rows:
        assert row["valid"] or row["invalid_reason"].startswith("infrastructure:"), row["row_id"]
        # one attempt: at most 4 requests, each at most SWEEP_ATTEMPTS timeouts plus backoff
        bound = timedelta(seconds=4 * SWEEP_ATTEMPTS * (SWEEP_REQUEST_S + 0.1) + 10)
        assert row["finished_at"] - row["started_at"] < bound, row["row_id"]
    assert any(row["valid"] for row in run.rows)
    assert 0 < rss.peak_kb < WORKER_RSS_BOUND_KB
    assert hostile.huge_bytes_sent < (hostile.sent["huge"] + hostile.sent["huge_declared"]) * (
        HUGE_BYTES / 3
    )
