"""The tool-output study's tables as the jobs read them: through pipeline.store, in the layout
the caller hands down (the study's definition; the jobs never look a study up)."""

from __future__ import annotations

from collections.abc import Callable
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


def by_unit(
    frame: pl.DataFrame | pl.LazyFrame,
    rows: pl.DataFrame,
    aggregate: Callable[[pl.LazyFrame], pl.LazyFrame],
) -> pl.DataFrame:
    """`aggregate` (one output row per configuration and policy) over one (configuration,
    policy) of `frame` at a time, the results stacked in key order.

    A median or a mode needs all of its group's values at once; over a whole lazy scan that
    is every unit's decisions together (tens of millions at corpus scale). Filtered to one
    unit's row_ids, the scan reads only that unit's row groups (parts are sorted by row_id,
    pipeline/store/parts.py), so the analysis holds one unit's records at a time."""
    lazy = frame.lazy()
    parts = []
    for _key, unit in rows.group_by("config_id", "arm", maintain_order=True):
        ids = unit["row_id"].to_list()
        only = pl.col("row_id") == ids[0] if len(ids) == 1 else pl.col("row_id").is_in(ids)
        parts.append(aggregate(lazy.filter(only)).collect(engine="streaming"))
    if not parts:
        return aggregate(lazy).collect()
    return pl.concat(parts, how="vertical_relaxed").sort("config_id", "policy")


def final_units(rows: pl.DataFrame) -> pl.DataFrame:
    """The final attempt of each unit, valid ones only (a replay unit is never retried twice)."""
    from pipeline.store.final import final_rows

    return final_rows(rows.lazy()).filter(pl.col("valid"))
