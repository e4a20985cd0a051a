"""unit_records: the engine's shared columns around a study's own row and table records."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipeline.config import EndpointConfig
from pipeline.store.layout import layout_for
from pipeline.store.parts import conform
from pipeline.study import Column, TableSpec, UnitOutcome, UnitResult, UnitSpec
from pipeline.sweep.bill import Bill
from pipeline.sweep.rows import RowContext, unit_records

TOY = layout_for([Column("score", "float64")], [TableSpec("toy", (Column("note", "string"),))])
SPEC = UnitSpec("run", "c", "m", "f", "a", 0, 2, 1, attempt=1)
CTX = RowContext(EndpointConfig(config_id="c", model="m", family="f"), "2026-01-01", 7, False)
NOW = datetime.now(UTC)


def result(**row: object) -> UnitResult:
    return UnitResult(UnitOutcome(valid=True), {"score": 0.5, **row}, {"toy": [{"note": "hi"}]})


BILL = Bill(requests=3, cost_usd=0.25, spent_usd=0.25, simulated=True)


def test_a_row_has_exactly_the_layouts_rows_columns_and_fits_its_schema() -> None:
    records = unit_records(SPEC, CTX, result(), NOW, NOW, bill=BILL)
    assert list(records.row) == TOY.schema("rows").names
    assert conform("rows", [records.row], TOY).num_rows == 1
    assert (records.row["row_id"], records.row["seed"]) == ("c/a/g0/r2/a1", 7)
    assert records.row["simulated"] is True  # the bill says so even if the context does not
    assert (records.row["requests"], records.row["cost_usd"]) == (3, 0.25)


def test_study_table_records_get_the_run_and_row_id() -> None:
    records = unit_records(SPEC, CTX, result(), NOW, NOW, bill=BILL)
    assert records.tables == {"toy": [{"run_id": "run", "row_id": "c/a/g0/r2/a1", "note": "hi"}]}
    assert conform("toy", records.tables["toy"], TOY).num_rows == 1


@pytest.mark.parametrize("name", ["valid", "cost_usd", "requests", "model", "started_at"])
def test_a_study_row_column_that_shadows_a_shared_one_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=rf"shared columns \['{name}'\]"):
        unit_records(SPEC, CTX, result(**{name: None}), NOW, NOW)
