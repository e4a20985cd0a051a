"""A unit's records by column (pipeline.study.Columns): keyed, pickled and written like records."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config import EndpointConfig
from pipeline.store.layout import layout_for
from pipeline.study import Column, Columns, TableSpec, UnitOutcome, UnitResult, UnitSpec
from pipeline.sweep.rows import RowContext, unit_records
from pipeline.sweep.sink import Sink

TOY = layout_for(
    [Column("score", "float64")],
    [TableSpec("toy", (Column("note", "string"), Column("n", "int32")), ("row_id", "n"))],
)
CTX = RowContext(EndpointConfig(config_id="c", model="m", family="f"), None, 7, False)
NOW = datetime.now(UTC)


def spec(arm: str) -> UnitSpec:
    return UnitSpec("run", "c", "m", "f", arm, 0, 0, 0)


def test_columns_read_as_the_records_they_hold() -> None:
    cols = Columns({"note": ["a", "b"], "n": [1, 2]})
    assert list(cols) == [{"note": "a", "n": 1}, {"note": "b", "n": 2}]
    assert (len(cols), cols[1], cols[-1], list(cols[:1])) == (2, cols[1], cols[1], [cols[0]])
    assert pickle.loads(pickle.dumps(cols)) == cols
    with pytest.raises(IndexError):
        cols[2]
    with pytest.raises(ValueError, match="unequal length"):
        Columns({"note": ["a"], "n": []})


def test_the_engine_keys_columns_with_two_constant_columns_not_a_copy_per_record() -> None:
    result = UnitResult(
        UnitOutcome(valid=True), {"score": 1.0}, {"toy": Columns({"note": ["x"], "n": [3]})}
    )
    keyed = unit_records(spec("a"), CTX, result, NOW, NOW).tables["toy"]
    assert isinstance(keyed, Columns)
    assert list(keyed) == [{"run_id": "run", "row_id": "c/a/g0/r0/a0", "note": "x", "n": 3}]


def test_a_batch_of_column_units_and_record_units_writes_the_same_part(tmp_path: Path) -> None:
    def records(arm: str, by_column: bool) -> list[dict[str, object]]:
        table = [{"note": f"{arm}{i}", "n": i} for i in range(3)]
        toy = Columns({"note": [r["note"] for r in table], "n": [r["n"] for r in table]})
        result = UnitResult(
            UnitOutcome(valid=True), {"score": 1.0}, {"toy": toy if by_column else table}
        )
        return unit_records(spec(arm), CTX, result, NOW, NOW)  # type: ignore[return-value]

    written = {}
    for mixed in (False, True):
        run_dir = tmp_path / str(mixed)
        sink = Sink(run_dir, "run", TOY)
        for i, arm in enumerate(("a", "b", "c")):
            sink.add(records(arm, by_column=mixed and i != 1))  # type: ignore[arg-type]
        sink.flush()
        (part,) = (run_dir / "toy").glob("*.parquet")
        written[mixed] = pq.read_table(part).to_pylist()
    assert written[True] == written[False]
    assert len(written[True]) == 9


def test_array_buffers_read_back_as_the_same_values_and_write_without_a_copy(
    tmp_path: Path,
) -> None:
    columns = Columns.buffers((Column("note", "string"), Column("n", "int32")))
    assert type(columns["n"]).__name__ == "array" and columns["note"] == []
    columns["note"].extend(["p", "q"])
    columns["n"].extend([5, 4])
    toy = Columns(columns)
    assert list(toy) == [{"note": "p", "n": 5}, {"note": "q", "n": 4}]
    assert pickle.loads(pickle.dumps(toy)) == toy
    sink = Sink(tmp_path, "run", TOY)
    result = UnitResult(UnitOutcome(valid=True), {"score": 1.0}, {"toy": toy})
    sink.add(unit_records(spec("a"), CTX, result, NOW, NOW))
    sink.flush()
    (part,) = (tmp_path / "toy").glob("*.parquet")
    assert [r["n"] for r in pq.read_table(part).to_pylist()] == [4, 5]  # sorted by the key


def test_the_sink_flushes_as_soon_as_its_buffer_holds_max_records(tmp_path: Path) -> None:
    sink = Sink(tmp_path, "run", TOY, max_records=5, max_age_s=1e9)
    for arm in ("a", "b"):
        toy = Columns({"note": ["x"] * 3, "n": [0, 1, 2]})
        sink.add(
            unit_records(
                spec(arm),
                CTX,
                UnitResult(UnitOutcome(True), {"score": 1.0}, {"toy": toy}),
                NOW,
                NOW,
            )
        )
    assert len(list((tmp_path / "rows").glob("*.parquet"))) == 1  # the second add flushed
    assert sink.rows == [] and sink.buffered_records == 0
