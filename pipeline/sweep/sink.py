"""The coordinator's writer: buffers finished attempts and commits them as atomic parts.

The coordinator is the only writer of a sweep's tables. A batch commits the study's tables first
and its rows part last (see pipeline.store.parts); an attempt that never reached a rows part
is re-run on resume, so nothing is lost and nothing is duplicated.

The engine's `requests` records are written on their own, before the batch, like events: an
attempt the budget cut sends requests and has no row, and a request that was sent stays on
record even if its attempt is re-run (the re-run's requests are then cache hits, `session`
says which session made each).
"""

from __future__ import annotations

import json
import time
from array import array
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.store.layout import Layout
from pipeline.store.parts import next_part_seq, part_name, write_batch, write_part
from pipeline.study import Columns, Record
from pipeline.sweep.rows import UnitRecords


def _max_event_seq(run_dir: Path) -> int:
    best = -1
    for path in (run_dir / "events").glob("[!.]*.parquet"):
        column = pq.read_table(path, columns=["seq"]).column("seq")
        if len(column):
            best = max(best, *(v for v in column.to_pylist() if v is not None))
    return best


_TYPECODES = {pa.int32(): "i", pa.int64(): "q", pa.float64(): "d"}


def _array(values: Sequence[Any], type_: pa.DataType) -> pa.Array:
    """A column as Arrow: an `array.array` of the type's width without a copy (its buffer is
    the values), anything else value by value."""
    typecode = _TYPECODES.get(type_)
    if (
        isinstance(values, array)
        and values.typecode == typecode
        and values.itemsize * 8 == type_.bit_width
    ):
        return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])
    return pa.array(list(values) if isinstance(values, array) else values, type_)


class Sink:
    """Buffers records; flushes every `max_rows` attempts or `max_age_s` seconds, and as soon
    as the attempts buffered hold `max_records` table records: a batch of large attempts
    (corpus-scale replays, hundreds of thousands of records each) that arrive together is
    written as it comes, not held whole in the driver."""

    def __init__(
        self,
        run_dir: Path,
        run_id: str,
        layout: Layout,
        *,
        max_rows: int = 1000,
        max_age_s: float = 2.0,
        max_records: int = 250_000,
        clock: Callable[[], float] = time.monotonic,
        on_commit: Callable[[list[Record]], None] | None = None,
        on_requests: Callable[[list[Record]], None] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        self.max_rows = max_rows
        self.max_age_s = max_age_s
        self.max_records = max_records
        self.buffered_records = 0
        self.clock = clock
        self.layout = layout
        self.seq = next_part_seq(run_dir, layout)
        self.event_seq = _max_event_seq(run_dir) + 1
        self.rows: list[Record] = []
        # per table, the batch's records: a `Columns` chunk per unit that sent one, records
        # of the others in lists (pipeline.study.Columns)
        self.children: dict[str, list[Sequence[Record]]] = {name: [] for name in layout.children}
        # told every committed rows part's records, in commit order (the session's row view)
        self.on_commit = on_commit
        self.on_requests = on_requests  # told every committed requests part's records
        self.events: list[Record] = []
        self.requests: list[Record] = []
        self.last_flush = clock()
        self.rows_written = 0

    def add(self, records: UnitRecords) -> None:
        self.requests.extend(records.requests)
        for request in records.requests:  # the server asked the endpoint to wait (issue 31)
            if request.get("server_wait_s") is not None:
                self.event(
                    "server_wait",
                    config_id=request["config_id"],
                    row_id=request["row_id"],
                    status=request["status"],
                    wait_s=request["server_wait_s"],
                )
        if records.cut is not None:  # no row: the unit is not run
            return
        self.rows.append(records.row)
        for name, table in records.tables.items():
            self.buffered_records += len(table)
            chunks = self.children.setdefault(name, [])
            if isinstance(table, Columns):
                chunks.append(table)
            elif chunks and not isinstance(chunks[-1], Columns):
                chunks[-1].extend(table)  # type: ignore[attr-defined]
            else:
                chunks.append(list(table))
        if self.buffered_records >= self.max_records:
            self.flush()

    def event(
        self, kind: str, *, config_id: str | None = None, row_id: str | None = None, **detail: Any
    ) -> None:
        """Append one event; `detail` is stored as JSON (never pass secrets here)."""
        self.events.append(
            {
                "run_id": self.run_id,
                "seq": self.event_seq,
                "at": datetime.now(UTC),
                "kind": kind,
                "config_id": config_id,
                "row_id": row_id,
                "detail": json.dumps(detail, sort_keys=True, default=str) if detail else None,
            }
        )
        self.event_seq += 1

    def maybe_flush(self) -> None:
        pending = len(self.rows) + len(self.events) + len(self.requests)
        if len(self.rows) >= self.max_rows or (
            pending and self.clock() - self.last_flush >= self.max_age_s
        ):
            self.flush()

    def _arrow(self, table: str, chunks: list[Sequence[Record]]) -> pa.Table | list[Record]:
        """A table's chunks as one Arrow table (columns taken as they are), or the records
        as they came when no unit sent columns (the store conforms either)."""
        if not any(isinstance(c, Columns) for c in chunks):
            return [r for chunk in chunks for r in chunk]
        schema = self.layout.schema(table)
        parts = []
        for chunk in chunks:
            if isinstance(chunk, Columns):
                columns = chunk.columns
                if set(columns) != set(schema.names):
                    return [r for c in chunks for r in c]  # the store names the mismatch
                try:
                    arrays = {n: _array(columns[n], schema.field(n).type) for n in schema.names}
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                    return [r for c in chunks for r in c]  # the store names the bad value
                parts.append(pa.table(arrays))
            elif chunk:
                parts.append(pa.Table.from_pylist(list(chunk), schema=schema))
        return pa.concat_tables(parts) if parts else []

    def flush(self) -> None:
        if self.requests:
            ids = [
                f"{r['row_id']}#{r['session']}#{r['position']}#{r['attempt_in_request']}"
                for r in self.requests
            ]
            name = part_name(self.seq, ids)
            write_part(self.run_dir, "requests", self.requests, part_name=name, layout=self.layout)
            self.seq += 1
            if self.on_requests is not None:
                self.on_requests(self.requests)
            self.requests = []
        if self.rows:
            name = part_name(self.seq, [r["row_id"] for r in self.rows])
            write_batch(
                self.run_dir,
                part_name=name,
                rows=self.rows,
                children={name: self._arrow(name, c) for name, c in self.children.items()},
                layout=self.layout,
            )
            self.seq += 1
            self.rows_written += len(self.rows)
            if self.on_commit is not None:
                self.on_commit(self.rows)
            self.rows = []
            self.children = {table: [] for table in self.layout.children}
            self.buffered_records = 0
        if self.events:
            name = part_name(self.seq, [str(e["seq"]) for e in self.events])
            write_part(self.run_dir, "events", self.events, part_name=name, layout=self.layout)
            self.seq += 1
            self.events = []
        self.last_flush = self.clock()
