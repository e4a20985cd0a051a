"""The only place the jobs touch the disk: reads through `pipeline.store`, atomic writes.

Decisions:
- Run tables are read only through the store (`part_paths`, `scan`, `read_plan`,
  `load_manifest`), so the jobs see exactly what the sweep committed: a killed writer's
  `.tmp-*` parts are never read, every part's footer is checked (a torn or foreign part is the
  store's RunDirError naming the file and the fix), and the store's schemas are the one source
  of column types. A table without committed parts is "absent" (None).
- Jobs name the columns they need and only widen them to analysis dtypes (integers to Int64,
  jobs/carrier/columns.py) after the scan.
- The analysis settings of a run are its manifest's `config.analysis`, read through the config
  schema (`config_from_manifest`); a run without a manifest gets the defaults.
- Outputs go to a temporary name in the same directory and are renamed into place, so a
  killed analysis never leaves a torn file.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from pipeline.config.load import config_from_manifest
from pipeline.config.schema import AnalysisConfig
from pipeline.store import Layout, RunDirError, load_manifest, part_paths, read_plan, scan
from pipeline.store.reader import MANIFEST_FILE

ANALYSIS_DIR = "analysis"


class SavableFigure(Protocol):
    def savefig(
        self,
        fname: str,
        *,
        format: str,
        dpi: int,
        bbox_inches: str,
        metadata: dict[str, str],
    ) -> None: ...

    def get_label(self) -> object: ...


def require_run_dir(run_dir: Path) -> Path:
    if not run_dir.is_dir():
        raise RunDirError(f"run directory not found: {run_dir}")
    return run_dir


def widen(frame: pl.LazyFrame, columns: Mapping[str, pl.DataType]) -> pl.LazyFrame:
    """Exactly `columns` of `frame`, cast to the analysis dtypes."""
    return frame.select(pl.col(name).cast(dtype) for name, dtype in columns.items())


def scan_table(
    run_dir: Path, table: str, columns: Mapping[str, pl.DataType], layout: Layout
) -> pl.LazyFrame | None:
    """Lazy scan of a run table's committed parts with `columns` widened; None if absent."""
    if not part_paths(run_dir, table, layout):
        return None
    return widen(scan(run_dir, table, layout), columns)


def plan_table(run_dir: Path) -> pl.DataFrame | None:
    """RUN_DIR/plan.parquet as stored, or None when the run has no plan."""
    plan = read_plan(run_dir)
    if plan is None:
        return None
    frame = pl.from_arrow(plan)
    assert isinstance(frame, pl.DataFrame)
    return frame


def scan_plan(run_dir: Path, columns: Mapping[str, pl.DataType]) -> pl.LazyFrame | None:
    plan = plan_table(run_dir)
    return None if plan is None else widen(plan.lazy(), columns)


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The run's manifest (validated by the store) as JSON; None when the run has none."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return None
    return load_manifest(run_dir).to_json()


def manifest_analysis(run_dir: Path) -> AnalysisConfig:
    """The run's `config.analysis` (contrasts, bootstrap); the defaults without a manifest."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return AnalysisConfig()
    return config_from_manifest(load_manifest(run_dir).config).analysis


def analysis_dir(run_dir: Path) -> Path:
    return run_dir / ANALYSIS_DIR


def require_outputs(run_dir: Path, names: Sequence[str]) -> Path:
    """RUN_DIR/analysis/ when it holds analysis/NAME.parquet for every name; a one-line
    RunDirError naming the first missing one otherwise: a report is drawn from the outputs,
    it never analyses."""
    out = analysis_dir(run_dir)
    missing = [name for name in names if not (out / f"{name}.parquet").is_file()]
    if missing:
        raise RunDirError(
            f"{out} has no {missing[0]}.parquet; run `python -m pipeline analyze {run_dir}`"
        )
    return out


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator[Path]:
    """A temporary name to write, renamed to `path` on success; on a failed write (a full
    disk) the temporary is removed and the error names `path`, not the temporary."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def write_parquet(frame: pl.DataFrame, path: Path) -> Path:
    with _atomic(path) as temporary:
        frame.write_parquet(temporary)
    return path


def write_text(text: str, path: Path) -> Path:
    with _atomic(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


def write_json(payload: object, path: Path) -> Path:
    return write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", path)


def write_png(figure: SavableFigure, path: Path) -> Path:
    """A tight bounding box, so no axis label is clipped; the figure's label, if any (the
    SIMULATED description, jobs/figures_common.py), becomes the PNG's Description."""
    label = figure.get_label()
    metadata = {"Description": str(label)} if label else {}
    with _atomic(path) as temporary:
        figure.savefig(
            str(temporary), format="png", dpi=120, bbox_inches="tight", metadata=metadata
        )
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


# The jobs' own outputs (RUN_DIR/analysis/), read back by the report; not run tables.
def read_parquet(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.is_file() else None


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
