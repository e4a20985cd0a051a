"""Run a prepared sweep on Ray: start servers, actors, probes, then the coordinator.

`execute_sweep` returns how the session ended (SweepEnd: status, exit code, the text for
stderr; codes in pipeline/sweep/summary.py). The coordinator stops on a signal or as soon as
`EndpointServers.fatal` is set (a local server that crash-loops or died from a signal); the
manifest then says `failed` with that line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.compute as pc

from pipeline.store.manifest import Manifest, RunStatus, load_manifest, utc_now, write_manifest
from pipeline.store.reader import read_plan, read_table
from pipeline.sweep import summary
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
from pipeline.usererror import UserError


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
    should_stop: Callable[[], bool],
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
        should_stop=should_stop,
    )
    coordinator.carry_over(**spent_so_far(p.run_dir))
    try:
        return coordinator.run(specs)
    finally:
        progress.close()
        sink.flush()


def stop_check(stop: StopFlag, servers: EndpointServers) -> Callable[[], bool]:
    """The coordinator's `should_stop`: a signal, or a server that can no longer serve."""
    return lambda: stop.requested or servers.fatal is not None


def session_status(outcome: SweepOutcome, fatal: str | None, attempts_in_run: int) -> RunStatus:
    """The manifest status of a session that reached the coordinator.

    A fatal server wins (the coordinator only saw a stop); a completed session with no attempt
    in the whole run is `nothing_ran`.
    """
    if fatal is not None:
        return "failed"
    if outcome.status == "completed" and attempts_in_run == 0:
        return "nothing_ran"
    return outcome.status


def _close_session(
    p: Prepared,
    *,
    manifest: Manifest,
    outcome: SweepOutcome,
    status: RunStatus,
    servers: EndpointServers,
    workers: dict[str, Any],
    sink: Sink,
) -> Manifest:
    """Record server restarts, close the workers, and write the plan and manifest."""
    import ray

    from pipeline.sweep.actors import distinct

    for event in servers.restarts:
        detail = {k: v for k, v in event.items() if k != "config_id"}
        sink.event("server_restart", config_id=event.get("config_id"), **detail)
    if servers.fatal is not None:
        sink.event("failed", error="server_fatal", message=servers.fatal)
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
    if servers.fatal is not None:
        extra["error"] = servers.fatal
    ray.get([w.close.remote() for w in distinct(workers)])
    closed = finish(p, manifest, status, extra)
    if extra["sim_counters"]:
        closed = dataclasses.replace(closed, sim_counters=extra["sim_counters"])
        write_manifest(p.run_dir, closed)
    return closed


@dataclass(frozen=True)
class SweepEnd:
    """How a sweep session ended: what the command prints and the code it exits with."""

    run_dir: Path
    status: RunStatus
    exit_code: int
    message: str  # for stderr: the summary paragraph (exit 0) or the one line naming why not
    report: Path | None


def _mark_failed(p: Prepared, manifest: Manifest, error: str) -> Manifest:
    """Close the manifest as failed; without a plan yet there are no counts to state."""
    if read_plan(p.run_dir) is not None:
        return finish(p, manifest, "failed", {"error": error})
    failed = dataclasses.replace(
        manifest,
        status="failed",
        finished_at=utc_now(),
        extra={**manifest.extra, "error": error},
    )
    write_manifest(p.run_dir, failed)
    return failed


def run_sweep(
    overrides: Sequence[str],
    *,
    analyze: bool = True,
    sim_servers: Literal["process", "thread"] = "process",
) -> Path:
    """Run (or resume) a sweep; returns the run directory (`execute_sweep` says how it ended).
    `sim_servers`: where a sim panel's servers run, a child process (default, off the driver's
    GIL) or a thread of this one."""
    return execute_sweep(overrides, analyze=analyze, sim_servers=sim_servers).run_dir


def execute_sweep(
    overrides: Sequence[str],
    *,
    analyze: bool = True,
    sim_servers: Literal["process", "thread"] = "process",
) -> SweepEnd:
    """Run (or resume) a sweep and say how it ended (exit codes: pipeline/sweep/summary.py).

    Bad input raises a UserError before anything starts. Once the run directory exists, every
    outcome is returned: the manifest is closed with its status, the report is written (the
    nothing-ran report when the run has no rows) and SweepEnd carries the exit code and text.
    """
    p = prepare(overrides)
    prepare_run_dir(p)
    import ray  # after validation: bad input fails fast, before Ray is even imported

    dates = publication_dates(p.resolution)
    endpoints = [inc.endpoint for inc in p.resolution.included]
    manifest = p.manifest if p.manifest is not None else new_manifest(p)
    if p.manifest is None:
        write_manifest(p.run_dir, manifest)
    else:
        manifest = _reopened(manifest)
    sink = Sink(p.run_dir, manifest.run_id)
    stop = StopFlag()
    stop.install()
    print(f"run directory: {p.run_dir}", file=sys.stderr, flush=True)
    started_ray = not ray.is_initialized()
    fatal: str | None = None
    try:
        with contextlib.ExitStack() as stack:
            try:
                servers = stack.enter_context(
                    EndpointServers(
                        p.resolution.kind,
                        endpoints,
                        p.cfg,
                        p.fixture,
                        p.run_dir / "logs",
                        sim_servers=sim_servers,
                    )
                )
            except UserError as exc:  # a server that cannot start: the run failed, say why
                fatal = str(exc)
                manifest = _mark_failed(p, manifest, fatal)
            else:
                manifest, fatal = _run_session(
                    p, manifest, servers=servers, sink=sink, stop=stop, dates=dates
                )
    except KeyboardInterrupt:  # a second signal outside the coordinator's loop
        manifest = _stopped(p, manifest)
    finally:
        stop.restore()
        if started_ray and ray.is_initialized():
            ray.shutdown()
    report = _analyze(p.run_dir) if analyze else None
    return _ending(p.run_dir, manifest, fatal, stop, report)


def _run_session(
    p: Prepared,
    manifest: Manifest,
    *,
    servers: EndpointServers,
    sink: Sink,
    stop: StopFlag,
    dates: dict[str, str | None],
) -> tuple[Manifest, str | None]:
    """Ray, workers, probes, plan, coordinator; returns the closed manifest and the fatal line."""
    from pipeline.sweep.actors import init_ray, start_workers

    settings = {ep.config_id: worker_settings(p, ep, dates) for ep in servers.endpoints}
    started = servers.describe()
    if started:  # the local servers this session runs on: build, argv, props, differences
        manifest = dataclasses.replace(manifest, extra={**manifest.extra, "local_servers": started})
        write_manifest(p.run_dir, manifest)
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
        outcome = _coordinate(p, workers, settings, sink, stop_check(stop, servers))
    except Exception as exc:
        # A bug or a dead endpoint server: keep what was collected, say so, re-raise.
        sink.event("failed", error=type(exc).__name__)
        sink.flush()
        finish(p, manifest, "failed", {"error": f"{type(exc).__name__}: {exc}"})
        raise
    fatal = servers.fatal
    attempts = int(spent_so_far(p.run_dir)["attempts"])
    status = session_status(outcome, fatal, attempts)
    closed = _close_session(
        p,
        manifest=manifest,
        outcome=outcome,
        status=status,
        servers=servers,
        workers=workers,
        sink=sink,
    )
    return closed, fatal


def _reopened(manifest: Manifest) -> Manifest:
    """A resumed run's manifest: running again, without what ended its last session."""
    extra = {k: v for k, v in manifest.extra.items() if k not in ("error", "aborted")}
    return dataclasses.replace(manifest, status="running", finished_at=None, extra=extra)


def _stopped(p: Prepared, manifest: Manifest) -> Manifest:
    """Close the manifest as stopped after an abort outside the coordinator's loop.

    The copy on disk is the newest (it may hold the probe verdicts); the session's own copy
    is used only when none was written yet.
    """
    with contextlib.suppress(UserError):
        on_disk = load_manifest(p.run_dir)
        manifest = _reopened(on_disk) if on_disk.status != "running" else on_disk
    if read_plan(p.run_dir) is not None:
        return finish(p, manifest, "stopped", {"aborted": True})
    stopped = dataclasses.replace(manifest, status="stopped", finished_at=utc_now())
    write_manifest(p.run_dir, stopped)
    return stopped


def _ending(
    run_dir: Path, manifest: Manifest, fatal: str | None, stop: StopFlag, report: Path | None
) -> SweepEnd:
    """The exit code and stderr text of the outcome the manifest records."""
    status = manifest.status
    if status == "failed":
        message = f"error: {fatal or manifest.extra.get('error') or 'the sweep failed'}"
        if report is not None:
            message += f"\nreport: {report}"
        return SweepEnd(run_dir, status, summary.EXIT_FAILED, message, report)
    if status == "stopped":
        line = summary.stopped_line(manifest.counts, stop.signum, run_dir)
        return SweepEnd(run_dir, status, summary.signal_exit_code(stop.signum), line, report)
    if status == "nothing_ran":
        from jobs.carrier.nothing_ran import run_cause

        message = f"error: {run_cause(run_dir)}"
        if report is not None:
            message += f"\nreport: {report}"
        return SweepEnd(run_dir, status, summary.EXIT_NOTHING_RAN, message, report)
    spent = spent_so_far(run_dir)
    paragraph = summary.summary_paragraph(
        status=status,
        counts=manifest.counts,
        cost_usd=spent["cost_usd"],
        requests=int(spent["requests"]),
        simulated=_simulated(run_dir, manifest),
        report=report,
        run_dir=run_dir,
    )
    return SweepEnd(run_dir, status, summary.EXIT_OK, paragraph, report)


def _simulated(run_dir: Path, manifest: Manifest) -> bool:
    """Planned on simulated endpoints, or any row says the simulator answered."""
    if manifest.extra.get("simulated"):
        return True
    rows = read_table(run_dir, "rows")
    return rows.num_rows > 0 and bool(pc.any(rows.column("simulated")).as_py())


def _analyze(run_dir: Path) -> Path | None:
    """Every job and the report; a run without rows gets the nothing-ran report instead."""
    from jobs.carrier.nothing_ran import write_nothing_ran_report
    from jobs.carrier.report import write_report
    from jobs.carrier.run_all import analyze

    if read_table(run_dir, "rows").num_rows == 0:  # even without a plan: say why
        return write_nothing_ran_report(run_dir)
    manifest = load_manifest(run_dir)
    contrasts = manifest.config.get("analysis", {}).get("contrasts")
    analyze(run_dir, contrasts=contrasts)
    return write_report(run_dir)
