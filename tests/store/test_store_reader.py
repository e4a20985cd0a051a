"""Reading a run dir: empty tables, concatenation, and corrupt parts refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store.parts import write_json_atomic, write_part, write_plan
from pipeline.store.reader import (
    RunDirError,
    read_plan,
    read_table,
    scan,
    validate_run_dir,
)
from pipeline.store.schemas import EVENTS, PLAN
from pipeline.usererror import UserError
from tests.store.layouts import CARRIER_LAYOUT, ROWS

LAYOUT = CARRIER_LAYOUT


def row(arm: str, repeat: int) -> dict[str, Any]:
    record: dict[str, Any] = dict.fromkeys(ROWS.names)
    record.update(config_id="c", arm=arm, execution_group=0, repeat=repeat, attempt=0)
    return record


def plan() -> pa.Table:
    record = dict.fromkeys(PLAN.names) | {"config_id": "c", "arm": "j", "status": "pending"}
    return pa.Table.from_pylist([record], schema=PLAN)


def make_run_dir(tmp_path: Path) -> Path:
    write_json_atomic(tmp_path / "manifest.json", {"run_id": "run"})
    write_plan(tmp_path, plan())
    write_part(tmp_path, "rows", [row("j", 0)], part_name="00000000-a", layout=LAYOUT)
    write_part(tmp_path, "rows", [row("q", 0), row("q", 1)], part_name="00000001-b", layout=LAYOUT)
    return tmp_path


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_run_dir_error_is_a_user_error() -> None:
    assert issubclass(RunDirError, UserError)


def test_read_table_of_absent_table_is_empty_with_schema(tmp_path: Path) -> None:
    table = read_table(tmp_path, "events", LAYOUT)
    assert table.num_rows == 0
    assert table.schema == EVENTS


def test_read_table_concatenates_every_part(tmp_path: Path) -> None:
    table = read_table(make_run_dir(tmp_path), "rows", LAYOUT)
    assert table.schema == ROWS
    assert table["arm"].to_pylist() == ["j", "q", "q"]


def test_read_table_ignores_temporaries(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    (run_dir / "rows" / ".tmp-00000002-c.parquet").write_bytes(b"PAR1 torn")
    assert read_table(run_dir, "rows", LAYOUT).num_rows == 3


def test_truncated_part_is_a_run_dir_error_naming_the_file(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    truncate(run_dir / "rows" / "00000001-b.parquet")
    with pytest.raises(RunDirError, match=r"00000001-b\.parquet is corrupt.*delete") as info:
        read_table(run_dir, "rows", LAYOUT)
    assert "resume" in str(info.value)


def test_validate_run_dir_detects_truncation_from_the_footer(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    truncate(run_dir / "rows" / "00000000-a.parquet")
    with pytest.raises(RunDirError, match=r"00000000-a\.parquet"):
        validate_run_dir(run_dir, LAYOUT)


def test_validate_run_dir_accepts_an_intact_run_dir(tmp_path: Path) -> None:
    validate_run_dir(make_run_dir(tmp_path), LAYOUT)


def test_validate_run_dir_rejects_a_torn_manifest(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    (run_dir / "manifest.json").write_text('{"run_id": ')
    with pytest.raises(RunDirError, match=r"manifest\.json is corrupt"):
        validate_run_dir(run_dir, LAYOUT)


def test_validate_run_dir_rejects_a_missing_plan(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    (run_dir / "plan.parquet").unlink()
    with pytest.raises(RunDirError, match=r"plan\.parquet is missing"):
        validate_run_dir(run_dir, LAYOUT)


def test_part_with_foreign_schema_is_a_run_dir_error(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    pq.write_table(pa.table({"seq": [1]}), tmp_path / "events" / "x.parquet")
    with pytest.raises(RunDirError, match="do not match the table schema"):
        read_table(tmp_path, "events", LAYOUT)


def test_read_plan_is_none_without_plan_and_reads_it_otherwise(tmp_path: Path) -> None:
    assert read_plan(tmp_path) is None
    table = read_plan(make_run_dir(tmp_path))
    assert table is not None
    assert table.num_rows == 1


def test_scan_returns_a_lazy_frame_over_all_parts(tmp_path: Path) -> None:
    frame = scan(make_run_dir(tmp_path), "rows", LAYOUT).group_by("arm").len().sort("arm").collect()
    assert frame.to_dicts() == [{"arm": "j", "len": 1}, {"arm": "q", "len": 2}]


def test_scan_of_absent_table_has_the_schema_columns(tmp_path: Path) -> None:
    frame = scan(tmp_path, "checks", LAYOUT).collect()
    assert frame.height == 0
    assert "present_in_carrier" in frame.columns
    assert frame.schema["passed"] == pl.Boolean


def test_unknown_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="unknown table"):
        read_table(tmp_path, "rowz", LAYOUT)
