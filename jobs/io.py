"""The only place the jobs touch the disk: lazy scans of a run directory and atomic writes.

Decisions:
- A table is every `RUN_DIR/TABLE/*.parquet` part, scanned lazily in name order. A missing
  table directory, or one without parts, is "absent" (None); only `rows/` is required.
- Jobs ask for the columns they need with analysis dtypes (integers widened to Int64);
  parts that lack a column get it as nulls, and extra columns are ignored, so synthetic and
  older run directories load. A part that lacks a *required* column is a UserError.
- Outputs go to a temporary name in the same directory and are renamed into place, so a
  killed analysis never leaves a torn file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from pipeline.usererror import UserError

TABLE_NAMES = ("rows", "checks", "folds", "events")
ANALYSIS_DIR = "analysis"


class RunDirError(UserError):
    """The run directory is missing, or its tables cannot serve the analysis."""


class SavableFigure(Protocol):
    def savefig(self, fname: str, *, format: str, dpi: int) -> None: ...


def require_run_dir(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        raise RunDirError(f"run directory not found: {run_dir}")
    return run_dir


def table_parts(run_dir: Path, table: str) -> list[Path]:
    directory = run_dir / table
    return sorted(directory.glob("*.parquet")) if directory.is_dir() else []


def _check_required(parts: Sequence[Path], table: str, required: Sequence[str]) -> None:
    for part in parts:
        present = set(pl.read_parquet_schema(part))
        missing = [column for column in required if column not in present]
        if missing:
            raise RunDirError(f"{table} part {part.name} lacks required columns: {missing}")


def scan_table(
    run_dir: Path,
    table: str,
    columns: Mapping[str, pl.DataType],
    *,
    required: Sequence[str] = (),
) -> pl.LazyFrame | None:
    """Lazy scan of a run table with exactly `columns` (absent ones as nulls); None if absent."""
    parts = table_parts(run_dir, table)
    if not parts:
        return None
    _check_required(parts, table, required)
    return _scan_parts(parts, columns)


def scan_plan(run_dir: Path, columns: Mapping[str, pl.DataType]) -> pl.LazyFrame | None:
    path = run_dir / "plan.parquet"
    return _scan_parts([path], columns) if path.is_file() else None


def _scan_parts(parts: Sequence[Path], columns: Mapping[str, pl.DataType]) -> pl.LazyFrame:
    return pl.scan_parquet(
        list(parts),
        schema=dict(columns),
        missing_columns="insert",
        extra_columns="ignore",
        cast_options=pl.ScanCastOptions(integer_cast="upcast", float_cast="upcast"),
    )


def scan_raw(run_dir: Path) -> dict[str, pl.LazyFrame]:
    """Every present table as stored (for ad-hoc SQL): rows, checks, folds, events, plan."""
    frames: dict[str, pl.LazyFrame] = {}
    for table in TABLE_NAMES:
        parts = table_parts(run_dir, table)
        if parts:
            frames[table] = pl.scan_parquet(parts, missing_columns="insert", extra_columns="ignore")
    plan = run_dir / "plan.parquet"
    if plan.is_file():
        frames["plan"] = pl.scan_parquet(plan)
    return frames


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "manifest.json"
    if not path.is_file():
        return None
    loaded = json.loads(path.read_text(encoding="utf-8"))
    return loaded if isinstance(loaded, dict) else None


def analysis_dir(run_dir: Path) -> Path:
    return run_dir / ANALYSIS_DIR


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def write_parquet(frame: pl.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    frame.write_parquet(temporary)
    os.replace(temporary, path)
    return path


def write_text(text: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def write_json(payload: object, path: Path) -> Path:
    return write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", path)


def write_png(figure: SavableFigure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    figure.savefig(str(temporary), format="png", dpi=120)
    os.replace(temporary, path)
    return path


CONTRAST_OUTPUT_PATTERNS = (
    "paired_*.parquet",
    "threshold_*.parquet",
    "panel_*.json",
    "forest_*.png",
    "fill_*.png",
)


def remove_stale_contrast_outputs(out: Path, keep: Sequence[str]) -> None:
    """Deletes per-contrast outputs of an earlier analysis for contrasts not run this time,
    so a re-run with fewer contrasts leaves no stale panel behind."""
    for pattern in CONTRAST_OUTPUT_PATTERNS:
        prefix, suffix = pattern.split("*")
        for path in out.glob(pattern):
            if path.name[len(prefix) : -len(suffix)] not in keep:
                path.unlink()


def read_parquet(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.is_file() else None


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
