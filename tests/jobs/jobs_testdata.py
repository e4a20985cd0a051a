"""Builders of small hand-made run directories for the job tests.

Rows, checks and plan entries are given as dicts with only the columns a test cares about;
every other column of the carrier's layout (pipeline.studies.layout) is filled with a neutral
default or null, and parts are written with the layout's Arrow schema, as the sweep writes
them. A manifest, when asked for, is a valid one (pipeline.store.Manifest) with the given
fields in place of the defaults.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import studies
from pipeline.config.schema import AnalysisConfig, BootstrapConfig
from pipeline.store import Manifest, schemas

LAYOUT = studies.layout(studies.definition("carrier"))
DEFAULT_CONTRASTS = AnalysisConfig().contrasts

ROW_DEFAULTS: dict[str, Any] = {
    "run_id": "run-test",
    "model": None,
    "family": None,
    "attempt": 1,
    "simulated": False,
    "valid": True,
    "invalid_reason": None,
    "retryable": False,
    "checks_total": 14,
    "parse_failures": 0,
}


def row(
    config_id: str, arm: str, repeat: int, recall_checks: int | None, **extra: Any
) -> dict[str, Any]:
    """One attempt row; `recall_checks` checks passed of `checks_total` (default 14); None
    means no recall (e.g. an invalid attempt)."""
    record: dict[str, Any] = {
        **ROW_DEFAULTS,
        "config_id": config_id,
        "arm": arm,
        "execution_group": 0,
        "repeat": repeat,
        "checks_passed": recall_checks,
    }
    record.update(extra)
    if "recall" not in extra:
        total = record["checks_total"]
        record["recall"] = None if recall_checks is None else recall_checks / total
    record.setdefault(
        "row_id", f"{config_id}|{arm}|{record['execution_group']}|{repeat}|{record['attempt']}"
    )
    return record


def settings(
    contrasts: Sequence[str] = DEFAULT_CONTRASTS, *, seed: int = 166, resamples: int = 10
) -> AnalysisConfig:
    """Analysis settings for a test (few resamples: the bootstrap is not what is tested)."""
    return AnalysisConfig(tuple(contrasts), BootstrapConfig(seed=seed, resamples=resamples))


def analyze_and_report(run_dir: Path, analysis: AnalysisConfig | None = None) -> Path:
    """What a sweep does at its end: the carrier's analysis, then its report, once each."""
    return studies.analyze_and_report(
        studies.definition("carrier"), run_dir, analysis or settings()
    )


def manifest_json(**fields: Any) -> dict[str, Any]:
    """A valid manifest (a completed carrier run) with `fields` in place of the defaults."""
    base = Manifest(
        run_id="run-test",
        config={},
        config_fingerprint="0" * 64,
        started_at="2026-01-01T00:00:00Z",
        study="carrier",
        status="completed",
    ).to_json()
    return {**base, **fields}


def write_manifest(run_dir: Path, **fields: Any) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "manifest.json"
    path.write_text(json.dumps(manifest_json(**fields)), encoding="utf-8")
    return path


def _table(records: Iterable[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    records = list(records)
    columns = {name: [r.get(name) for r in records] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def write_run(
    run_dir: Path,
    rows: Iterable[Mapping[str, Any]],
    *,
    checks: Iterable[Mapping[str, Any]] | None = None,
    plan: Iterable[Mapping[str, Any]] | None = None,
    manifest: Mapping[str, Any] | None = None,
    parts: int = 1,
) -> Path:
    """Writes rows (split over `parts` files) and the optional tables; returns run_dir.

    `manifest`: fields of a valid manifest (see `manifest_json`); None writes no manifest."""
    records = list(rows)
    (run_dir / "rows").mkdir(parents=True, exist_ok=True)
    size = max(1, -(-len(records) // parts))
    for index in range(parts):
        chunk = records[index * size : (index + 1) * size]
        if chunk or index == 0:
            pq.write_table(
                _table(chunk, LAYOUT.schema("rows")),
                run_dir / "rows" / f"part-{index:04d}.parquet",
            )
    if checks is not None:
        (run_dir / "checks").mkdir(exist_ok=True)
        check_records = [{"run_id": "run-test", **c} for c in checks]
        pq.write_table(
            _table(check_records, LAYOUT.schema("checks")), run_dir / "checks" / "part-0000.parquet"
        )
    if plan is not None:
        plan_records = [
            {"run_id": "run-test", "execution_group": 0, "status": "done", **p} for p in plan
        ]
        pq.write_table(_table(plan_records, schemas.PLAN), run_dir / "plan.parquet")
    if manifest is not None:
        write_manifest(run_dir, **manifest)
    return run_dir
