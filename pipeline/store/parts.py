"""Atomic Parquet part writer: a killed sweep never leaves a torn file.

A Parquet file killed mid-write is unreadable (its footer is written last), so every file of a
run directory is written the same way:

1. write RUN_DIR/TABLE/.tmp-<name>.parquet (zstd), flush and fsync it;
2. ``os.replace`` it onto RUN_DIR/TABLE/<name>.parquet (atomic on POSIX);
3. fsync the directory so the rename itself survives a power cut.

A crash leaves at most a ``.tmp-*`` file, which readers ignore and ``clean_temporaries`` (called
on resume) deletes.

Part names are ``f"{seq:08d}-{digest}"``: ``seq`` is the writer's batch counter (continued across
resumes by ``next_part_seq``, so names sort in write order) and ``digest`` is the first 16 hex
digits of the SHA-256 of the batch's sorted row ids, so the same batch always gets the same name
and two batches never share one. A trajectory batch writes checks and folds first and its rows
part last, all under one name: the rows part is the commit record, and ``clean_uncommitted``
removes checks/folds parts whose rows part never landed (so a re-run attempt cannot duplicate
them).

Data that does not match a table's schema is a bug in the caller, not user error: it raises
``SchemaMismatch`` (a ValueError) loudly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.schemas import PLAN, TABLES

TMP_PREFIX = ".tmp-"
PLAN_FILE = "plan.parquet"

SORT_KEYS: dict[str, tuple[str, ...]] = {
    "rows": ("config_id", "arm", "execution_group", "repeat", "attempt"),
    "checks": ("row_id", "label"),
    "folds": ("row_id", "fold_index"),
    "events": ("seq",),
    "plan": ("config_id", "execution_group", "repeat", "schedule_position"),
}
"""Rows are sorted by key before writing: it makes parts far smaller and reads predictable."""


class SchemaMismatch(ValueError):
    """Data handed to the store does not match the table's schema (a bug, not user error)."""


def part_name(seq: int, ids: Iterable[str]) -> str:
    """The deterministic, unique name of batch ``seq`` holding the records ``ids``."""
    if seq < 0:
        raise ValueError(f"part sequence must be >= 0, got {seq}")
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
    return f"{seq:08d}-{digest}"


def next_part_seq(run_dir: Path) -> int:
    """One more than the highest part sequence in any table (0 for a fresh run dir)."""
    highest = -1
    for table in TABLES:
        for path in (run_dir / table).glob("[0-9]*.parquet"):
            prefix = path.name.split("-", 1)[0]
            if prefix.isdigit():
                highest = max(highest, int(prefix))
    return highest + 1


def conform(table: str, data: pa.Table | Sequence[Mapping[str, Any]]) -> pa.Table:
    """Cast ``data`` to ``table``'s schema and sort it by the table's key columns."""
    schema = PLAN if table == "plan" else TABLES.get(table)
    if schema is None:
        raise SchemaMismatch(f"unknown table {table!r}; tables are {sorted(TABLES)} and plan")
    expected = set(schema.names)
    if isinstance(data, pa.Table):
        _check_columns(table, expected, set(data.column_names), where="table")
        try:
            arrow = data.select(schema.names).cast(schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise SchemaMismatch(f"{table}: cannot cast to the table schema: {exc}") from exc
    else:
        for index, record in enumerate(data):
            _check_columns(table, expected, set(record), where=f"record {index}")
        try:
            arrow = pa.Table.from_pylist(list(data), schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatch(f"{table}: a value does not fit the table schema: {exc}") from exc
    if arrow.num_rows == 0:
        return arrow
    return arrow.sort_by([(key, "ascending") for key in SORT_KEYS[table]])


def _check_columns(table: str, expected: set[str], got: set[str], *, where: str) -> None:
    unknown, missing = sorted(got - expected), sorted(expected - got)
    if unknown or missing:
        raise SchemaMismatch(
            f"{table} {where}: unknown columns {unknown}, missing columns {missing} "
            "(pipeline/store/schemas.py is the contract)"
        )


def write_part(
    run_dir: Path,
    table: str,
    data: pa.Table | Sequence[Mapping[str, Any]],
    *,
    part_name: str,
) -> Path:
    """Atomically write one part of ``table``; returns RUN_DIR/TABLE/<part_name>.parquet."""
    if table not in TABLES:
        raise SchemaMismatch(f"unknown table {table!r}; tables are {sorted(TABLES)}")
    if not part_name or "/" in part_name or part_name.startswith((".", TMP_PREFIX)):
        raise ValueError(f"bad part name {part_name!r}")
    arrow = conform(table, data)
    target = run_dir / table / f"{part_name}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(target, lambda fh: pq.write_table(arrow, fh, compression="zstd"))
    return target


def write_batch(
    run_dir: Path,
    *,
    part_name: str,
    rows: pa.Table | Sequence[Mapping[str, Any]],
    checks: pa.Table | Sequence[Mapping[str, Any]] = (),
    folds: pa.Table | Sequence[Mapping[str, Any]] = (),
) -> list[Path]:
    """Write one batch of attempts: checks and folds first, rows last (the commit record)."""
    written = []
    for table, data in (("checks", checks), ("folds", folds)):
        if len(data) > 0:
            written.append(write_part(run_dir, table, data, part_name=part_name))
    written.append(write_part(run_dir, "rows", rows, part_name=part_name))
    return written


def write_plan(run_dir: Path, plan_table: pa.Table) -> Path:
    """Atomically write RUN_DIR/plan.parquet (cast to the plan schema, sorted by key)."""
    arrow = conform("plan", plan_table)
    target = run_dir / PLAN_FILE
    run_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(target, lambda fh: pq.write_table(arrow, fh, compression="zstd"))
    return target


def write_json_atomic(path: Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented, key-sorted JSON (UTF-8, trailing newline)."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, lambda fh: fh.write(text.encode()))
    return path


def clean_temporaries(run_dir: Path) -> list[Path]:
    """Delete leftover ``.tmp-*`` files of a killed writer; returns what was removed."""
    removed = []
    for folder in (run_dir, *(run_dir / table for table in TABLES)):
        if folder.is_dir():
            for path in sorted(folder.glob(f"{TMP_PREFIX}*")):
                path.unlink()
                removed.append(path)
    return removed


def clean_uncommitted(run_dir: Path) -> list[Path]:
    """Delete checks/folds parts whose batch has no rows part (the batch never committed)."""
    committed = {path.name for path in (run_dir / "rows").glob("*.parquet")}
    removed = []
    for table in ("checks", "folds"):
        for path in sorted((run_dir / table).glob("*.parquet")):
            if not path.name.startswith(TMP_PREFIX) and path.name not in committed:
                path.unlink()
                removed.append(path)
    return removed


def _atomic_write(target: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write via a synced temporary file and a rename; see the module docstring."""
    tmp = target.with_name(f"{TMP_PREFIX}{target.name}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        # An exception (not a kill) must not leave a temporary behind; a kill is handled by
        # clean_temporaries on resume.
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
