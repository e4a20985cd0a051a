"""Probes as the sweep runs them: through an endpoint's own worker core, key from the env."""

from __future__ import annotations

import pytest

from pipeline.carrier.study import CarrierStudy
from pipeline.config import EndpointConfig, RetryConfig, TimeoutConfig, load
from pipeline.sweep.probing import arm_needs, not_run_from_verdicts, probe_worker, shapes_needed
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings
from tests.endpoints.conftest import Reply, ScriptedServer

KEY_VAR = "FOLDSWEEP_PROBING_TEST_KEY"
SECRET = "sk-probing-test-secret-4242"


def core_for(base_url: str) -> EndpointWorkerCore:
    cfg = load(["arms=[j,q]", "study.fixture_seed=1"])
    endpoint = EndpointConfig(
        config_id="guarded", model="m", family="f", base_url=base_url, api_key_env=KEY_VAR
    )
    return EndpointWorkerCore(
        WorkerSettings(
            endpoint=endpoint,
            study=CarrierStudy.from_node(cfg.study),
            publication_date=None,
            temperature=0.0,
            base_seed=166,
            simulated=False,
            retry=RetryConfig(request_attempts=2, initial_wait_s=0.01, max_wait_s=0.02),
            timeouts=TimeoutConfig(connect_s=2.0, request_s=5.0),
        )
    )


@pytest.mark.parametrize("status", [401, 403])
async def test_sweep_probe_of_a_refused_key_excludes_every_arm_as_auth_rejected(
    monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    refused = Reply(status=status, json_body={"error": {"message": f"bad key {SECRET}"}})
    server = ScriptedServer({"/v1/chat/completions": [refused]})
    async with server.running():
        core = core_for(server.base_url)
        try:
            needs = arm_needs(core.settings.study.probe_plan(), core.settings.endpoint)
            verdicts = await probe_worker(core, shapes_needed(needs), 10_000)
        finally:
            await core.close()
    assert {v["verdict"] for v in verdicts} == {"auth_rejected"}
    assert KEY_VAR in verdicts[0]["detail"]
    assert SECRET not in repr(verdicts)
    assert not_run_from_verdicts(verdicts, needs) == {
        "j": "probe:auth_rejected",
        "q": "probe:auth_rejected",
    }
    assert len(server.received) == 1  # one refusal: not retried, later shapes not sent
