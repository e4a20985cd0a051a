"""`python -m pipeline probe [overrides] [--json]`: probe each configuration, send no sweep.

Verdicts are per configuration and per request shape (DESIGN §4): they describe an endpoint
and the exact request the planned arms would send, never a model alone.

Where the provider stated what it charged for probe replies (`billed_usd` on a sample; `--json`
keeps it with the estimate `cost_usd`), the table is followed by one line per configuration
saying so, and by "prices in the panel are stale for X: probe billed $a, estimated $b" where
the estimate is more than 5% off (pipeline/stale_prices.py, the rule the report's
Requests section applies too).
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

from pipeline.config import EndpointConfig, RunConfig
from pipeline.endpoints.probe import ProbeVerdict, probe, probe_charges
from pipeline.stale_prices import usd
from pipeline.study import ProbePlan
from pipeline.sweep.probing import arm_needs, shapes_needed


async def _probe_all(
    cfg: RunConfig, endpoints: Sequence[EndpointConfig], plan: ProbePlan
) -> list[ProbeVerdict]:
    from pipeline.endpoints.client import open_client

    verdicts: list[ProbeVerdict] = []
    for ep in endpoints:
        key = os.environ.get(ep.api_key_env) if ep.api_key_env else None
        factory = partial(open_client, retry=cfg.retry, timeouts=cfg.timeouts, api_key=key)
        shapes = shapes_needed(arm_needs(plan, ep))
        verdicts += await probe(
            factory,
            ep,
            shapes,
            context_tokens_needed=plan.context_tokens,
            samples=cfg.probe.samples,
        )
    return verdicts


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    overrides = [a for a in argv if a != "--json"]
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    p = prepare([*overrides, "out_dir=/nonexistent-probe-only"])
    endpoints = [inc.endpoint for inc in p.resolution.included]
    kind = p.resolution.kind
    sim_models = []
    if p.simulated:
        pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
        sim_models = p.study.sim_models(pairs, p.cfg.sim.seed)
    with (
        tempfile.TemporaryDirectory(prefix="foldsweep-probe-") as logs,
        EndpointServers(kind, endpoints, p.cfg, Path(logs), sim_models=sim_models) as servers,
    ):
        verdicts = asyncio.run(_probe_all(p.cfg, servers.endpoints, p.study.probe_plan()))
    if as_json:
        print(json.dumps([asdict(v) for v in verdicts], indent=2))
        return 0
    width = max((len(v.config_id) for v in verdicts), default=10)
    for v in verdicts:
        print(f"{v.config_id:<{width}}  {v.shape:<18}  {v.verdict:<40}  {v.detail}")
    for line in charge_lines(verdicts):
        print(line)
    return 0


def charge_lines(verdicts: Sequence[ProbeVerdict]) -> list[str]:
    """What the providers billed for the probe replies, and the stale-prices flags."""
    lines: list[str] = []
    for config_id, charges in sorted(probe_charges(verdicts).items()):
        lines.append(
            f"{config_id}: {charges.replies} probe replies billed {usd(charges.billed_usd)}, "
            f"estimated at the panel's prices {usd(charges.estimated_usd)}"
        )
        stale = charges.stale_line(config_id, billed_by="probe billed")
        if stale is not None:
            lines.append(stale)
    return ["", *lines] if lines else []
