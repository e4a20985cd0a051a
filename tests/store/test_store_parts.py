"""The atomic part writer: schema cast, key order, temp-file discipline, batch commit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.store.parts import (
    SchemaMismatch,
    clean_temporaries,
    clean_uncommitted,
    next_part_seq,
    part_name,
    write_batch,
    write_json_atomic,
    write_part,
    write_plan,
)
from pipeline.store.schemas import EVENTS, PLAN
from tests.store.layouts import CARRIER_LAYOUT, CHECKS, ROWS

PROJECT = Path(__file__).resolve().parents[2]
LAYOUT = CARRIER_LAYOUT


def row(config_id: str, arm: str, repeat: int, attempt: int = 0, **values: Any) -> dict[str, Any]:
    record: dict[str, Any] = dict.fromkeys(ROWS.names)
    record.update(
        run_id="run",
        row_id=f"{config_id}/{arm}/g0/r{repeat}/a{attempt}",
        config_id=config_id,
        arm=arm,
        execution_group=0,
        repeat=repeat,
        attempt=attempt,
        valid=True,
        retryable=False,
    )
    record.update(values)
    return record


def event(seq: int) -> dict[str, Any]:
    return {
        "run_id": "run",
        "seq": seq,
        "at": None,
        "kind": "dispatch",
        "config_id": "c",
        "row_id": None,
        "detail": "",
    }


def test_write_part_leaves_no_temporary_on_success(tmp_path: Path) -> None:
    path = write_part(tmp_path, "rows", [row("c", "j", 0)], part_name="00000000-a", layout=LAYOUT)
    assert path == tmp_path / "rows" / "00000000-a.parquet"
    assert sorted(p.name for p in (tmp_path / "rows").iterdir()) == ["00000000-a.parquet"]
    assert pq.read_table(path).num_rows == 1


def test_write_part_sorts_rows_by_key_columns(tmp_path: Path) -> None:
    records = [row("b", "q", 1), row("a", "q", 0, attempt=1), row("a", "j", 1), row("a", "q", 0)]
    path = write_part(tmp_path, "rows", records, part_name="p", layout=LAYOUT)
    table = pq.read_table(path)
    columns = (table[c].to_pylist() for c in ("config_id", "arm", "repeat", "attempt"))
    keys = list(zip(*columns, strict=True))
    assert keys == [("a", "j", 1, 0), ("a", "q", 0, 0), ("a", "q", 0, 1), ("b", "q", 1, 0)]


def test_write_part_sorts_events_by_seq(tmp_path: Path) -> None:
    path = write_part(
        tmp_path, "events", [event(3), event(1), event(2)], part_name="e", layout=LAYOUT
    )
    assert pq.read_table(path)["seq"].to_pylist() == [1, 2, 3]


def test_write_part_uses_zstd(tmp_path: Path) -> None:
    path = write_part(tmp_path, "rows", [row("c", "j", 0)], part_name="p", layout=LAYOUT)
    assert pq.read_metadata(path).row_group(0).column(0).compression == "ZSTD"


def test_schema_cast_rejects_an_unknown_column(tmp_path: Path) -> None:
    with pytest.raises(SchemaMismatch, match=r"unknown columns \['bogus'\]"):
        write_part(tmp_path, "rows", [row("c", "j", 0, bogus=1)], part_name="p", layout=LAYOUT)
    assert not (tmp_path / "rows" / "p.parquet").exists()


def test_schema_cast_rejects_a_missing_column(tmp_path: Path) -> None:
    record = row("c", "j", 0)
    del record["recall"]
    with pytest.raises(SchemaMismatch, match=r"missing columns \['recall'\]"):
        write_part(tmp_path, "rows", [record], part_name="p", layout=LAYOUT)


def test_schema_cast_casts_an_arrow_table_to_the_schema(tmp_path: Path) -> None:
    loose = pa.Table.from_pylist([event(1)])  # seq inferred as int64, `at` as null type
    path = write_part(tmp_path, "events", loose, part_name="e", layout=LAYOUT)
    assert pq.read_schema(path) == EVENTS


def test_schema_cast_rejects_an_arrow_table_with_an_extra_column(tmp_path: Path) -> None:
    table = pa.Table.from_pylist([event(1)]).append_column("extra", pa.array([1]))
    with pytest.raises(SchemaMismatch, match="extra"):
        write_part(tmp_path, "events", table, part_name="e", layout=LAYOUT)


def test_exception_before_rename_keeps_old_part_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_part(tmp_path, "rows", [row("c", "j", 0)], part_name="p", layout=LAYOUT)
    before = path.read_bytes()

    def failing_replace(src: object, dst: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk gone"):
        write_part(
            tmp_path, "rows", [row("c", "j", 0), row("c", "q", 0)], part_name="p", layout=LAYOUT
        )
    assert path.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "rows").iterdir()) == ["p.parquet"]


def test_killed_writer_keeps_old_state_and_clean_temporaries_removes_the_temp(
    tmp_path: Path,
) -> None:
    path = write_part(tmp_path, "rows", [row("c", "j", 0)], part_name="p", layout=LAYOUT)
    before = path.read_bytes()
    # A real kill: the process dies (os._exit, no cleanup) between fsync and rename.
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from pipeline.store import parts
        from tests.store.layouts import CARRIER_LAYOUT, empty_row
        os.replace = lambda src, dst: os._exit(9)
        record = empty_row()
        record.update(config_id="c", arm="q", execution_group=0, repeat=0, attempt=0)
        parts.write_part(
            Path({str(tmp_path)!r}), "rows", [record], part_name="p", layout=CARRIER_LAYOUT
        )
        """
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, check=False)
    assert done.returncode == 9
    temp = tmp_path / "rows" / ".tmp-p.parquet"
    assert temp.exists()
    assert path.read_bytes() == before
    assert clean_temporaries(tmp_path, LAYOUT) == [temp]
    assert not temp.exists()
    assert path.read_bytes() == before


def test_write_plan_replaces_plan_atomically(tmp_path: Path) -> None:
    plan = pa.Table.from_pylist(
        [
            {
                "run_id": "run",
                "config_id": "c",
                "model": "m",
                "family": "f",
                "arm": arm,
                "execution_group": 0,
                "repeat": 0,
                "schedule_position": pos,
                "status": "pending",
                "not_run_reason": None,
            }
            for pos, arm in ((1, "q"), (0, "j"))
        ],
        schema=PLAN,
    )
    path = write_plan(tmp_path, plan)
    assert path == tmp_path / "plan.parquet"
    assert pq.read_table(path)["arm"].to_pylist() == ["j", "q"]
    assert [p.name for p in tmp_path.iterdir()] == ["plan.parquet"]


def test_write_json_atomic_writes_sorted_json_without_temporary(tmp_path: Path) -> None:
    path = write_json_atomic(tmp_path / "manifest.json", {"b": 1, "a": "é"})
    assert path.read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_part_name_is_deterministic_and_differs_between_batches() -> None:
    assert part_name(3, ["b", "a"]) == part_name(3, ["a", "b"])
    assert part_name(3, ["a"]) != part_name(3, ["b"])
    assert part_name(3, ["a"]).startswith("00000003-")


def test_next_part_seq_continues_after_the_highest_existing_part(tmp_path: Path) -> None:
    assert next_part_seq(tmp_path, LAYOUT) == 0
    write_part(tmp_path, "rows", [row("c", "j", 0)], part_name=part_name(4, ["x"]), layout=LAYOUT)
    write_part(tmp_path, "events", [event(1)], part_name=part_name(11, ["y"]), layout=LAYOUT)
    assert next_part_seq(tmp_path, LAYOUT) == 12


def test_batch_without_rows_part_is_uncommitted_and_cleaned(tmp_path: Path) -> None:
    check = dict.fromkeys(CHECKS.names) | {"row_id": "r", "label": "L"}
    write_batch(
        tmp_path,
        part_name="good",
        rows=[row("c", "j", 0)],
        children={"checks": [check]},
        layout=LAYOUT,
    )
    # A kill between the checks part and the rows part of a batch:
    orphan = write_part(tmp_path, "checks", [check], part_name="torn", layout=LAYOUT)
    assert clean_uncommitted(tmp_path, LAYOUT) == [orphan]
    assert sorted(p.name for p in (tmp_path / "checks").iterdir()) == ["good.parquet"]


def test_write_batch_skips_empty_tables(tmp_path: Path) -> None:
    written = write_batch(
        tmp_path, part_name="b", rows=[row("c", "j", 0)], children={"folds": []}, layout=LAYOUT
    )
    assert written == [tmp_path / "rows" / "b.parquet"]
