"""The sweep driver: config -> panel -> fixture -> servers -> probes -> plan -> coordinator.

Everything that can be wrong with the input (config, panel, keys, run dir, fixture) is
checked before the first request. The run directory is self-contained: it holds its fixture,
plan, parts and a manifest that records the overrides, so `resume=RUN_DIR` alone continues it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.fixture import Fixture, fixture_json, generate
from pipeline.config import RunConfig, compose_dict, load
from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.panels import (
    PanelResolution,
    check_secrets,
    load_panel_catalog,
    materialize,
    resolve,
)
from pipeline.store.manifest import (
    Manifest,
    RunStatus,
    TrajectoryKey,
    load_manifest,
    outcome_counts,
    write_manifest,
)
from pipeline.store.parts import clean_temporaries, clean_uncommitted, write_plan
from pipeline.store.provenance import provenance_lock, sha256_file
from pipeline.store.reader import RunDirError, read_plan, read_table, validate_run_dir
from pipeline.sweep.orphans import stop_orphans
from pipeline.sweep.plan import (
    TrajectorySpec,
    build_plan,
    dispatch_order,
    plan_table,
    specs_from_plan,
)
from pipeline.sweep.resume import (
    check_resume_compatible,
    config_fingerprint,
    resume_diff,
    specs_to_run,
)
from pipeline.sweep.rows import RowContext, TrajectoryRecords, lost_worker_row
from pipeline.sweep.worker import WorkerSettings, trajectory_seed

FIXTURE_FILE = "fixture.json"


@dataclass(frozen=True)
class Prepared:
    """Validated inputs of a sweep; nothing has been sent yet."""

    cfg: RunConfig
    overrides: tuple[str, ...]
    resolved: dict[str, Any]
    arms: dict[str, Arm]
    resolution: PanelResolution
    fixture: Fixture
    fixture_bytes: bytes
    fixture_sha256: str
    run_dir: Path
    resuming: bool
    manifest: Manifest | None


def _resume_dir(overrides: Sequence[str]) -> Path | None:
    for item in overrides:
        if item.startswith("resume=") and item.split("=", 1)[1] not in ("", "null"):
            return Path(item.split("=", 1)[1])
    return None


def prepare(overrides: Sequence[str]) -> Prepared:
    """Compose and validate everything; raise a UserError before any request on bad input."""
    resume_dir = _resume_dir(overrides)
    manifest = None
    if resume_dir is not None:
        validate_run_dir(resume_dir)
        manifest = load_manifest(resume_dir)
        recorded = [str(o) for o in manifest.extra.get("overrides", [])]
        overrides = [*recorded, *[o for o in overrides if not o.startswith("resume=")]]
        overrides.append(f"resume={resume_dir}")
    cfg = load(overrides)
    resolved = compose_dict(overrides)
    arms = build_arms(cfg.arms)
    panel = materialize(cfg)
    resolution = resolve(panel, load_panel_catalog(panel))
    if not resolution.included:
        raise RunDirError("no configuration of the panel passes its rules; see `pipeline panel`")
    check_secrets(resolution)
    fixture = generate(cfg.scenario, cfg.fixture_seed)
    fixture_bytes = fixture_json(fixture)
    fixture_sha = hashlib.sha256(fixture_bytes).hexdigest()
    if resume_dir is not None and manifest is not None:
        check_resume_compatible(
            manifest,
            config_fingerprint(resolved),
            fixture_sha,
            cfg.allow_config_change,
            new_config=resolved,
        )
        stored = resume_dir / FIXTURE_FILE
        if stored.exists() and sha256_file(stored) != manifest.fixture_sha256:
            raise RunDirError(
                f"{stored} does not match the SHA-256 in its manifest; the run dir was altered"
            )
        run_dir = resume_dir
    else:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        name = f"{stamp}-{panel.name}-{cfg.scenario.name}-{fixture_sha[:8]}"
        run_dir = Path(cfg.out_dir) / name
    user_overrides = tuple(o for o in overrides if not o.startswith("resume="))
    return Prepared(
        cfg,
        user_overrides,
        resolved,
        arms,
        resolution,
        fixture,
        fixture_bytes,
        fixture_sha,
        run_dir,
        resume_dir is not None,
        manifest,
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
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

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
        arms=dict(cfg.arms),
        fixture_json=p.fixture_bytes,
        fixture_sha256=p.fixture_sha256,
        scenario=cfg.scenario.name,
        publication_date=dates.get(ep.config_id),
        temperature=cfg.temperature,
        base_seed=cfg.seed,
        simulated=p.resolution.kind == "sim",
        retry=cfg.retry,
        timeouts=cfg.timeouts,
    )


def lost_records_builder(
    p: Prepared, settings: dict[str, WorkerSettings]
) -> Callable[[TrajectorySpec, str], TrajectoryRecords]:
    def build(spec: TrajectorySpec, detail: str) -> TrajectoryRecords:
        s = settings[spec.config_id]
        arm = p.arms[spec.arm]
        ctx = RowContext(
            endpoint=s.endpoint,
            publication_date=s.publication_date,
            scenario=s.scenario,
            fixture_sha256=s.fixture_sha256,
            system_prompt_sha256=arm.system_prompt_sha256,
            declared_capacity_chars=arm.declared_capacity_chars,
            seed=trajectory_seed(s.base_seed, spec),
            simulated=s.simulated,
        )
        return lost_worker_row(spec, ctx, detail, datetime.now(UTC))

    return build


def _input_files(p: Prepared) -> list[Path]:
    from pipeline.config.load import conf_dir
    from pipeline.endpoints.catalog import catalog_dir

    files = sorted(conf_dir().rglob("*.yaml"))
    if p.resolution.catalog is not None:
        files.append(catalog_dir() / p.resolution.catalog)
    files.append(p.run_dir / FIXTURE_FILE)
    return files


def new_manifest(p: Prepared) -> Manifest:
    manifest = Manifest.start(
        run_id=p.run_dir.name,
        config=p.resolved,
        config_fingerprint=config_fingerprint(p.resolved),
        fixture_sha256=p.fixture_sha256,
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
            "simulated": p.resolution.kind == "sim",
        },
    )


def plan_rows(p: Prepared, not_run: dict[tuple[str, str], str]) -> tuple[list[TrajectorySpec], Any]:
    cfg = p.cfg
    configs = [(inc.config_id, inc.model, inc.family) for inc in p.resolution.included]
    specs = build_plan(
        p.run_dir.name, configs, sorted(p.arms), cfg.repeats, cfg.execution_group, cfg.schedule
    )
    return specs, plan_table(specs, not_run)


def owed_specs(p: Prepared) -> list[TrajectorySpec]:
    plan = read_plan(p.run_dir)
    assert plan is not None
    rows = read_table(p.run_dir, "rows")
    state = resume_diff(plan, rows, p.cfg.retry.trajectory_attempts)
    return dispatch_order(specs_to_run(specs_from_plan(plan), state))


def mark_done(plan: pa.Table, rows: pa.Table, attempt_limit: int) -> pa.Table:
    """The plan with status `done` for every key whose final attempt is final."""
    done = set(resume_diff(plan, rows, attempt_limit).done)
    keys = zip(
        *(plan.column(c).to_pylist() for c in ("config_id", "arm", "execution_group", "repeat")),
        strict=True,
    )
    statuses = plan.column("status").to_pylist()
    updated = [
        "done" if TrajectoryKey(*k) in done else s for k, s in zip(keys, statuses, strict=True)
    ]
    index = plan.schema.get_field_index("status")
    return plan.set_column(index, "status", pa.array(updated, pa.string()))


def finish(p: Prepared, manifest: Manifest, status: RunStatus, extra: dict[str, Any]) -> Manifest:
    plan = read_plan(p.run_dir)
    assert plan is not None
    rows = read_table(p.run_dir, "rows")
    plan = mark_done(plan, rows, p.cfg.retry.trajectory_attempts)
    write_plan(p.run_dir, plan)
    unfinished = None if status in ("completed", "nothing_ran") else status
    counts = outcome_counts(plan, rows, unfinished_as=unfinished)
    closed = manifest.finish(status, counts)
    closed = dataclasses.replace(closed, extra={**closed.extra, **extra})
    write_manifest(p.run_dir, closed)
    return closed


def prepare_run_dir(p: Prepared) -> None:
    if p.resuming:
        orphans = stop_orphans(p.run_dir)
        if orphans:
            print(f"resume: stopped {len(orphans)} orphaned Ray process(es)", file=sys.stderr)
        removed = clean_temporaries(p.run_dir) + clean_uncommitted(p.run_dir)
        if removed:
            print(f"resume: removed {len(removed)} uncommitted file(s)", file=sys.stderr)
        return
    if p.run_dir.exists():
        raise RunDirError(f"{p.run_dir} already exists; choose another out_dir")
    p.run_dir.mkdir(parents=True)
    (p.run_dir / FIXTURE_FILE).write_bytes(p.fixture_bytes)


def write_initial_plan(p: Prepared, not_run: dict[tuple[str, str], str]) -> None:
    _, table = plan_rows(p, not_run)
    write_plan(p.run_dir, table)
