"""Issue 35: every fold keeps its raw reply (`folds.reply_text`, `folds.reply_refusal`), so an
unusable fold shows what it answered; a run from before the columns still reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.config import carrier_config
from pipeline.carrier.records import FOLDS, RowContext, trajectory_records
from pipeline.carrier.trajectory import run_trajectory
from pipeline.chat.messages import ChatResponse
from pipeline.config import load
from pipeline.store import RunDirError, read_table, scan, write_batch
from pipeline.store.layout import layout_for
from pipeline.store.reader import check_part
from pipeline.store.schemas import study_table_schema

from .scripted import GOOD_ANSWER, ScriptedClient, text
from .test_trajectory import good_fold, inputs

CONTEXT = RowContext("small", "0" * 64, "0" * 64, 9600)


@pytest.fixture(scope="module")
def arm() -> Arm:
    return build_arms(carrier_config(load(["arms=[q]"]).study).arms)["q"]


async def test_each_fold_record_keeps_the_reply_as_returned(arm: Arm) -> None:
    raw = json.dumps({f.name: "ingress port 41873" for f in arm.fields})
    refused = ChatResponse(text="", finish_reason="stop", refusal="I can't help with that.")
    unparsable = text("Sure! Here is the summary you asked for.")
    client = ScriptedClient(folds=[text(raw), refused, unparsable], recall=text(GOOD_ANSWER))
    result = await run_trajectory(client, inputs(arm))
    folds = trajectory_records(CONTEXT, result).tables[FOLDS.name]
    assert [f["reply_text"] for f in folds] == [raw, "", unparsable.text]
    assert [f["reply_refusal"] for f in folds] == [None, "I can't help with that.", None]
    assert folds[0]["carried_text"] != raw  # the carrier is the rendered fields, not the JSON
    assert folds[1]["usable"] is False and [len(f["reply_text"]) for f in folds] == [
        f["reply_chars"] for f in folds
    ]


def test_a_folds_part_from_before_issue_35_reads_the_replies_as_nulls(
    arm: Arm, tmp_path: Path
) -> None:
    layout = layout_for((), (FOLDS,))
    client = ScriptedClient(folds=[good_fold(arm)] * 3, recall=text(GOOD_ANSWER))
    result = asyncio.run(run_trajectory(client, inputs(arm)))
    folds = trajectory_records(CONTEXT, result).tables["folds"]
    records = [{"run_id": "r", "row_id": "u", **f} for f in folds]
    write_batch(tmp_path, part_name="p1", rows=[], children={"folds": records}, layout=layout)
    old_schema = pa.schema(
        [f for f in study_table_schema(FOLDS) if f.name not in FOLDS.added_later]
    )
    old = [{k: v for k, v in r.items() if k not in FOLDS.added_later} for r in records]
    pq.write_table(pa.Table.from_pylist(old, schema=old_schema), tmp_path / "folds" / "p0.parquet")
    assert [check_part(p, layout.schema("folds")) for p in sorted(tmp_path.glob("folds/*"))] == [
        3,
        3,
    ]  # the older part's footer passes: its missing columns are declared added later
    table = read_table(tmp_path, "folds", layout)
    frame = scan(tmp_path, "folds", layout).collect()
    for replies in (table.column("reply_text").to_pylist(), frame["reply_text"].to_list()):
        assert replies[:3] == [None] * 3 and all(isinstance(r, str) for r in replies[3:])


def test_a_part_lacking_a_column_not_declared_later_is_still_refused(tmp_path: Path) -> None:
    schema = study_table_schema(FOLDS)
    old = pa.schema([f for f in schema if f.name != "carried_text"])
    (tmp_path / "folds").mkdir()
    pq.write_table(old.empty_table(), tmp_path / "folds" / "p0.parquet")
    with pytest.raises(RunDirError, match="do not match the table schema"):
        check_part(tmp_path / "folds" / "p0.parquet", schema)
