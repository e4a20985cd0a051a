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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.probe import spent_by_probes
from pipeline.store.manifest import Manifest, RunStatus, planned_keys
from pipeline.sweep import summary
from pipeline.sweep.budget import PROVIDER_CREDITS, budget_set
from pipeline.sweep.claim import claimed_session
from pipeline.sweep.coordinator import Coordinator, SweepOutcome
from pipeline.sweep.history import (
    session_index,
    with_added_units,
    with_session,
    with_session_bill,
    with_session_counters,
)
from pipeline.sweep.orphans import (
    MARKER_VAR,
    ray_temp_dir,
    record_session,
    remove_ray_temp_dir,
)
from pipeline.sweep.plan_bounds import PlanStopped, no_plan_reason
from pipeline.sweep.probe_phase import collect_probes, estimate_probing
from pipeline.sweep.probing import (
    arm_needs,
    not_run_from_verdicts,
    probe_rule,
    shapes_needed,
)
from pipeline.sweep.progress import ProgressView
from pipeline.sweep.resume_change import extended_plan, extends, inherited_not_run, new_specs
from pipeline.sweep.run import (
    Prepared,
    StopFlag,
    lost_records_builder,
    new_manifest,
    plan_rows,
    plan_specs,
    publication_dates,
    schedule_closure,
    worker_settings,
)
from pipeline.sweep.servers import EndpointServers
from pipeline.sweep.session import RunSession
from pipeline.sweep.sink import Sink
from pipeline.sweep.start import SweepStart
from pipeline.sweep.unit_budget import budget_preview
from pipeline.sweep.worker import WorkerSettings
from pipeline.usererror import UserError


def _probe_all(
    p: Prepared,
    workers: dict[str, Any],
    sink: Sink,
    only: set[str] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[dict[tuple[str, str], str], list[dict[str, Any]]]:
    """Probe every included configuration (or those in `only`): (config, arm) -> not-run
    reason for what it cannot serve, and every verdict. The estimate is said first, a window
    of configurations is probed at once, and `should_stop` ends it (probe_phase.py)."""
    if p.resolution.kind == "offline":  # nothing is served, so there is nothing to probe
        sink.event("probe_skipped", reason="offline panel")
        return {}, []
    plan = p.study.probe_plan()
    needed = plan.context_tokens
    needs_by_config, shapes = {}, {}
    for inc in p.resolution.included:
        if only is not None and inc.config_id not in only:
            continue
        needs = arm_needs(plan, inc.endpoint)
        needs_by_config[inc.config_id] = needs
        shapes[inc.config_id] = (inc.endpoint, shapes_needed(needs))
    counts = {cid: (ep, len(names)) for cid, (ep, names) in shapes.items()}
    print(estimate_probing(counts, p.cfg.probe.samples).line(), file=sys.stderr, flush=True)
    found_by_config = collect_probes(
        list(shapes),
        lambda cid: workers[cid].probe.remote(cid, shapes[cid][1], needed, p.cfg.probe.samples),
        should_stop=should_stop,
    )
    not_run: dict[tuple[str, str], str] = {}
    verdicts: list[dict[str, Any]] = []
    for config_id, found in found_by_config.items():
        verdicts += found
        for v in found:
            samples = [s["verdict"] for s in v.get("samples", ())]
            sink.event(
                "probe",
                config_id=config_id,
                shape=v["shape"],
                verdict=v["verdict"],
                samples=samples,
            )
        for arm, reason in not_run_from_verdicts(found, needs_by_config[config_id]).items():
            not_run[(config_id, arm)] = reason
    return not_run, verdicts


def in_flight_cap(endpoint: EndpointConfig) -> int:
    """In-flight units for one endpoint: enough to keep its request slots busy."""
    return max(2, endpoint.limits.concurrency * 2)


def _caps(settings: dict[str, WorkerSettings]) -> dict[str, int]:
    return {cid: in_flight_cap(s.endpoint) for cid, s in settings.items()}


def _coordinate(
    p: Prepared,
    session: RunSession,
    *,
    workers: dict[str, Any],
    settings: dict[str, WorkerSettings],
    sink: Sink,
    should_stop: Callable[[], bool],
) -> SweepOutcome:
    """Dispatch every owed attempt through the coordinator; budgets count earlier sessions."""
    from pipeline.sweep.actors import RayDispatcher

    specs = session.owed_specs()
    endpoints = [s.endpoint for s in settings.values()]
    spent = session.spent()
    line, guess = budget_preview(
        p.cfg.budget.usd, p.study, endpoints, specs, spent["cost_usd"], runners=p.runners
    )
    if line is not None:  # what the budget buys, before the first unit (issue 31 §6)
        print(line, file=sys.stderr, flush=True)
    progress = ProgressView(len(specs), enabled=p.cfg.progress, labels=p.study.progress_labels)
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
        first_guess=guess,
    )
    coordinator.carry_over(**spent)
    try:
        return coordinator.run(specs)
    finally:
        progress.close()
        sink.flush()


def served_by(p: Prepared, config_id: str, started: Mapping[str, Any] | None = None) -> str | None:
    """A stable name for a server this sweep starts itself (its URL changes every session);
    None for an endpoint the user gave, whose URL identifies it.

    A local server is named by its identity (`started`, EndpointServers.describe(): weights,
    template, output flags and build digests; issue 32), so an edited template or new
    weights never answer from the old entries; a sim server by its seed.
    """
    planned = {inc.config_id: inc.endpoint for inc in p.resolution.included}.get(config_id)
    if planned is None or planned.base_url:
        return None
    kind = p.resolution.kind
    if p.simulated:
        started_from = f"sim.seed={p.cfg.sim.seed}"
    elif kind == "local":
        identity = (started or {}).get(config_id, {}).get("identity")
        if identity is None:  # keyed by kind alone, it would answer from another server's
            raise ValueError(f"local server {config_id} has no identity to name its replies")
        started_from = f"local:{identity['digest']}"
    else:
        started_from = kind
    return f"{kind}:{config_id}:{started_from}"


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
    session: RunSession,
    *,
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
            "spent_usd": outcome.cost_usd,
            "cache_hits": outcome.cache_hits,
            "cut_by_budget": outcome.cut,
        },
    }
    if servers.fatal is not None:
        extra["error"] = servers.fatal
    if outcome.stop_reason == PROVIDER_CREDITS:  # the not-run reason, and what it said
        extra["stop_reason"] = outcome.stop_reason
        extra["provider_message"] = outcome.stop_detail
    ray.get([w.close.remote() for w in distinct(workers)])
    closed = session.finish(status, extra)
    closed = session.write(with_session_bill(closed, extra["totals"]))
    if extra["sim_counters"]:  # the run's totals: a resume adds to the earlier sessions'
        closed = session.write(with_session_counters(closed, extra["sim_counters"]))
    return closed


@dataclass(frozen=True)
class SweepEnd:
    """How a sweep session ended: what the command prints and the code it exits with."""

    run_dir: Path
    status: RunStatus
    exit_code: int
    message: str  # for stderr: the summary paragraph (exit 0) or the one line naming why not
    report: Path | None


def execute_sweep(
    start: SweepStart,
    *,
    analyze: bool = True,
    sim_servers: Literal["process", "thread"] = "process",
) -> SweepEnd:
    """Run (or resume) a sweep and say how it ended (exit codes: pipeline/sweep/summary.py).

    Bad input raises a UserError before anything starts. Once the run directory exists, every
    outcome is returned: the manifest is closed with its status, the study's analysis and
    report run once (the nothing-ran report when the run has no rows) and SweepEnd carries the
    exit code and text. The run dir is locked for the whole session (claim.py): a resume's by
    the entry point, before it read the manifest (`start.lock`), a new run's here, so a second
    session on it is refused before it reads or cleans anything. `sim_servers`: where a sim
    panel's servers run, a child process (default, off the driver's GIL) or a thread of this
    one.
    """
    with claimed_session(start) as p:
        return _execute_claimed(p, analyze=analyze, sim_servers=sim_servers)


def _execute_claimed(
    p: Prepared, *, analyze: bool, sim_servers: Literal["process", "thread"]
) -> SweepEnd:
    warning = schedule_closure(p).warning() if p.study.order_matters else None
    import ray  # after validation: bad input fails fast, before Ray is even imported

    dates = publication_dates(p.resolution)
    endpoints = [inc.endpoint for inc in p.resolution.included]
    manifest = _session_manifest(p)
    session = RunSession(
        p.run_dir, p.layout, manifest, p.cfg.retry.trajectory_attempts, plan=p.plan
    )
    session.write(manifest)
    sink = Sink(
        p.run_dir,
        manifest.run_id,
        p.layout,
        on_commit=session.add_rows,
        on_requests=session.add_requests,
    )
    stop = StopFlag()
    stop.install()
    print(f"run directory: {p.run_dir}", file=sys.stderr, flush=True)
    if warning is not None and not p.resuming:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    for line in p.study.inputs.warnings:
        print(f"warning: {line}", file=sys.stderr, flush=True)
    started_ray = not ray.is_initialized()
    mark_session(p)
    fatal: str | None = None
    sim_models = []
    if p.simulated:
        pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
        sim_models = p.study.sim_models(pairs, p.cfg.sim.seed)
    try:
        with contextlib.ExitStack() as stack:
            try:
                servers = stack.enter_context(
                    EndpointServers(
                        p.resolution.kind,
                        endpoints,
                        p.cfg,
                        p.run_dir / "logs",
                        sim_models=sim_models,
                        sim_servers=sim_servers,
                    )
                )
            except UserError as exc:  # a server that cannot start: the run failed, say why
                fatal = str(exc)
                session.finish("failed", {"error": fatal})
            else:
                fatal = _run_session(p, session, servers=servers, sink=sink, stop=stop, dates=dates)
    except KeyboardInterrupt:  # a second signal outside the coordinator's loop
        session.finish("stopped", {"aborted": True})
    finally:
        stop.restore()
        if started_ray and ray.is_initialized():
            ray.shutdown()
        if started_ray and p.cfg.ray.address == "local":  # ours alone, after Ray let go of it
            leftover = ray_temp_dir(p.run_dir)
            if not remove_ray_temp_dir(leftover):
                print(f"warning: could not remove Ray's temp dir {leftover}", file=sys.stderr)
    report = None
    if analyze:
        report = p.finish(p.run_dir, p.cfg.analysis)  # the registry's rule (SweepStart.finish)
    return _ending(p, session, fatal, stop, report)


def mark_session(p: Prepared) -> None:
    """Record this session's marker before anything is spawned, so a resume finds every
    process a hard-killed driver left: Ray's, and the llama-servers, which start first and
    run in their own sessions (pipeline/sweep/orphans.py; server_environment passes it on)."""
    if p.cfg.ray.address != "local":
        return
    temp_dir = ray_temp_dir(p.run_dir)
    record_session(p.run_dir, temp_dir)
    os.environ[MARKER_VAR] = temp_dir  # inherited by every Ray process and local server


def _run_session(
    p: Prepared,
    session: RunSession,
    *,
    servers: EndpointServers,
    sink: Sink,
    stop: StopFlag,
    dates: dict[str, str | None],
) -> str | None:
    """Ray, workers, probes, plan, coordinator; closes the session, returns the fatal line."""
    from pipeline.sweep.actors import init_ray, start_workers
    from pipeline.sweep.budget_actor import start_budget

    index = session_index(session.manifest)
    started = servers.describe()
    if started:  # the local servers this session runs on: build, argv, props, identity
        session.update_extra(local_servers=started)
    settings = {
        ep.config_id: dataclasses.replace(
            worker_settings(p, ep, dates),
            session=index,
            served_by=served_by(p, ep.config_id, started),
        )
        for ep in servers.endpoints
    }
    temp_dir = ray_temp_dir(p.run_dir) if p.cfg.ray.address == "local" else None
    init_ray(p.cfg.ray.address, p.cfg.ray.num_cpus, temp_dir, dashboard=p.cfg.ray.dashboard)
    stop.install()  # Ray's init replaced the SIGTERM handler with its own exit
    gate = None
    if budget_set(p.cfg.budget):  # one ledger for every worker, from what the run spent
        spent = session.spent()
        gate = start_budget(
            p.cfg.budget, spent_usd=spent["cost_usd"], requests=int(spent["requests"])
        )
        settings = {cid: dataclasses.replace(s, budget=gate) for cid, s in settings.items()}
    workers = start_workers(settings, p.cfg.ray.endpoints_per_worker)
    probed_before = spent_by_probes(session.manifest.probes)
    if not p.resuming:
        try:
            asked = stop_check(stop, servers)
            not_run, verdicts = _probe_all(p, workers, sink, should_stop=asked)
            session.set_plan(plan_rows(p, not_run, should_stop=asked))
        except PlanStopped:  # a run dir without a plan cannot be resumed: say so, as failed
            return _stopped_before_plan(session, sink, stop, servers)
        rule = probe_rule(p.cfg.probe.samples)
        extra = {**session.manifest.extra, "probe_rule": rule}
        session.write(dataclasses.replace(session.manifest, probes=verdicts, extra=extra))
    elif extends(p.changes):
        _extend_plan(p, session, workers, sink)
    if gate is not None:  # this session's probes were paid for outside any unit
        gate.charge(spent_by_probes(session.manifest.probes) - probed_before)
    try:
        outcome = _coordinate(
            p,
            session,
            workers=workers,
            settings=settings,
            sink=sink,
            should_stop=stop_check(stop, servers),
        )
    except Exception as exc:
        # A bug or a dead endpoint server: keep what was collected, say so, re-raise.
        sink.event("failed", error=type(exc).__name__)
        sink.flush()
        session.finish("failed", {"error": f"{type(exc).__name__}: {exc}"})
        raise
    fatal = servers.fatal
    attempts = int(session.spent()["attempts"])
    status = session_status(outcome, fatal, attempts)
    _close_session(
        session,
        outcome=outcome,
        status=status,
        servers=servers,
        workers=workers,
        sink=sink,
    )
    return fatal


def _stopped_before_plan(
    session: RunSession, sink: Sink, stop: StopFlag, servers: EndpointServers
) -> str:
    """Close a session stopped (a signal, a fatal server) before its plan was written:
    `failed`, with the reason, which is also the line the command prints."""
    reason = servers.fatal or no_plan_reason(summary.signal_name(stop.signum))
    sink.event("failed", error="stopped_before_plan", message=reason)
    sink.flush()
    extra: dict[str, Any] = {"error": reason}
    if servers.fatal is None and stop.signum is not None:  # exits 128 + signum (_ending)
        extra["stopped_before_plan"] = int(stop.signum)
    session.finish("failed", extra)
    return reason


def _session_manifest(p: Prepared) -> Manifest:
    """A new run's manifest, or a resumed run's reopened with this session (and its config
    changes) added to its history."""
    if p.manifest is None:
        return new_manifest(p)
    return _reopened(with_session(p.manifest, p.overrides, p.resolved, p.changes))


def _reopened(manifest: Manifest) -> Manifest:
    """A resumed run's manifest: running again, without what ended its last session."""
    ended = ("error", "aborted", "stop_reason", "provider_message")
    extra = {k: v for k, v in manifest.extra.items() if k not in ended}
    return dataclasses.replace(manifest, status="running", finished_at=None, extra=extra)


def _extend_plan(p: Prepared, session: RunSession, workers: dict[str, Any], sink: Sink) -> None:
    """Plan the units a resume's config adds; the planned ones keep their rows.

    A (configuration, arm) pair the run already planned keeps its probe outcome (its new
    repeats are not run for the same reason, or run); the configurations of new pairs are
    probed now, and only the new pairs take those verdicts.
    """
    assert session.plan is not None
    added = new_specs(session.plan, plan_specs(p))
    known = {(key.config_id, key.arm) for key, _, _ in planned_keys(session.plan)}
    fresh = {(s.config_id, s.arm) for s in added} - known
    probed, verdicts = _probe_all(p, workers, sink, only={cid for cid, _ in fresh})
    not_run = {pair: reason for pair, reason in probed.items() if pair in fresh}
    not_run.update(inherited_not_run(session.plan))
    session.set_plan(extended_plan(session.plan, added, not_run))
    sink.event("plan_extended", added_units=len(added), probed=sorted({c for c, _ in fresh}))
    manifest = with_added_units(session.manifest, len(added))
    probes = [*manifest.probes, *verdicts]
    session.write(dataclasses.replace(manifest, probes=probes))


def _ending(
    p: Prepared, session: RunSession, fatal: str | None, stop: StopFlag, report: Path | None
) -> SweepEnd:
    """The exit code and stderr text of the outcome the manifest records."""
    run_dir, manifest = p.run_dir, session.manifest
    status = manifest.status
    if status == "failed":
        message = f"error: {fatal or manifest.extra.get('error') or 'the sweep failed'}"
        if report is not None:
            message += f"\nreport: {report}"
        code = summary.EXIT_FAILED
        if manifest.extra.get("stopped_before_plan"):  # a signal: 128 + its number
            code = summary.signal_exit_code(stop.signum)
        return SweepEnd(run_dir, status, code, message, report)
    if status == "stopped":
        line = summary.stopped_line(manifest.counts, stop.signum, run_dir)
        return SweepEnd(run_dir, status, summary.signal_exit_code(stop.signum), line, report)
    if status == "nothing_ran":
        message = f"error: {p.nothing_ran_cause(run_dir)}"
        if report is not None:
            message += f"\nreport: {report}"
        return SweepEnd(run_dir, status, summary.EXIT_NOTHING_RAN, message, report)
    spent = session.spent()
    paragraph = summary.summary_paragraph(
        status=status,
        counts=manifest.counts,
        cost_usd=spent["cost_usd"],
        requests=int(spent["requests"]),
        simulated=bool(manifest.extra.get("simulated")) or session.any_simulated(),
        report=report,
        run_dir=run_dir,
        cache_hits=int(manifest.extra.get("totals", {}).get("cache_hits", 0)),
        budget=p.cfg.budget,
        provider_message=manifest.extra.get("provider_message")
        if manifest.extra.get("stop_reason") == PROVIDER_CREDITS
        else None,
        replay=p.resolution.kind == "replay",
    )
    share = p.cfg.fail_on.invalid_share
    failing = summary.invalid_share_failure(manifest.counts, share, report)
    if failing is not None:  # fail_on.invalid_share: a CI gate, exit 5 with one line
        return SweepEnd(run_dir, status, summary.EXIT_INVALID_SHARE, failing, report)
    return SweepEnd(run_dir, status, summary.EXIT_OK, paragraph, report)
