"""Ray side of the sweep: starting the EndpointWorker actors (pipeline/sweep/endpoint_actor.py)
and the dispatcher that feeds them.

One async actor per served configuration owns that endpoint's session, limiter and retry
policy (state in exactly one place). Calls are coarse: one Ray call carries a small batch of
unit attempts (up to `MAX_BATCH`, fewer when the endpoint's in-flight cap is small),
which the actor runs concurrently. A Ray call costs about 1.5 ms of CPU across driver and
actor, as much as a unit's own protocol work against a fast endpoint
(docs/benchmarks.md); a batch of 8 pays it once. Batches stay small because a batch reports
when its last attempt ends, and its finished attempts hold their in-flight slots until then.
A crashed actor is restarted by Ray (`max_restarts=-1`) but its in-flight calls are not
retried by Ray (`max_task_retries=0`): the coordinator turns every attempt of a lost call
into a `worker_lost` infrastructure attempt, so the retry decision stays with the validity
rule.

After a lost call the dispatcher holds that endpoint's units until the restarted actor
answers a ping: re-queued attempts sent during the restart would fail at once
(ActorUnavailableError) and burn the unit's attempt budget in seconds (found by
tests/reliability/test_actor_crash.py).

Live progress: while a progress display wants it, `RayDispatcher.live()` asks each actor for
its endpoints' live counters (`EndpointWorker.live`) at most every `LIVE_EVERY_S`: one small
call per actor, whose reply is picked up by the `ray.wait` that `poll` does anyway. A batch
call can take a minute on a slow local model, so completions alone would leave the display
standing still. The snapshot an actor sends can predate a completion the driver collects
after sending the request; the dispatcher drops those attempts from it, so nothing is counted
both live and as a row.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

from pipeline.study import UnitSpec
from pipeline.sweep.coordinator import Completion
from pipeline.sweep.endpoint_actor import EndpointWorker
from pipeline.sweep.progress import EndpointLive
from pipeline.sweep.worker import WorkerSettings

AUTH_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
RESTART_PING_S = 0.5  # how often a restarting actor is pinged
MAX_BATCH = 8  # unit attempts per Ray call, at most
LIVE_EVERY_S = 2.0  # live counters are fetched from each actor at most this often

LOOPBACK_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    # Task events feed the state API and dashboard, which a sweep never reads; reporting them
    # cost every actor and the GCS work per call (docs/benchmarks.md). Set it to re-enable.
    "RAY_task_events_report_interval_ms": "0",
}


def endpoint_groups(
    config_ids: Sequence[str],
    per_worker: int,
    limit_groups: Mapping[str, str | None] | None = None,
) -> list[list[str]]:
    """Consecutive groups of at most `per_worker` endpoints, in panel order.

    `limit_groups` (config_id -> limit group) keeps every member of a limit group on one
    worker, its first member's, however many that puts there: the group's bucket must have
    one owner (pipeline/endpoints/limit_groups.py).
    """
    bundles: list[list[str]] = []
    bundle_of: dict[str, list[str]] = {}
    for cid in config_ids:
        group = (limit_groups or {}).get(cid)
        if group is not None and group in bundle_of:
            bundle_of[group].append(cid)
            continue
        bundles.append([cid])
        if group is not None:
            bundle_of[group] = bundles[-1]
    workers: list[list[str]] = []
    for bundle in bundles:
        if workers and len(workers[-1]) + len(bundle) <= per_worker:
            workers[-1].extend(bundle)
        else:
            workers.append(list(bundle))
    return workers


def auto_per_worker(endpoints: int, cpus: float) -> int:
    """Endpoints per worker so that there are no more actor processes than CPUs (at least 1).

    One endpoint per worker is DESIGN's layout, and it is what this gives wherever there are
    as many CPUs as endpoints. With fewer, each actor process costs about 130 MB of RSS
    before its first unit (Ray's worker and the pyarrow its serializer loads), so ten
    of them held 1.3 GB on a 2-core machine, and at a tenth of the rate each they spent more
    CPU per request than two busier ones (docs/benchmarks.md, "Memory" and "Measured design
    decisions"). The price is isolation: a crashed worker loses the attempts in flight of every
    endpoint it hosts (retried as `worker_lost`, like any infrastructure fault).
    """
    processes = max(1, int(cpus))
    return max(1, -(-endpoints // processes))


def start_workers(
    settings: dict[str, WorkerSettings], per_worker: int | None = None
) -> dict[str, Any]:
    """One EndpointWorker per group of endpoints; config_id -> its worker's handle.

    `per_worker` is `ray.endpoints_per_worker`; None sizes the groups by `auto_per_worker`
    over the CPUs of the Ray instance or cluster (ray.cluster_resources()).
    """
    from pipeline.endpoints.limit_groups import group_of

    if per_worker is None:
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        per_worker = auto_per_worker(len(settings), resources.get("CPU", 1.0))
    workers: dict[str, Any] = {}
    limit_groups = {cid: group_of(s.endpoint) for cid, s in settings.items()}
    for group in endpoint_groups(list(settings), per_worker, limit_groups):
        handle = EndpointWorker.remote([settings[cid] for cid in group])  # type: ignore[attr-defined]
        workers.update(dict.fromkeys(group, handle))
    return workers


def distinct(workers: dict[str, Any]) -> list[Any]:
    """Each actor handle once (endpoints that share a worker share its handle)."""
    return list({id(handle): handle for handle in workers.values()}.values())


def init_ray(
    address: str,
    num_cpus: int | None = None,
    temp_dir: str | None = None,
    *,
    dashboard: bool = False,
) -> None:
    """Start a private instance on this machine (address=local) or join a cluster (auto / URL).

    The private instance runs without Ray's dashboard unless `dashboard` (ray.dashboard=true)
    asks for it, and prints nothing of its own: Ray 2.60 logs a token-authentication notice
    on every local start (ray/_private/authentication/authentication_token_setup.py), which
    is silenced for that start only. Token authentication itself stays on: Ray 2.60 binds the
    instance's GCS, raylet, workers and agents on every interface, and `_node_ip_address`
    changes neither those sockets nor the advertised GCS address (docs/reliability.md,
    issue 19), so the token is what keeps other hosts out. Joining a cluster is left exactly
    as Ray does it.
    """
    for name, value in LOOPBACK_ENV.items():
        os.environ.setdefault(name, value)
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    quiet: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if address == "local":
        kwargs.update(address="local", include_dashboard=dashboard, num_cpus=num_cpus)
        if temp_dir is not None:
            kwargs["_temp_dir"] = temp_dir
        quiet = _quiet_logger(AUTH_NOTICE_LOGGER)
    else:
        kwargs.update(address=address)
    with _driver_keeps_sigterm(), quiet:
        ray.init(**kwargs)


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    """Drop `name`'s warnings while Ray starts (errors still show)."""
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextlib.contextmanager
def _driver_keeps_sigterm() -> Iterator[None]:
    """Keep the sweep's SIGTERM handler through `ray.init`.

    ray.init installs its own driver handler (`sys.exit(15)`) early and then spends seconds
    starting GCS and the raylet, so a SIGTERM in that window ended the sweep with exit 15, no
    manifest status and no resume line (tests/sweep/test_sweep_exit_codes.py). Ray's hook is a
    private function; if it moves, this patch does nothing and the sweep's reinstall after
    init (pipeline/sweep/execute.py) still owns SIGTERM from then on.
    """
    import ray._private.utils as ray_utils

    original = getattr(ray_utils, "set_sigterm_handler", None)
    if original is not None:
        ray_utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        if original is not None:
            ray_utils.set_sigterm_handler = original


def batch_size(cap: int) -> int:
    """Attempts per Ray call for an endpoint with `cap` units in flight.

    A quarter of the cap at most, so a batch never holds a large share of the endpoint's
    slots while its slowest attempt finishes; 1 for tiny caps (local llama.cpp servers).
    """
    return max(1, min(MAX_BATCH, cap // 4))


class RayDispatcher:
    """Submits attempts to EndpointWorker actors in batches; reports a call's attempts when
    the call returns.

    `submit` only queues; the queued attempts go out, per endpoint and in order, at the next
    `poll`, so everything one coordinator pass dispatched shares as few calls as possible.
    """

    def __init__(self, workers: dict[str, Any], caps: dict[str, int] | None = None) -> None:
        self.workers = workers
        self.batch = {cid: batch_size(cap) for cid, cap in (caps or {}).items()}
        self.queued: dict[str, list[UnitSpec]] = {}
        self.refs: dict[Any, list[UnitSpec]] = {}
        self.counts: dict[str, int] = {}
        # config_id -> outstanding ping (None: the next ping is due at ping_due[config_id])
        self.restarting: dict[str, Any | None] = {}
        self.ping_due: dict[str, float] = {}
        # Live counters (display only): each actor once, with the endpoints it hosts.
        self.actors: dict[int, tuple[Any, list[str]]] = {}
        for config_id, handle in workers.items():
            self.actors.setdefault(id(handle), (handle, []))[1].append(config_id)
        self.actor_of = {cid: id(handle) for cid, handle in workers.items()}
        self.live_view: dict[str, EndpointLive] = {}
        self.live_refs: dict[Any, int] = {}  # outstanding live() call -> its actor
        # actor -> (config_id, row_id) collected while its live() call is outstanding
        self.collected_since: dict[int, list[tuple[str, str]]] = {}
        self.live_due = 0.0

    def submit(self, spec: UnitSpec) -> None:
        self.queued.setdefault(spec.config_id, []).append(spec)
        self.counts[spec.config_id] = self.counts.get(spec.config_id, 0) + 1

    def _send_queued(self) -> None:
        for config_id, specs in self.queued.items():
            size = self.batch.get(config_id, 1)
            for at in range(0, len(specs), size):
                chunk = specs[at : at + size]
                worker = self.workers[config_id]
                if len(chunk) == 1:
                    ref = worker.run.remote(chunk[0])
                else:
                    ref = worker.run_batch.remote(chunk)
                self.refs[ref] = chunk
        self.queued.clear()

    def in_flight(self, config_id: str) -> int:
        if config_id in self.restarting:
            return sys.maxsize  # full until the restarted actor answers a ping
        return self.counts.get(config_id, 0)

    def busy(self) -> bool:
        return bool(self.refs) or bool(self.queued)

    def _send_due_pings(self) -> None:
        now = time.monotonic()
        for config_id, ping in self.restarting.items():
            if ping is None and now >= self.ping_due[config_id]:
                self.restarting[config_id] = self.workers[config_id].pid.remote()

    def _settle_pings(self, ready: set[Any]) -> None:
        for config_id, ping in list(self.restarting.items()):
            if ping is None or ping not in ready:
                continue
            try:
                ray.get(ping)
            except (RayActorError, WorkerCrashedError):
                self.restarting[config_id] = None
                self.ping_due[config_id] = time.monotonic() + RESTART_PING_S
            else:
                del self.restarting[config_id]

    def live(self) -> Mapping[str, EndpointLive]:
        """The latest live counters per endpoint; asks the busy actors again when due.

        Never blocks: the replies arrive with a later `poll`. At most one call per actor is
        outstanding, and none goes to an actor that is restarting.
        """
        now = time.monotonic()
        if now < self.live_due:
            return self.live_view
        self.live_due = now + LIVE_EVERY_S
        asked = set(self.live_refs.values())
        for actor, (handle, config_ids) in self.actors.items():
            if actor in asked or any(cid in self.restarting for cid in config_ids):
                continue
            if not any(self.counts.get(cid, 0) for cid in config_ids):
                for cid in config_ids:  # idle: nothing of it can be in flight
                    self.live_view.pop(cid, None)
                continue
            self.live_refs[handle.live.remote()] = actor
            self.collected_since[actor] = []
        return self.live_view

    def _settle_live(self, ready: list[Any]) -> None:
        for ref in ready:
            actor = self.live_refs.pop(ref, None)
            if actor is None:
                continue
            collected = self.collected_since.pop(actor, [])
            try:
                snapshot: dict[str, EndpointLive] = ray.get(ref)
            except (RayActorError, WorkerCrashedError):
                for cid in self.actors[actor][1]:  # its attempts come back as worker_lost
                    self.live_view.pop(cid, None)
                continue
            except RayTaskError as exc:
                raise exc.as_instanceof_cause() from None  # type: ignore[no-untyped-call]
            for cid, row_id in collected:  # collected after the snapshot was asked for
                if cid in snapshot:
                    snapshot[cid].attempts.pop(row_id, None)
            self.live_view.update(snapshot)

    def _forget_live(self, specs: Sequence[UnitSpec]) -> None:
        """A collected attempt is a row now: it leaves the live counters."""
        for spec in specs:
            view = self.live_view.get(spec.config_id)
            if view is not None:
                view.attempts.pop(spec.row_id, None)
            waiting = self.collected_since.get(self.actor_of[spec.config_id])
            if waiting is not None:
                waiting.append((spec.config_id, spec.row_id))

    def _lost(self, config_id: str) -> None:
        if config_id not in self.restarting:
            self.restarting[config_id] = None
            self.ping_due[config_id] = time.monotonic() + RESTART_PING_S

    def poll(self, timeout_s: float) -> list[Completion]:
        self._send_queued()
        self._send_due_pings()
        pings = [p for p in self.restarting.values() if p is not None]
        waitable = [*self.refs, *pings, *self.live_refs]
        if not waitable:
            if self.restarting:  # only pings that are not due yet: do not spin
                time.sleep(min(timeout_s, RESTART_PING_S))
            return []
        ready, _ = ray.wait(waitable, num_returns=1, timeout=timeout_s)
        if ready:
            first = set(ready)
            rest = [r for r in waitable if r not in first]
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0) if rest else ([], [])
            ready = ready + more
        self._settle_pings(set(ready))
        if self.live_refs:
            self._settle_live(ready)
        completions = []
        for ref in ready:
            specs = self.refs.pop(ref, None)
            if specs is None:  # a ping or a live() call, settled above
                continue
            config_id = specs[0].config_id
            self.counts[config_id] -= len(specs)
            if self.live_view or self.collected_since:
                self._forget_live(specs)
            try:
                found = ray.get(ref)
            except (RayActorError, WorkerCrashedError) as exc:
                completions += [Completion(s, None, f"{type(exc).__name__}") for s in specs]
                self._lost(config_id)
                continue
            except RayTaskError as exc:
                # A bug inside the worker: crash loudly rather than record it as data.
                raise exc.as_instanceof_cause() from None  # type: ignore[no-untyped-call]
            records = found if isinstance(found, list) else [found]
            completions += [Completion(s, r) for s, r in zip(specs, records, strict=True)]
        return completions
