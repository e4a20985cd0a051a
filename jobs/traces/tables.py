"""The reasoning-trace study's tables and inputs as the jobs read them: through pipeline.store,
in the layout the caller hands down (the study's definition; the jobs never look one up).

The run's inputs sit in the run directory as the sweep wrote them (`StudyInputs.files`):
`chat_templates.json` (name -> {sha256, text}: the shipped templates the offline matrix renders)
and `trace_items.json` (the sampled items and the real sample's band counts). A template whose
text no longer matches its recorded SHA-256 means the run directory was altered: RunDirError.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.store import Layout, RunDirError, scan
from pipeline.store.reader import part_paths
from pipeline.traces.study import ITEMS_FILE, TEMPLATES_FILE

UNIT_COLUMNS = ("row_id", "config_id", "arm")


def load(run_dir: Path, table: str, layout: Layout) -> pl.DataFrame:
    """Every committed part of `table` (temporaries never read); empty with its columns."""
    if table != "rows" and not part_paths(run_dir, "rows", layout):
        raise RunDirError(f"{run_dir} has no rows/ parts: nothing to analyze")
    return scan(run_dir, table, layout).collect()


def final_units(rows: pl.DataFrame) -> pl.DataFrame:
    """The final attempt of each unit, valid ones only."""
    from pipeline.store.final import final_rows

    return final_rows(rows.lazy()).filter(pl.col("valid"))


def of_units(table: pl.DataFrame, units: pl.DataFrame) -> pl.DataFrame:
    """`table`'s records of the final valid units, with the unit's config_id and arm."""
    return table.join(units.select(UNIT_COLUMNS), on="row_id")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path} is not JSON ({exc.msg}); the run dir was altered") from exc


def read_templates(run_dir: Path) -> dict[str, str] | None:
    """The shipped templates the run recorded (name -> text); None without the file."""
    path = run_dir / TEMPLATES_FILE
    if not path.is_file():
        return None
    templates: dict[str, str] = {}
    for name, entry in sorted(_json(path).items()):
        text = str(entry["text"])
        if hashlib.sha256(text.encode()).hexdigest() != entry["sha256"]:
            raise RunDirError(f"{path}: template {name!r} does not match its SHA-256; re-run")
        templates[name] = text
    return templates


ITEM_SCHEMA = {
    "id": pl.String,
    "band": pl.String,
    "source": pl.String,
    "synthetic": pl.Boolean,
    "provenance": pl.String,
    "chars": pl.Int64,
}


def read_items(run_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The run's items (without their text) and the real sample's band counts; None if absent."""
    path = run_dir / ITEMS_FILE
    if not path.is_file():
        return None
    data = _json(path)
    items = pl.DataFrame(
        [{k: item[k] for k in ITEM_SCHEMA} for item in data["items"]], schema=ITEM_SCHEMA
    )
    counts = pl.DataFrame(
        data["band_counts"], schema={"band": pl.String, "available": pl.Int64, "taken": pl.Int64}
    )
    return items, counts
