"""The sweep driver: start -> panel -> servers -> probes -> plan -> coordinator.

The study arrives resolved (SweepStart, from the CLI): the engine never looks one up.

Everything that can be wrong with the input (config, the study's node and inputs, panel, keys,
run dir) is checked before the first request, before any server or Ray starts. The run
directory is self-contained: it holds the study's inputs (carrier: fixture.json), plan, parts
and a manifest that records the overrides, so `resume=RUN_DIR` alone continues it.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa

from pipeline.config import RunConfig
from pipeline.config.schema import EndpointConfig, ttl_seconds
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
from pipeline.study import AnalysedStudy, Study, UnitSpec
from pipeline.sweep import run_names
from pipeline.sweep.history import session_entry
from pipeline.sweep.orphans import stop_orphans
from pipeline.sweep.plan import iter_plan, plan_table
from pipeline.sweep.plan_bounds import check_plan_size
from pipeline.sweep.response_cache import RUN_CACHE_DIR, shared_cache_root
from pipeline.sweep.resume import check_resume_compatible, config_fingerprint
from pipeline.sweep.resume_change import ConfigChange, changes_on_resume, planned_now
from pipeline.sweep.rows import RowContext, UnitRecords, unit_records
from pipeline.sweep.schedules import ScheduleClosure, closure
from pipeline.sweep.start import SweepStart
from pipeline.sweep.worker import WorkerSettings, trajectory_seed


@dataclass(frozen=True)
class Prepared:
    """Validated inputs of a sweep; nothing has been sent yet."""

    cfg: RunConfig
    overrides: tuple[str, ...]
    resolved: dict[str, Any]
    definition: AnalysedStudy
    study: Study
    layout: Layout
    resolution: PanelResolution
    run_dir: Path
    resuming: bool
    manifest: Manifest | None
    changes: tuple[ConfigChange, ...] = ()  # a resume's config changes (resume_change.py)

    @property
    def simulated(self) -> bool:
        """Rows not answered by a model to these requests: sim, and replay (real recorded
        bytes, but replies to other requests)."""
        return self.resolution.kind in ("sim", "replay")


def resume_dir_of(overrides: Sequence[str]) -> Path | None:
    for item in overrides:
        if item.startswith("resume=") and item.split("=", 1)[1] not in ("", "null"):
            return Path(item.split("=", 1)[1])
    return None


# Overrides that hold for one session only and are not recorded: a later resume must not
# inherit permission to change the config.
_SESSION_ONLY = ("resume=", "allow_config_change=")


def prepare(start: SweepStart) -> Prepared:
    """Validate everything the entry point handed down; a UserError before any request.

    `start` carries the study (resolved once by the CLI, never looked up here), the config
    composed once and, on a resume, the run's manifest."""
    resume_dir, manifest = start.resume_dir, start.manifest
    cfg, resolved, overrides = start.cfg, start.resolved, list(start.overrides)
    definition, study = start.definition, start.study
    changes: tuple[ConfigChange, ...] = ()
    if manifest is not None and manifest.study != definition.name:
        raise RunDirError(f"resume cannot change study: {manifest.study} -> {definition.name}")
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
    for inc in resolution.included:  # a runner that cannot be built fails here, not in an actor
        study.runner(inc.endpoint)
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
        cfg,
        user_overrides,
        resolved,
        definition,
        study,
        layout_for(definition.row_columns, definition.tables),
        resolution,
        run_dir,
        resume_dir is not None,
        manifest,
        changes,
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
    """The records of an attempt whose worker died: the study's, around the shared columns."""

    def build(spec: UnitSpec, detail: str) -> UnitRecords:
        s = settings[spec.config_id]
        ctx = RowContext(
            endpoint=s.endpoint,
            publication_date=s.publication_date,
            seed=trajectory_seed(s.base_seed, spec),
            simulated=s.simulated,
        )
        now = datetime.now(UTC)
        return unit_records(spec, ctx, p.study.lost_unit(spec, detail), now, now)

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
