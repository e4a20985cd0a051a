"""The reasoning-trace study's tables and inputs as the jobs read them: through pipeline.store.

The run's inputs sit in the run directory as the sweep wrote them (`StudyInputs.files`):
`chat_templates.json` (name -> {sha256, source, text}: the templates the offline matrix
renders, shipped and the user's) and `trace_items.json` (the sampled items and the real
sample's band counts).

A template file is code the analysis runs, so before anything renders it is checked against
the manifest's provenance lock (the SHA-256 of the whole file, taken when the sweep wrote it):
a hash stored beside each text can be recomputed by whoever edits the file, the lock cannot
without editing the manifest too. A file that is not in the lock, or differs from it, or a
text that no longer matches its own SHA-256, is a RunDirError; a run without a manifest (a
bare directory of parts) has no lock to check and relies on the per-text hashes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from pipeline import studies
from pipeline.store import RunDirError, scan
from pipeline.store.reader import part_paths
from pipeline.traces.study import ITEMS_FILE, TEMPLATES_FILE

UNIT_COLUMNS = ("row_id", "config_id", "arm")


def load(run_dir: Path, table: str) -> pl.DataFrame:
    """Every committed part of `table` (temporaries never read); empty with its columns."""
    layout = studies.layout(studies.definition("traces"))
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


def _check_lock(run_dir: Path, path: Path) -> None:
    """The file's SHA-256 against the manifest's provenance lock (see the module docstring)."""
    if not (run_dir / "manifest.json").is_file():
        return
    from pipeline.store import load_manifest

    lock = load_manifest(run_dir).provenance
    # keyed by the path the sweep wrote it to: the run dir may since have moved or been renamed
    locked = [d for key, d in lock.items() if key.rsplit("/", 1)[-1] == path.name]
    if not locked:
        raise RunDirError(
            f"{path} is not in the manifest's provenance lock; the run dir was altered"
        )
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual not in locked:
        raise RunDirError(
            f"{path} differs from the manifest's provenance lock (sha256 {actual[:12]}, locked "
            f"{locked[0][:12]}); the run dir was altered: re-run the sweep"
        )


def read_template_entries(run_dir: Path) -> dict[str, dict[str, str]] | None:
    """name -> {text, source} of the templates the run recorded; None without the file."""
    path = run_dir / TEMPLATES_FILE
    if not path.is_file():
        return None
    _check_lock(run_dir, path)
    entries: dict[str, dict[str, str]] = {}
    for name, entry in sorted(_json(path).items()):
        text = str(entry["text"])
        if hashlib.sha256(text.encode()).hexdigest() != entry["sha256"]:
            raise RunDirError(f"{path}: template {name!r} does not match its SHA-256; re-run")
        entries[name] = {"text": text, "source": str(entry.get("source", "shipped"))}
    return entries


def read_templates(run_dir: Path) -> dict[str, str] | None:
    """The templates the run recorded (name -> text); None without the file."""
    entries = read_template_entries(run_dir)
    return None if entries is None else {n: e["text"] for n, e in entries.items()}


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
