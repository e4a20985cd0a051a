"""The tool-output study's tables as the jobs read them: through pipeline.store, in the layout
the caller hands down (the study's definition; the jobs never look a study up)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.store import Layout, RunDirError, scan
from pipeline.store.reader import part_paths


def load(run_dir: Path, table: str, layout: Layout) -> pl.DataFrame:
    """Every committed part of `table` (temporaries never read); empty with its columns."""
    if table != "rows" and not part_paths(run_dir, "rows", layout):
        raise RunDirError(f"{run_dir} has no rows/ parts: nothing to analyze")
    return scan(run_dir, table, layout).collect()


def scan_lazy(run_dir: Path, table: str, layout: Layout) -> pl.LazyFrame:
    """`table` as a lazy scan: a per-request table (turns, decisions) is only ever aggregated,
    so the analysis never holds all of it (issue 20, P8b: millions of turns at corpus scale)."""
    if not part_paths(run_dir, "rows", layout):
        raise RunDirError(f"{run_dir} has no rows/ parts: nothing to analyze")
    return scan(run_dir, table, layout)


def final_units(rows: pl.DataFrame) -> pl.DataFrame:
    """The final attempt of each unit, valid ones only (a replay unit is never retried twice)."""
    from pipeline.store.final import final_rows

    return final_rows(rows.lazy()).filter(pl.col("valid"))
