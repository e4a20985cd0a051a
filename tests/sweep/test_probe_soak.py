"""Issue 13: in a 30% fault soak with model faults on, no configuration is excluded by one bad
probe reply; a server that always answers non-conforming still is.

The probes run as the sweep runs them (`probe_worker` over each endpoint's worker core, with
its retry policy) against the sweep's own sim panel and sim models for the issue's command
`+panel=sim sim.configs=8 sim.fault_rate=0.3 sim.model_faults=true arms=[j,q] repeats=2
scenario=small`. Only the waits are shortened (stalls and retry back-off); the servers inject
faults by request index, so which requests fail does not depend on them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline import studies
from pipeline.config import TimeoutConfig, load
from pipeline.endpoints.panels import materialize
from pipeline.endpoints.sim import SimOptions, SimServer
from pipeline.simulated import SimReply
from pipeline.sweep.probing import arm_needs, not_run_from_verdicts, probe_worker, shapes_needed
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings

SOAK = [
    "+panel=sim",
    "sim.configs=8",
    "sim.fault_rate=0.3",
    "sim.model_faults=true",
    "arms=[j,q]",
    "repeats=2",
    "scenario=small",
]


class AlwaysNonconforming:
    """A simulated model whose every reply is prose, never the JSON a schema asks for."""

    config_id = "sim-00"
    served_model = "sim-model-00"

    def reply(
        self, request_body: Mapping[str, Any], seed: int, *, model_fault_rate: float = 0.0
    ) -> SimReply:
        return SimReply("Sure! Here is my answer: OK", "stop", 10, 8, "other")


async def soak_exclusions(samples: int, behaviours: Sequence[Any] | None = None) -> dict[str, Any]:
    """(config_id, arm) -> not-run reason after probing the soak panel with `samples`."""
    cfg = load(SOAK)
    study = studies.definition(cfg.study_name).configure(cfg.study)
    endpoints = materialize(cfg).configs
    if behaviours is None:
        behaviours = study.sim_models([(e.config_id, e.model) for e in endpoints], cfg.sim.seed)
    options = SimOptions(
        latency_s=0.0,
        fault_rate=cfg.sim.fault_rate,
        model_faults=True,
        seed=cfg.sim.seed,
        stall_s=0.3,  # an injected timeout answers 504 after 0.3 s (the sweep's: 30 s)
    )
    servers = [SimServer(b, options) for b in behaviours]
    excluded: dict[str, Any] = {}
    try:
        for server, endpoint in zip(servers, endpoints, strict=False):
            url = await server.start()
            core = EndpointWorkerCore(
                WorkerSettings(
                    endpoint=dataclasses.replace(endpoint, base_url=url),
                    study=study,
                    publication_date=None,
                    temperature=0.0,
                    base_seed=cfg.seed,
                    simulated=True,
                    retry=dataclasses.replace(cfg.retry, initial_wait_s=0.0, max_wait_s=0.0),
                    timeouts=TimeoutConfig(connect_s=2.0, request_s=5.0),
                )
            )
            needs = arm_needs(study.probe_plan(), endpoint)
            try:
                found = await probe_worker(
                    core, shapes_needed(needs), study.probe_plan().context_tokens, samples
                )
            finally:
                await core.close()
            for arm, reason in not_run_from_verdicts(found, needs).items():
                excluded[f"{endpoint.config_id}/{arm}"] = reason
    finally:
        for server in servers:
            await server.stop()
    return excluded


async def test_the_fault_soak_excludes_no_configuration() -> None:
    assert await soak_exclusions(samples=load(SOAK).probe.samples) == {}


async def test_one_sample_would_have_excluded_a_configuration_in_that_soak() -> None:
    # The failure, reproduced with the old one-sample rule: the test above can fail.
    assert (
        "probe:schema_advertised_reply_nonconforming" in (await soak_exclusions(samples=1)).values()
    )


async def test_a_server_that_always_answers_nonconforming_is_still_excluded() -> None:
    excluded = await soak_exclusions(samples=3, behaviours=[AlwaysNonconforming()])
    assert excluded == dict.fromkeys(
        ["sim-00/j", "sim-00/q"], "probe:schema_advertised_reply_nonconforming"
    )
