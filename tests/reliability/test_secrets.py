"""Secrets: an API key reaches the server as a bearer token and nowhere else.

The key is `sk-test-` plus a fresh random string, so any hit is a real leak, never a
coincidence. Places searched: every byte of the run directory (tables, manifest, fixture,
analysis), Ray's session directory (driver, raylet and worker logs), the sweep's stdout and
stderr, and the text of the exceptions and records a wrong key produces.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
import traceback
from pathlib import Path

import pytest

from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.carrier.study import CarrierStudy
from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config import load
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import open_client
from pipeline.endpoints.sim import SimOptions, SimServer
from pipeline.study import UnitSpec
from pipeline.sweep.probing import probe_worker
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness, files_containing

KEY_VAR = "FOLDSWEEP_RELIABILITY_KEY"
FAST_RETRY = RetryConfig(request_attempts=2, initial_wait_s=0.01, max_wait_s=0.02)
TIMEOUTS = TimeoutConfig(connect_s=2.0, request_s=5.0)


def fresh_key() -> str:
    return "sk-test-" + secrets.token_urlsafe(24)


@pytest.mark.slow
@pytest.mark.ray
def test_sweep_sends_the_key_as_bearer_and_writes_it_nowhere(tmp_path: Path) -> None:
    key = fresh_key()
    h = SweepHarness(extra_env={KEY_VAR: key})
    try:
        result = h.run(
            [
                "+panel=sim",
                "sim.configs=2",
                "arms=[j,q]",
                "repeats=1",
                f"sim.api_key_env={KEY_VAR}",
                f"out_dir={tmp_path}",
            ],
            timeout_s=SWEEP_TIMEOUT_S,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.run_dir is not None
        needle = key.encode()
        secret_part = key.removeprefix("sk-test-")
        assert files_containing(tmp_path, needle) == []
        assert files_containing(tmp_path, secret_part.encode()) == []
        assert files_containing(h.ray_tmp, needle) == [], "the key reached a Ray log"
        assert secret_part not in result.stdout
        assert secret_part not in result.stderr
        manifest = json.loads((result.run_dir / "manifest.json").read_text())
        assert manifest["config"]["sim"]["api_key_env"] == KEY_VAR  # the name is kept
        for config_id, counters in manifest["sim_counters"].items():
            assert counters["served_ok"] > 0, config_id
            assert counters["auth_failures"] == 0, config_id
    finally:
        h.close()


@pytest.mark.slow
async def test_rejected_key_never_appears_in_the_exception_shown_to_the_user() -> None:
    right, wrong = fresh_key(), fresh_key()
    profile = profiles_for(1, 7)[0]
    server = SimServer(CarrierSimModel(profile), SimOptions(api_key=right))
    url = await server.start()
    try:
        endpoint = EndpointConfig(profile.config_id, profile.served_model, "sim", base_url=url)
        request = ChatRequest(messages=(ChatMessage("user", "hello"),), max_tokens=16)
        async with open_client(
            endpoint, retry=FAST_RETRY, timeouts=TIMEOUTS, api_key=wrong
        ) as client:
            with pytest.raises(RequestRejected) as caught:
                await client.complete(request)
            shown = "".join(traceback.format_exception(caught.value)) + repr(client)
    finally:
        await server.stop()
    assert caught.value.reason == "auth"
    assert server.counters().auth_failures == 1  # the wrong bearer token did reach the server
    assert wrong not in shown
    assert right not in shown


@pytest.mark.slow
async def test_wrong_key_leaves_no_trace_in_rows_or_probe_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker path a sweep takes: the key from the environment, the 401 recorded as data."""
    right, wrong = fresh_key(), fresh_key()
    monkeypatch.setenv(KEY_VAR, wrong)
    cfg = load(["+panel=sim", "arms=[j]"])
    study = CarrierStudy.from_node(cfg.study)
    profile = profiles_for(1, 7)[0]
    model = CarrierSimModel(profile, tuple(study.fixture.planted))
    server = SimServer(model, SimOptions(api_key=right))
    url = await server.start()
    endpoint = EndpointConfig(
        profile.config_id, profile.served_model, "sim", base_url=url, api_key_env=KEY_VAR
    )
    settings = WorkerSettings(
        endpoint=endpoint,
        study=study,
        publication_date=None,
        temperature=0.0,
        base_seed=cfg.seed,
        simulated=True,
        retry=FAST_RETRY,
        timeouts=TIMEOUTS,
    )
    core = EndpointWorkerCore(settings)
    spec = UnitSpec("run", endpoint.config_id, endpoint.model, "sim", "j", 0, 0, 0)
    try:
        verdicts = await probe_worker(core, ["plain", "schema", "context_length"], 4096)
        records = await core.run(spec)
    finally:
        await core.close()
        await server.stop()
    assert records.row["invalid_reason"] == "rejected:auth"
    assert not records.row["retryable"]
    text = json.dumps([dataclasses.asdict(records), verdicts], default=str)
    assert "401" in text  # the rejection is recorded...
    assert wrong not in text  # ...without the key
    assert right not in text
