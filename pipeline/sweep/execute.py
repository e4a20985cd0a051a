"""Run a prepared sweep on Ray: start servers, actors, probes, then the coordinator."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import pyarrow.compute as pc

from pipeline.store.manifest import Manifest, load_manifest, write_manifest
from pipeline.store.reader import read_table
from pipeline.sweep.coordinator import Coordinator, SweepOutcome
from pipeline.sweep.orphans import MARKER_VAR, ray_temp_dir, record_session
from pipeline.sweep.probing import (
    arm_needs,
    context_tokens_needed,
    not_run_from_verdicts,
    shapes_needed,
)
from pipeline.sweep.progress import ProgressView
from pipeline.sweep.run import (
    Prepared,
    StopFlag,
    finish,
    lost_records_builder,
    new_manifest,
    owed_specs,
    prepare,
    prepare_run_dir,
    publication_dates,
    worker_settings,
    write_initial_plan,
)
from pipeline.sweep.servers import EndpointServers
from pipeline.sweep.sink import Sink
from pipeline.sweep.worker import WorkerSettings


def _probe_all(
    p: Prepared, workers: dict[str, Any], sink: Sink
) -> tuple[dict[tuple[str, str], str], list[dict[str, Any]]]:
    import ray

    needed = context_tokens_needed(p.fixture, p.arms)
    refs, needs_by_config = {}, {}
    for inc in p.resolution.included:
        needs = arm_needs(p.arms, inc.endpoint)
        needs_by_config[inc.config_id] = needs
        worker = workers[inc.config_id]
        refs[inc.config_id] = worker.probe.remote(inc.config_id, shapes_needed(needs), needed)
    not_run: dict[tuple[str, str], str] = {}
    verdicts: list[dict[str, Any]] = []
    for config_id, ref in refs.items():
        found = ray.get(ref)
        verdicts += found
        for v in found:
            sink.event("probe", config_id=config_id, shape=v["shape"], verdict=v["verdict"])
        for arm, reason in not_run_from_verdicts(found, needs_by_config[config_id]).items():
            not_run[(config_id, arm)] = reason
    return not_run, verdicts


def spent_so_far(run_dir: Path) -> dict[str, float]:
    """What earlier sessions of this run already spent: budgets are per run, not per session."""
    rows = read_table(run_dir, "rows")
    if rows.num_rows == 0:
        return {"cost_usd": 0.0, "requests": 0.0, "attempts": 0.0}
    cost = pc.sum(rows.column("cost_usd")).as_py() or 0.0
    requests = pc.sum(rows.column("requests")).as_py() or 0
    return {"cost_usd": float(cost), "requests": float(requests), "attempts": float(rows.num_rows)}


def _caps(settings: dict[str, WorkerSettings]) -> dict[str, int]:
    """In-flight trajectories per endpoint: enough to keep its request slots busy."""
    return {cid: max(2, s.endpoint.limits.concurrency * 2) for cid, s in settings.items()}


def _coordinate(
    p: Prepared,
    workers: dict[str, Any],
    settings: dict[str, WorkerSettings],
    sink: Sink,
    stop: StopFlag,
) -> SweepOutcome:
    """Dispatch every owed attempt through the coordinator; budgets count earlier sessions."""
    from pipeline.sweep.actors import RayDispatcher

    specs = owed_specs(p)
    progress = ProgressView(len(specs), enabled=p.cfg.progress)
    caps = _caps(settings)
    coordinator = Coordinator(
        dispatcher=RayDispatcher(workers, caps),
        sink=sink,
        attempt_limit=p.cfg.retry.trajectory_attempts,
        budget=p.cfg.budget,
        caps=caps,
        lost_records=lost_records_builder(p, settings),
        progress=progress,
        should_stop=lambda: stop.requested,
    )
    coordinator.carry_over(**spent_so_far(p.run_dir))
    try:
        return coordinator.run(specs)
    finally:
        progress.close()
        sink.flush()


def _close_session(
    p: Prepared,
    *,
    manifest: Manifest,
    outcome: SweepOutcome,
    servers: EndpointServers,
    workers: dict[str, Any],
    sink: Sink,
) -> None:
    """Record server restarts, close the workers, and write the plan and manifest."""
    import ray

    from pipeline.sweep.actors import distinct

    for event in servers.restarts:
        detail = {k: v for k, v in event.items() if k != "config_id"}
        sink.event("server_restart", config_id=event.get("config_id"), **detail)
    sink.flush()
    extra: dict[str, Any] = {
        "sim_counters": servers.counters(),
        "server_restarts": servers.restarts,
        "totals": {
            "attempts": outcome.attempts,
            "requests": outcome.requests,
            "cost_usd": outcome.cost_usd,
        },
    }
    ray.get([w.close.remote() for w in distinct(workers)])
    closed = finish(p, manifest, outcome.status, extra)
    if extra["sim_counters"]:
        write_manifest(p.run_dir, dataclasses.replace(closed, sim_counters=extra["sim_counters"]))


def run_sweep(
    overrides: Sequence[str],
    *,
    analyze: bool = True,
    sim_servers: Literal["process", "thread"] = "process",
) -> Path:
    """Run (or resume) a sweep; returns the run directory. `sim_servers`: where a sim panel's
    servers run, a child process (default, off the driver's GIL) or a thread of this one."""
    import ray

    from pipeline.sweep.actors import init_ray, start_workers

    p = prepare(overrides)
    prepare_run_dir(p)
    dates = publication_dates(p.resolution)
    endpoints = [inc.endpoint for inc in p.resolution.included]
    manifest = p.manifest if p.manifest is not None else new_manifest(p)
    if p.manifest is None:
        write_manifest(p.run_dir, manifest)
    else:
        manifest = dataclasses.replace(manifest, status="running", finished_at=None)
    sink = Sink(p.run_dir, manifest.run_id)
    stop = StopFlag()
    stop.install()
    print(f"run directory: {p.run_dir}", file=sys.stderr, flush=True)
    started_ray = not ray.is_initialized()
    try:
        with EndpointServers(
            p.resolution.kind,
            endpoints,
            p.cfg,
            p.fixture,
            p.run_dir / "logs",
            sim_servers=sim_servers,
        ) as servers:
            settings = {ep.config_id: worker_settings(p, ep, dates) for ep in servers.endpoints}
            temp_dir = None
            if p.cfg.ray.address == "local":  # recorded before start-up: a kill can land there
                temp_dir = ray_temp_dir(p.run_dir)
                record_session(p.run_dir, temp_dir)
                os.environ[MARKER_VAR] = temp_dir  # inherited by every Ray process
            init_ray(p.cfg.ray.address, p.cfg.ray.num_cpus, temp_dir)
            workers = start_workers(settings, p.cfg.ray.endpoints_per_worker)
            if not p.resuming:
                not_run, verdicts = _probe_all(p, workers, sink)
                write_initial_plan(p, not_run)
                manifest = dataclasses.replace(manifest, probes=verdicts)
                write_manifest(p.run_dir, manifest)
            try:
                outcome = _coordinate(p, workers, settings, sink, stop)
            except Exception as exc:
                # A bug or a dead endpoint server: keep what was collected, say so, re-raise.
                sink.event("failed", error=type(exc).__name__)
                sink.flush()
                finish(p, manifest, "failed", {"error": f"{type(exc).__name__}: {exc}"})
                raise
            _close_session(
                p, manifest=manifest, outcome=outcome, servers=servers, workers=workers, sink=sink
            )
    finally:
        stop.restore()
        if started_ray and ray.is_initialized():
            ray.shutdown()
    if analyze:
        _analyze(p.run_dir)
    return p.run_dir


def _analyze(run_dir: Path) -> None:
    from jobs.carrier.report import write_report
    from jobs.carrier.run_all import analyze

    manifest = load_manifest(run_dir)
    contrasts = manifest.config.get("analysis", {}).get("contrasts")
    analyze(run_dir, contrasts=contrasts)
    write_report(run_dir)
