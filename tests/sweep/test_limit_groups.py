"""Limits shared by one account (issue 13): a limit group's bucket, its config and its owner.

The enforcing test: two configurations on one key (one sim server, which enforces the key's
limit) in one 600-rpm group draw no 429, through the cores an EndpointWorker builds
(`worker_cores`). The server counts over a 1 s sliding window (13 per second), stricter than
600/min over 60 s, so the test takes seconds rather than minutes; without the group each
configuration paces 600 rpm alone and the key sees twice that at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.carrier.study import CarrierStudy
from pipeline.chat.errors import InfrastructureFault, RequestRejected
from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config import (
    ConfigError,
    EndpointConfig,
    LimitGroup,
    Limits,
    RetryConfig,
    TimeoutConfig,
    load,
)
from pipeline.endpoints.panels import materialize
from pipeline.endpoints.sim import SimOptions, SimServer
from pipeline.sweep.actors import endpoint_groups
from pipeline.sweep.worker import WorkerSettings, worker_cores

KEY_GROUP = LimitGroup(name="openrouter-key-1", rpm=600)
REQUESTS_PER_CONFIG = 12


def settings(endpoint: EndpointConfig) -> WorkerSettings:
    cfg = load(["arms=[j,q]"])
    return WorkerSettings(
        endpoint=endpoint,
        study=CarrierStudy.from_node(cfg.study),
        publication_date=None,
        temperature=0.0,
        base_seed=166,
        simulated=True,
        retry=RetryConfig(request_attempts=1),  # a 429 is counted, not waited out
        timeouts=TimeoutConfig(),
    )


async def server_429s(limits: Limits) -> int:
    """429s the key's server answered to two configurations sending 12 requests each."""
    profile = profiles_for(1, 7)[0]
    server = SimServer(CarrierSimModel(profile), SimOptions(rpm_limit=13, rpm_window_s=1.0))
    url = await server.start()
    endpoints = [
        EndpointConfig(
            config_id=f"key-1-{name}",
            model=profile.served_model,  # one served model, two configurations on one key
            family="sim",
            quantization=name,
            base_url=url,
            limits=limits,
        )
        for name in ("a", "b")
    ]
    cores = worker_cores([settings(ep) for ep in endpoints])
    request = ChatRequest(messages=(ChatMessage("user", "hello"),), max_tokens=8)
    try:
        clients = [await core.ensure_client() for core in cores.values()]
        sends = [c.complete(request) for c in clients for _ in range(REQUESTS_PER_CONFIG)]
        results = await asyncio.gather(*sends, return_exceptions=True)
    finally:
        for core in cores.values():
            await core.close()
        await server.stop()
    unexpected = [
        r
        for r in results
        if isinstance(r, BaseException) and not isinstance(r, InfrastructureFault | RequestRejected)
    ]
    assert not unexpected, unexpected
    return server.counters().rate_limited_429


async def test_two_configurations_on_one_key_in_one_600_rpm_group_draw_no_429() -> None:
    assert await server_429s(Limits(rpm=600, concurrency=8, group=KEY_GROUP)) == 0


async def test_without_the_group_each_configuration_takes_the_full_rate_and_draws_429s() -> None:
    assert await server_429s(Limits(rpm=600, concurrency=8)) > 0  # the test above can fail


def test_the_members_of_a_group_share_one_limiter_and_others_keep_their_own() -> None:
    grouped = Limits(rpm=60, group=KEY_GROUP)
    endpoints = [
        EndpointConfig(config_id=cid, model="m", family="f", base_url="http://x/v1", limits=lim)
        for cid, lim in (("a", grouped), ("b", grouped), ("c", Limits(rpm=60)))
    ]
    cores = worker_cores([settings(ep) for ep in endpoints])
    assert cores["a"].group_limiter is not None
    assert cores["a"].group_limiter is cores["b"].group_limiter
    assert cores["c"].group_limiter is None


def test_a_group_is_placed_on_one_worker_whatever_endpoints_per_worker_says() -> None:
    ids = ["a", "b", "c", "d", "e"]
    groups = {"a": "k1", "c": "k1", "e": "k1", "b": None, "d": "k2"}
    assert endpoint_groups(ids, 1, groups) == [["a", "c", "e"], ["b"], ["d"]]
    assert endpoint_groups(ids, 4, groups) == [["a", "c", "e", "b"], ["d"]]
    assert endpoint_groups(ids, 2) == [["a", "b"], ["c", "d"], ["e"]]  # no groups: as before


def panel_file(tmp_path: Path, second_rpm: int) -> Path:
    text = f"""
configs:
  - config_id: a
    model: vendor/model-a
    base_url: https://openrouter.ai/api/v1
    family: vendor
    limits: {{rpm: 60, group: {{name: openrouter-key-1, rpm: 600}}}}
  - config_id: b
    model: vendor/model-b
    base_url: https://openrouter.ai/api/v1
    family: vendor
    limits: {{rpm: 60, group: {{name: openrouter-key-1, rpm: {second_rpm}}}}}
"""
    path = tmp_path / "panel.yaml"
    path.write_text(text)
    return path


def test_two_configs_naming_one_group_with_different_limits_is_a_one_line_error(
    tmp_path: Path,
) -> None:
    cfg = load(["+panel=endpoint", f"endpoint.panel_file={panel_file(tmp_path, 300)}"])
    with pytest.raises(ConfigError) as err:
        materialize(cfg)
    message = str(err.value)
    assert "\n" not in message
    assert "'openrouter-key-1'" in message and "rpm 600" in message and "rpm 300" in message


def test_configs_stating_the_same_group_limits_are_accepted(tmp_path: Path) -> None:
    cfg = load(["+panel=endpoint", f"endpoint.panel_file={panel_file(tmp_path, 600)}"])
    configs = materialize(cfg).configs
    assert {c.limits.group for c in configs} == {KEY_GROUP}


@pytest.mark.parametrize(
    ("group", "match"),
    [
        ({"name": "k"}, "sets neither rpm nor tpm"),
        ({"name": " ", "rpm": 5}, "must not be empty"),
        ({"name": "k", "rpm": 0}, "limits.group.rpm"),
    ],
)
def test_a_group_without_a_usable_limit_is_refused(group: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        LimitGroup(**group)  # type: ignore[arg-type]


def test_the_recorded_endpoint_keeps_its_group() -> None:
    ep = EndpointConfig(config_id="a", model="m", family="f", limits=Limits(group=KEY_GROUP))
    assert dataclasses.asdict(ep)["limits"]["group"] == {
        "name": "openrouter-key-1",
        "rpm": 600,
        "tpm": None,
    }
