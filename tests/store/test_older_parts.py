"""A run directory written before the bill columns existed still reads (issue 18)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store.reader import RunDirError, read_table, scan
from tests.store.layouts import CARRIER_LAYOUT, empty_row


def write_rows_without(tmp_path: Path, *dropped: str) -> None:
    schema = CARRIER_LAYOUT.schema("rows")
    row = empty_row() | {"run_id": "r", "row_id": "c/j/g0/r0/a0", "valid": True}
    table = pa.Table.from_pylist([row], schema=schema)
    (tmp_path / "rows").mkdir()
    pq.write_table(table.drop_columns(list(dropped)), tmp_path / "rows" / "00000000-a.parquet")


def test_rows_without_spent_usd_and_cache_hits_read_with_nulls(tmp_path: Path) -> None:
    write_rows_without(tmp_path, "spent_usd", "cache_hits")
    table = read_table(tmp_path, "rows", CARRIER_LAYOUT)
    assert table.column("spent_usd").to_pylist() == [None]
    frame = scan(tmp_path, "rows", CARRIER_LAYOUT).collect()
    assert frame["cache_hits"].to_list() == [None] and frame["valid"].to_list() == [True]


def test_a_part_missing_any_other_column_is_still_refused(tmp_path: Path) -> None:
    write_rows_without(tmp_path, "recall")
    with pytest.raises(RunDirError, match="its columns do not match the table schema"):
        read_table(tmp_path, "rows", CARRIER_LAYOUT)
