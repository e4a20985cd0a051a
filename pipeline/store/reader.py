"""Read a run directory's tables, and refuse a corrupt one with a message that says what to do.

Validation reads only Parquet footers (``pyarrow.parquet.read_metadata``): a Parquet file ends
with its footer and the magic bytes ``PAR1``, so a file truncated anywhere (the failure a kill
mid-write produces) has no valid footer and is caught without reading any data page. A part
whose data pages are damaged behind an intact footer is caught when the table is read.
Temporary files (``.tmp-*``) of a killed writer are never read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.run_dir_error import RunDirError
from pipeline.store.layout import Layout, UnknownTable
from pipeline.store.parts import PLAN_FILE, TMP_PREFIX
from pipeline.store.schemas import PLAN, added_later

# RunDirError is defined in a leaf (the config raises it too, without loading Polars) and
# re-exported here for the engine and the jobs, which read run directories through the store.
__all__ = [
    "MANIFEST_FILE",
    "RunDirError",
    "check_part",
    "corrupt_part_error",
    "has_rows",
    "part_paths",
    "read_json",
    "read_plan",
    "read_table",
    "scan",
    "validate_run_dir",
]

MANIFEST_FILE = "manifest.json"


def part_paths(run_dir: Path, table: str, layout: Layout) -> list[Path]:
    """The committed parts of ``table`` in write order (temporaries excluded)."""
    _schema(table, layout)
    folder = run_dir / table
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith(TMP_PREFIX))


def has_rows(run_dir: Path, layout: Layout) -> bool:
    """Whether the run holds a committed part of its rows table (at least one attempt): a run
    without one has nothing to analyse, only why nothing ran (jobs.nothing_ran)."""
    return bool(part_paths(run_dir, "rows", layout))


def check_part(path: Path, schema: pa.Schema) -> int:
    """Validate one part from its footer (truncation, schema); returns its row count."""
    try:
        meta = pq.read_metadata(path)
        found = meta.schema.to_arrow_schema()
    except (pa.ArrowException, OSError) as exc:
        raise corrupt_part_error(path, f"unreadable Parquet footer ({exc})") from None
    absent = set(schema.names) - set(found.names)
    if absent and absent <= added_later(path.parent.name, schema):
        schema = pa.schema([f for f in schema if f.name not in absent])  # an older part
    if found.names != schema.names or found.types != schema.types:
        raise corrupt_part_error(path, "its columns do not match the table schema")
    return int(meta.num_rows)


def read_table(run_dir: Path, table: str, layout: Layout) -> pa.Table:
    """All parts of ``table`` as one Arrow table (empty, with the schema, if there are none)."""
    schema = _schema(table, layout)
    pieces = []
    for path in part_paths(run_dir, table, layout):
        check_part(path, schema)
        pieces.append(_read(path, schema))
    if not pieces:
        return schema.empty_table()
    return pa.concat_tables(pieces)


def scan(run_dir: Path, table: str, layout: Layout) -> pl.LazyFrame:
    """A lazy Polars scan over ``table``'s parts, after checking every footer."""
    schema = _schema(table, layout)
    paths = part_paths(run_dir, table, layout)
    for path in paths:
        check_part(path, schema)
    if not paths:
        empty = pl.from_arrow(schema.empty_table())
        assert isinstance(empty, pl.DataFrame)
        return empty.lazy()
    # an older part lacks the columns added since (schemas.added_later): they read as nulls
    empty = pl.from_arrow(schema.empty_table())
    assert isinstance(empty, pl.DataFrame)
    return pl.scan_parquet([str(p) for p in paths], schema=empty.schema, missing_columns="insert")


def read_plan(run_dir: Path) -> pa.Table | None:
    """RUN_DIR/plan.parquet, or None when the run has no plan yet."""
    path = run_dir / PLAN_FILE
    if not path.exists():
        return None
    check_part(path, PLAN)
    return _read(path, PLAN)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object file; a missing, torn or non-object file is a RunDirError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunDirError(f"{path} is missing; is {path.parent} a run directory?") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{path} is corrupt ({exc}); restore it or start a new run") from None
    if not isinstance(data, dict):
        raise RunDirError(f"{path} is corrupt (not a JSON object); restore it or start a new run")
    return data


def validate_run_dir(run_dir: Path, layout: Layout) -> None:
    """Check manifest.json parses and the plan and every part have an intact footer."""
    if not run_dir.is_dir():
        raise RunDirError(f"run directory {run_dir} does not exist")
    read_json(run_dir / MANIFEST_FILE)
    plan = run_dir / PLAN_FILE
    if not plan.exists():
        raise RunDirError(f"{plan} is missing; the sweep died before planning, start a new run")
    check_part(plan, PLAN)
    for table, schema in layout.schemas.items():
        for path in part_paths(run_dir, table, layout):
            check_part(path, schema)


def _schema(table: str, layout: Layout) -> pa.Schema:
    try:
        return layout.schema(table)
    except UnknownTable as exc:
        raise RunDirError(str(exc)) from None


def _read(path: Path, schema: pa.Schema) -> pa.Table:
    try:
        return pq.read_table(path, schema=schema)
    except (pa.ArrowException, OSError) as exc:
        raise corrupt_part_error(path, f"unreadable data ({exc})") from None


def corrupt_part_error(path: Path, why: str) -> RunDirError:
    """One line naming a damaged part and its fix (the plan cannot be rebuilt; a batch can)."""
    why = " ".join(why.split())  # Arrow's messages span lines
    if path.name == PLAN_FILE:
        return RunDirError(f"{path} is corrupt: {why}; the plan cannot be rebuilt, start a new run")
    run_dir = path.parent.parent
    if path.parent.name == "events":
        fix = "delete that part (its events are lost; the tables are unaffected)"
    elif path.parent.name == "requests":
        fix = "delete that part (its request records are lost; the other tables are unaffected)"
    else:
        # A batch's rows and study tables share one part name; drop them together so resume
        # re-runs exactly the attempts that part held.
        holders = sorted(d.name for d in run_dir.iterdir() if (d / path.name).is_file())
        where = ", ".join(f"{name}/" for name in holders)
        fix = f"delete {path.name} from {where} and resume the sweep"
    return RunDirError(f"{path} is corrupt: {why}; {fix} (resume={run_dir})")
