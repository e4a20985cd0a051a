"""`python -m pipeline probe [overrides] [--json]`: probe each configuration, send no sweep.

Verdicts are per configuration and per request shape (DESIGN §4): they describe an endpoint
and the exact request the planned arms would send, never a model alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from pipeline.carrier.arms import Arm
from pipeline.config import EndpointConfig, RunConfig
from pipeline.endpoints.probe import ProbeVerdict, probe
from pipeline.sweep.probing import arm_needs, context_tokens_needed, shapes_needed


async def _probe_all(
    cfg: RunConfig, endpoints: Sequence[EndpointConfig], arms: dict[str, Arm], fixture: Any
) -> list[ProbeVerdict]:
    from pipeline.endpoints.client import open_client

    needed = context_tokens_needed(fixture, arms)
    verdicts: list[ProbeVerdict] = []
    for ep in endpoints:
        key = os.environ.get(ep.api_key_env) if ep.api_key_env else None
        factory = partial(open_client, retry=cfg.retry, timeouts=cfg.timeouts, api_key=key)
        shapes = shapes_needed(arm_needs(arms, ep))
        verdicts += await probe(factory, ep, shapes, context_tokens_needed=needed)
    return verdicts


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    overrides = [a for a in argv if a != "--json"]
    from pipeline.sweep.run import prepare
    from pipeline.sweep.servers import EndpointServers

    p = prepare([*overrides, "out_dir=/nonexistent-probe-only"])
    endpoints = [inc.endpoint for inc in p.resolution.included]
    with tempfile.TemporaryDirectory(prefix="foldsweep-probe-") as logs:
        kind = p.resolution.kind
        with EndpointServers(kind, endpoints, p.cfg, p.fixture, Path(logs)) as servers:
            verdicts = asyncio.run(_probe_all(p.cfg, servers.endpoints, p.arms, p.fixture))
    if as_json:
        print(json.dumps([asdict(v) for v in verdicts], indent=2))
        return 0
    width = max((len(v.config_id) for v in verdicts), default=10)
    for v in verdicts:
        print(f"{v.config_id:<{width}}  {v.shape:<18}  {v.verdict:<40}  {v.detail}")
    return 0
