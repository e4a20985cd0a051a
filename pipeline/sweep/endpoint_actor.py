"""The EndpointWorker actor: the process that hosts endpoints' worker cores.

It has a module of its own because every actor process imports the module that defines its
class: this one imports only what running attempts needs (the worker cores, the study's
runner), not the driver's coordinator, sink and store, which load pyarrow and Polars (about
65 MB of RSS per actor; docs/benchmarks.md, memory). The dispatcher that feeds it is in
pipeline/sweep/actors.py.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import ray

from pipeline.study import UnitSpec
from pipeline.sweep.progress import EndpointLive
from pipeline.sweep.worker import WorkerSettings, tune_collector, worker_cores


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0, max_concurrency=100_000)  # type: ignore[call-overload]
class EndpointWorker:
    """Hosts the worker cores of one or more endpoints (`ray.endpoints_per_worker`).

    Each endpoint's core, and so its session, limiter and retry policy, lives in exactly one
    actor; an attempt goes to its endpoint's core by `spec.config_id`.
    """

    def __init__(self, settings: Sequence[WorkerSettings]) -> None:
        self.cores = worker_cores(settings)  # a limit group's members share one limiter here
        tune_collector()

    async def run(self, spec: UnitSpec) -> Any:
        return await self.cores[spec.config_id].run(spec)

    async def run_batch(self, specs: Sequence[UnitSpec]) -> list[Any]:
        # Finished attempts stay in the live counters until the whole batch returns.
        cores = [self.cores[s.config_id] for s in specs]
        try:
            runs = (core.run(s, hold=True) for core, s in zip(cores, specs, strict=True))
            return list(await asyncio.gather(*runs))
        finally:
            for core, s in zip(cores, specs, strict=True):
                core.release(s)

    async def live(self) -> dict[str, EndpointLive]:
        """Live counters of every hosted endpoint's attempts not yet returned (display only)."""
        return {config_id: core.live() for config_id, core in self.cores.items()}

    async def probe(
        self, config_id: str, shapes: list[str], context_tokens_needed: int, samples: int
    ) -> Any:
        from pipeline.sweep.probing import probe_worker

        return await probe_worker(self.cores[config_id], shapes, context_tokens_needed, samples)

    def pid(self) -> int:
        return os.getpid()

    async def close(self) -> None:
        for core in self.cores.values():
            await core.close()
