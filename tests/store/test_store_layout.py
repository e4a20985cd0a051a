"""A study's layout: shared rows columns plus the study's; its tables commit before rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.store.layout import UnknownTable, layout_for
from pipeline.store.parts import SchemaMismatch, write_batch
from pipeline.store.reader import RunDirError, read_table
from pipeline.store.schemas import EVENTS, ROW_KEY, ROW_OUTCOME
from pipeline.study import Column, TableSpec

TOY_TABLE = TableSpec("toy", (Column("note", "string"),))
TOY = layout_for([Column("score", "float64")], [TOY_TABLE])


def toy_row(**values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(TOY.schema("rows").names)
    row.update(run_id="run", row_id="c/a/g0/r0/a0", config_id="c", arm="a")
    row.update(execution_group=0, repeat=0, attempt=0, valid=True, score=0.5)
    row.update(values)
    return row


def test_toy_rows_are_the_shared_columns_then_the_study_column() -> None:
    shared = [name for name, _ in (*ROW_KEY, *ROW_OUTCOME)]
    assert TOY.schema("rows").names == [*shared, "score"]
    assert TOY.tables == ("rows", "toy", "events", "requests")
    assert TOY.children == ("toy",)
    assert TOY.schema("events") == EVENTS
    assert TOY.schema("toy").names == ["run_id", "row_id", "note"]


def test_write_batch_writes_the_study_table_before_rows(tmp_path: Path) -> None:
    note = {"run_id": "run", "row_id": "c/a/g0/r0/a0", "note": "hi"}
    written = write_batch(
        tmp_path, part_name="b", rows=[toy_row()], children={"toy": [note]}, layout=TOY
    )
    assert written == [tmp_path / "toy" / "b.parquet", tmp_path / "rows" / "b.parquet"]
    # a rows part that fails to write leaves the toy part of its batch behind, never the reverse
    with pytest.raises(SchemaMismatch):
        write_batch(
            tmp_path, part_name="c", rows=[toy_row(bogus=1)], children={"toy": [note]}, layout=TOY
        )
    assert (tmp_path / "toy" / "c.parquet").exists()
    assert not (tmp_path / "rows" / "c.parquet").exists()
    assert read_table(tmp_path, "rows", TOY)["score"].to_pylist() == [0.5]


def test_an_unknown_table_is_refused_in_one_line_naming_the_tables(tmp_path: Path) -> None:
    with pytest.raises(UnknownTable) as info:
        TOY.schema("checks")
    message = str(info.value)
    assert "\n" not in message
    assert "'checks'" in message
    assert all(name in message for name in ("plan", "rows", "toy", "events"))
    with pytest.raises(RunDirError, match="tables are plan, rows, toy, events"):
        read_table(tmp_path, "checks", TOY)


def test_a_study_table_called_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="'rows'"):
        layout_for([], [TableSpec("rows", (Column("x", "int32"),))])


@pytest.mark.parametrize("name", ["cost_usd", "model", "valid"])
def test_a_study_row_column_named_like_a_shared_one_is_refused(name: str) -> None:
    # two columns of one name: the study's value would silently replace the engine's
    with pytest.raises(ValueError, match=rf"\['{name}'\]"):
        layout_for([Column(name, "float64")], [])
