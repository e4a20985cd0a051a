"""The sweep driver: start -> panel -> servers -> probes -> plan -> coordinator.

The study arrives resolved (SweepStart, from the CLI): the engine never looks one up. What
`prepare` builds is built once and handed on in memory: each configuration's unit runner
(validated here, reused for the budget preview) and a resumed run's plan (read here, for the
config-change check, then kept by the session).

Everything that can be wrong with the input (config, the study's node and inputs, panel, keys,
run dir) is checked before the first request, before any server or Ray starts. The run
directory is self-contained: it holds the study's inputs (carrier: fixture.json), plan, parts
and a manifest that records the overrides, so `resume=RUN_DIR` alone continues it.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa

from pipeline.config import RunConfig
from pipeline.config.schema import AnalysisConfig, EndpointConfig, ttl_seconds
from pipeline.endpoints.panels import (
    PanelResolution,
    check_secrets,
    load_panel_catalog,
    materialize,
    resolve,
)
from pipeline.endpoints.sampling import check_sampling
from pipeline.store.layout import Layout, layout_for
from pipeline.store.manifest import Manifest
from pipeline.store.parts import clean_temporaries, clean_uncommitted
from pipeline.store.provenance import provenance_lock
from pipeline.store.reader import RunDirError, read_plan
from pipeline.study import Study, StudyDefinition, UnitRunner, UnitSpec, lost_unit
from pipeline.sweep import run_names
from pipeline.sweep.history import session_entry
from pipeline.sweep.orphans import stop_orphans
from pipeline.sweep.plan import iter_plan, plan_table
from pipeline.sweep.plan_bounds import check_plan_size
from pipeline.sweep.response_cache import RUN_CACHE_DIR, shared_cache_root
from pipeline.sweep.resume import check_resume_compatible, config_fingerprint
from pipeline.sweep.resume_change import ConfigChange, changes_on_resume, planned_now
from pipeline.sweep.rows import UnitRecords, unit_records
from pipeline.sweep.schedules import ScheduleClosure, closure
from pipeline.sweep.start import SweepStart
from pipeline.sweep.worker import WorkerSettings, row_context


@dataclass(frozen=True)
class Prepared:
    """Validated inputs of a sweep; nothing has been sent yet."""

    cfg: RunConfig
    overrides: tuple[str, ...]
    resolved: dict[str, Any]
    definition: StudyDefinition
    study: Study
    finish: Callable[[Path, AnalysisConfig], Path]  # SweepStart.finish
    nothing_ran_cause: Callable[[Path], str]  # SweepStart.nothing_ran_cause
    layout: Layout
    resolution: PanelResolution
    run_dir: Path
    resuming: bool
    manifest: Manifest | None
    runners: Mapping[str, UnitRunner]  # config_id -> its unit runner, built once in the driver
    plan: pa.Table | None = None  # a resumed run's plan as found; a new run plans later
    changes: tuple[ConfigChange, ...] = ()  # a resume's config changes (resume_change.py)

    @property
    def simulated(self) -> bool:
        """Rows not answered by a model to these requests: sim, and replay (real recorded
        bytes, but replies to other requests)."""
        return self.resolution.kind in ("sim", "replay")


# Overrides that hold for one session only and are not recorded: a later resume must not
# inherit permission to change the config.
_SESSION_ONLY = ("resume=", "allow_config_change=")


def prepare(start: SweepStart) -> Prepared:
    """Validate everything the entry point handed down; a UserError before any request.

    `start` carries the study (resolved once by the CLI, never looked up here, and on a resume
    already checked to be the run's), the config composed once and, on a resume, the run's
    manifest."""
    resume_dir, manifest = start.resume_dir, start.manifest
    cfg, resolved, overrides = start.cfg, start.resolved, list(start.overrides)
    definition, study = start.definition, start.study
    changes: tuple[ConfigChange, ...] = ()
    plan: pa.Table | None = None
    panel = materialize(cfg)
    resolution = resolve(panel, load_panel_catalog(panel))
    if not resolution.included:
        raise RunDirError("no configuration of the panel passes its rules; see `pipeline panel`")
    kinds = study.panel_kinds
    if kinds is not None and resolution.kind not in kinds:
        raise RunDirError(
            f"study {definition.name} runs on panel kinds {', '.join(sorted(kinds))}, not "
            f"{resolution.kind} (panel {panel.name}); drop +panel to use its default"
        )
    check_secrets(resolution)
    # a runner that cannot be built fails here, not in an actor
    runners = {inc.config_id: study.runner(inc.endpoint) for inc in resolution.included}
    for inc in resolution.included:
        check_sampling(inc.endpoint, temperature=cfg.temperature)  # its declared range
    check_plan_size(  # arithmetic, before a unit is built (plan_bounds.py)
        configs=len(resolution.included),
        arms=len(study.arms()),
        groups=study.execution_groups([inc.endpoint for inc in resolution.included]),
        repeats=cfg.repeats,
        max_units=cfg.limits.max_units,
    )
    inputs = study.inputs
    if resume_dir is not None and manifest is not None:
        check_resume_compatible(
            manifest,
            config_fingerprint(resolved),
            inputs.digest,
            cfg.allow_config_change,
            new_config=resolved,
        )
        for name, data in inputs.files.items():
            stored = resume_dir / name
            if stored.exists() and stored.read_bytes() != data:
                raise RunDirError(
                    f"{stored} is not the input this run was made with; the run dir was altered"
                )
        plan = read_plan(resume_dir)
        assert plan is not None, "validate_run_dir checked plan.parquet"
        now = planned_now(study.arms(), panel.configs, resolution.included)
        changes = changes_on_resume(manifest, plan, resolved, now)  # refuses what alters units
        run_dir = resume_dir
    else:
        stamp = run_names.run_stamp()
        digest = f"-{inputs.digest[:8]}" if inputs.digest else ""
        run_dir = Path(cfg.out_dir) / f"{stamp}-{panel.name}-{inputs.label}{digest}"
    user_overrides = tuple(o for o in overrides if not o.startswith(_SESSION_ONLY))
    return Prepared(
        cfg=cfg,
        overrides=user_overrides,
        resolved=resolved,
        definition=definition,
        study=study,
        finish=start.finish,
        nothing_ran_cause=start.nothing_ran_cause,
        layout=layout_for(definition.row_columns, definition.tables),
        resolution=resolution,
        run_dir=run_dir,
        resuming=resume_dir is not None,
        manifest=manifest,
        runners=runners,
        plan=plan,
        changes=changes,
    )


class StopFlag:
    """SIGINT / SIGTERM ask for a graceful stop; a second signal stops at once.

    `signum` is the first signal received (None until then): the sweep exits 128 + signum.
    """

    def __init__(self) -> None:
        self.requested = False
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signum = signum
        print("stopping: finishing attempts in flight (signal again to abort)", file=sys.stderr)

    def install(self) -> None:
        """(Re)install the handlers. `ray.init` replaces SIGTERM's with its own `sys.exit(15)`,
        so the sweep installs them again after it; `restore` puts back what was there before
        the first install."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous.setdefault(sig, signal.signal(sig, self._handle))

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def publication_dates(resolution: PanelResolution) -> dict[str, str | None]:
    return {
        inc.config_id: str(inc.publication_date) if inc.publication_date else None
        for inc in resolution.included
    }


def worker_settings(
    p: Prepared, ep: EndpointConfig, dates: dict[str, str | None]
) -> WorkerSettings:
    cfg = p.cfg
    return WorkerSettings(
        endpoint=ep,
        study=p.study,
        publication_date=dates.get(ep.config_id),
        temperature=cfg.temperature,
        base_seed=cfg.seed,
        simulated=p.simulated,
        offline=p.resolution.kind == "offline",
        retry=cfg.retry,
        timeouts=cfg.timeouts,
        cache_dir=cache_dir(p),
        cache_ttl_s=ttl_seconds(cfg.cache.ttl) if cfg.cache.scope == "shared" else None,
        record_dir=cfg.endpoint.record,
    )


def cache_dir(p: Prepared) -> str | None:
    """The response cache's directory for this run (None: cache.scope=off)."""
    cache = p.cfg.cache
    if cache.scope == "off":
        return None
    if cache.scope == "run":
        return str(p.run_dir / RUN_CACHE_DIR)
    return str(Path(cache.dir).expanduser() if cache.dir else shared_cache_root())


def lost_records_builder(
    p: Prepared, settings: dict[str, WorkerSettings]
) -> Callable[[UnitSpec, str], UnitRecords]:
    """The records of an attempt whose worker died (`lost_unit`), around the shared columns."""

    def build(spec: UnitSpec, detail: str) -> UnitRecords:
        ctx = row_context(settings[spec.config_id], spec)
        now = datetime.now(UTC)
        result = lost_unit(p.definition.row_columns, p.study.lost_row(spec), detail)
        return unit_records(spec, ctx, result, now, now)

    return build


def _input_files(p: Prepared) -> list[Path]:
    from pipeline.config.load import conf_dir
    from pipeline.endpoints.catalog import catalog_dir

    files = sorted(conf_dir().rglob("*.yaml"))
    if p.resolution.catalog is not None:
        files.append(catalog_dir() / p.resolution.catalog)
    files += [p.run_dir / name for name in sorted(p.study.inputs.files)]
    return files


def new_manifest(p: Prepared) -> Manifest:
    manifest = Manifest.start(
        run_id=p.run_dir.name,
        config=p.resolved,
        config_fingerprint=config_fingerprint(p.resolved),
        study=p.definition.name,
        fixture_sha256=p.study.inputs.digest,
        catalog_sha256=p.resolution.catalog_sha256,
        provenance=provenance_lock(_input_files(p)),
    )
    excluded = [dataclasses.asdict(e) for e in p.resolution.excluded]
    return dataclasses.replace(
        manifest,
        extra={
            "overrides": list(p.overrides),
            "panel": p.resolution.panel,
            "panel_excluded": excluded,
            "simulated": p.simulated,
            "schedule": [schedule_closure(p).as_record()],
            "inputs": dict(p.study.inputs.record),
        },
        history=[session_entry(0, p.overrides, p.resolved)],
    )


def schedule_closure(p: Prepared) -> ScheduleClosure:
    """Whether this sweep's execution group closes its schedule (one group per sweep), per
    configuration and across the panel's configurations."""
    configs = len(p.resolution.included)
    return closure(p.cfg.schedule, len(p.study.arms()), p.cfg.repeats, max(1, configs))


def plan_specs(p: Prepared) -> list[UnitSpec]:
    """Every unit the config plans (on a resume that extends the run, old and new)."""
    return list(_planned(p))


def _planned(p: Prepared) -> Iterator[UnitSpec]:
    cfg = p.cfg
    configs = [(inc.config_id, inc.model, inc.family) for inc in p.resolution.included]
    arms = list(p.study.arms())
    groups = p.study.execution_groups([inc.endpoint for inc in p.resolution.included])
    return iter_plan(
        p.run_dir.name, configs, arms, cfg.repeats, cfg.execution_group, cfg.schedule, groups=groups
    )


def plan_rows(
    p: Prepared,
    not_run: dict[tuple[str, str], str],
    should_stop: Callable[[], bool] | None = None,
) -> pa.Table:
    """The plan table, built in chunks from the units as they are generated; `should_stop`
    (a signal) ends it with PlanStopped (pipeline/sweep/plan_bounds.py)."""
    return plan_table(_planned(p), not_run, should_stop=should_stop)


def prepare_run_dir(p: Prepared) -> Prepared:
    """Clean a resumed run dir, or claim a new one (its name may gain a `-N`: run_names)."""
    if p.resuming:
        orphans = stop_orphans(p.run_dir)
        if orphans:
            stopped = f"resume: stopped {len(orphans)} orphaned process(es) of an earlier session"
            print(f"{stopped} (Ray, local servers)", file=sys.stderr)
        removed = clean_temporaries(p.run_dir, p.layout) + clean_uncommitted(p.run_dir, p.layout)
        if removed:
            print(f"resume: removed {len(removed)} uncommitted file(s)", file=sys.stderr)
        return p
    claimed = dataclasses.replace(p, run_dir=run_names.claim_run_dir(p.run_dir))
    for name, data in claimed.study.inputs.files.items():
        (claimed.run_dir / name).write_bytes(data)
    return claimed
