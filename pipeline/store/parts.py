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
and two batches never share one. A batch of attempts writes the study's tables first (the
layout's ``children``: a study's per-step tables) and its rows part last, all under
one name: the rows part is the commit record, and ``clean_uncommitted`` removes child parts
whose rows part never landed (so a re-run attempt cannot duplicate them).

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

from pipeline.store.layout import Layout, UnknownTable

TMP_PREFIX = ".tmp-"
PLAN_FILE = "plan.parquet"
# Records are sorted by their table's key (Layout.sort_key) before writing: it makes parts far
# smaller and reads predictable.


_PLAN_ONLY = Layout({}, {}, ())  # the plan's schema is the engine's, whatever the study


class SchemaMismatch(ValueError):
    """Data handed to the store does not match the table's schema (a bug, not user error)."""


# Rows per Parquet row group of a part. A part is sorted by its table's key (row_id first), so
# a reader filtering on one attempt's row_id skips the other row groups by their statistics
# (jobs/toolout/tables.by_unit); with pyarrow's default (a million rows) a batch of large
# attempts was one group, read whole. Small tables are one group either way.
ROW_GROUP_ROWS = 65_536


def part_name(seq: int, ids: Iterable[str]) -> str:
    """The deterministic, unique name of batch ``seq`` holding the records ``ids``."""
    if seq < 0:
        raise ValueError(f"part sequence must be >= 0, got {seq}")
    digest = hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:16]
    return f"{seq:08d}-{digest}"


def next_part_seq(run_dir: Path, layout: Layout) -> int:
    """One more than the highest part sequence in any table (0 for a fresh run dir)."""
    highest = -1
    for table in layout.tables:
        for path in (run_dir / table).glob("[0-9]*.parquet"):
            prefix = path.name.split("-", 1)[0]
            if prefix.isdigit():
                highest = max(highest, int(prefix))
    return highest + 1


def conform(table: str, data: pa.Table | Sequence[Mapping[str, Any]], layout: Layout) -> pa.Table:
    """Cast ``data`` to ``table``'s schema and sort it by the table's key columns."""
    try:
        schema = layout.schema(table)
    except UnknownTable as exc:
        raise SchemaMismatch(str(exc)) from None
    expected = set(schema.names)
    if isinstance(data, pa.Table):
        _check_columns(table, expected, set(data.column_names), where="table")
        try:
            arrow = data.select(schema.names).cast(schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise SchemaMismatch(f"{table}: cannot cast to the table schema: {exc}") from exc
    else:
        for index, record in enumerate(data):
            if record.keys() != expected:  # a view compares in C; the detail only on a mismatch
                _check_columns(table, expected, set(record), where=f"record {index}")
        try:
            arrow = pa.Table.from_pylist(list(data), schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaMismatch(f"{table}: a value does not fit the table schema: {exc}") from exc
    if arrow.num_rows == 0:
        return arrow
    return arrow.sort_by([(key, "ascending") for key in layout.sort_key(table)])


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
    layout: Layout,
) -> Path:
    """Atomically write one part of ``table``; returns RUN_DIR/TABLE/<part_name>.parquet."""
    if table not in layout.schemas:
        raise SchemaMismatch(f"unknown table {table!r}; tables are {', '.join(layout.tables)}")
    if not part_name or "/" in part_name or part_name.startswith((".", TMP_PREFIX)):
        raise ValueError(f"bad part name {part_name!r}")
    arrow = conform(table, data, layout)
    target = run_dir / table / f"{part_name}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(
        target,
        lambda fh: pq.write_table(arrow, fh, compression="zstd", row_group_size=ROW_GROUP_ROWS),
    )
    return target


def write_batch(
    run_dir: Path,
    *,
    part_name: str,
    rows: pa.Table | Sequence[Mapping[str, Any]],
    children: Mapping[str, pa.Table | Sequence[Mapping[str, Any]]],
    layout: Layout,
) -> list[Path]:
    """Write one batch of attempts: the study's tables first, rows last (the commit record)."""
    unknown = sorted(set(children) - set(layout.children))
    if unknown:
        raise SchemaMismatch(f"{unknown} are not tables of this study; it has {layout.children}")
    written = []
    for table in layout.children:
        data = children.get(table, ())
        if len(data) > 0:
            written.append(write_part(run_dir, table, data, part_name=part_name, layout=layout))
    written.append(write_part(run_dir, "rows", rows, part_name=part_name, layout=layout))
    return written


def write_plan(run_dir: Path, plan_table: pa.Table) -> Path:
    """Atomically write RUN_DIR/plan.parquet (cast to the plan schema, sorted by key)."""
    store_plan(run_dir, plan_table)
    return run_dir / PLAN_FILE


def store_plan(run_dir: Path, plan_table: pa.Table) -> pa.Table:
    """`write_plan`, returning the table as written (cast and sorted): the session that
    planned keeps it in memory instead of reading its own plan back."""
    arrow = conform("plan", plan_table, _PLAN_ONLY)
    run_dir.mkdir(parents=True, exist_ok=True)
    _atomic_write(run_dir / PLAN_FILE, lambda fh: pq.write_table(arrow, fh, compression="zstd"))
    return arrow


def write_json_atomic(path: Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented, key-sorted JSON (UTF-8, trailing newline)."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, lambda fh: fh.write(text.encode()))
    return path


def clean_temporaries(run_dir: Path, layout: Layout) -> list[Path]:
    """Delete leftover ``.tmp-*`` files of a killed writer; returns what was removed."""
    removed = []
    for folder in (run_dir, *(run_dir / table for table in layout.tables)):
        if folder.is_dir():
            for path in sorted(folder.glob(f"{TMP_PREFIX}*")):
                path.unlink()
                removed.append(path)
    return removed


def clean_uncommitted(run_dir: Path, layout: Layout) -> list[Path]:
    """Delete study-table parts whose batch has no rows part (the batch never committed)."""
    committed = {path.name for path in (run_dir / "rows").glob("*.parquet")}
    removed = []
    for table in layout.children:
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
