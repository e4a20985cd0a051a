from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.config import carrier_config
from pipeline.carrier.fixture_model import render_chunk, render_message
from pipeline.carrier.prompts import CHUNK_MARKER, RECALL_MARKER
from pipeline.carrier.records import RowContext as CarrierContext
from pipeline.carrier.records import trajectory_records
from pipeline.carrier.trajectory import TrajectoryInputs, TrajectoryResult, run_trajectory
from pipeline.chat.errors import RequestRejected, TimeoutFault
from pipeline.chat.messages import ChatResponse
from pipeline.config import EndpointConfig, load
from pipeline.study import UnitSpec
from pipeline.sweep.bill import Bill
from pipeline.sweep.rows import RowContext, UnitRecords, unit_records
from tests.sweep.boundary_kit import boundary

from .scripted import CHUNKS, GOOD_ANSWER, GRADED, ScriptedClient, text

ALL_ARMS = ["f", "n", "j", "p", "q", "k", "o", "m", "t", "u", "l", "g", "x"]
FACT_LINES = "ingress port 41873; 19 shards; signing key kid-7f3a9c2e"


@pytest.fixture(scope="module")
def arms() -> dict[str, Arm]:
    cfg = load([f"arms=[{','.join(ALL_ARMS)}]"])
    return build_arms(carrier_config(cfg.study).arms)


def good_fold(arm: Arm) -> ChatResponse:
    """A conforming fold reply in the arm's own representation."""
    if arm.schema is None:
        return text("\n".join(f"## {h}\n{FACT_LINES}" for h in arm.headings))
    return text(json.dumps({f.name: FACT_LINES for f in arm.fields}))


def inputs(arm: Arm) -> TrajectoryInputs:
    return TrajectoryInputs(
        arm=arm,
        chunks=CHUNKS,
        render_chunk=render_chunk,  # type: ignore[arg-type]
        chunk_messages=lambda c: [(m.role, render_message(m)) for m in c.messages],  # type: ignore[attr-defined]
        graded=GRADED,
        seed=11,
    )


@pytest.mark.parametrize("name", ALL_ARMS)
async def test_every_arm_folds_each_chunk_then_recalls(arms: dict[str, Arm], name: str) -> None:
    arm = arms[name]
    client = ScriptedClient(folds=[good_fold(arm)] * 3, recall=text(GOOD_ANSWER))
    result = await run_trajectory(client, inputs(arm))
    folds, recall = client.requests[:3], client.requests[3]
    for request in folds:
        assert request.max_tokens == arm.output_tokens
        assert request.messages[0].content == arm.system_prompt
        assert (request.schema is None) == (arm.schema is None)
        assert request.seed == 11
    assert recall.schema is None and RECALL_MARKER in recall.messages[1].content
    assert all(f"- {g.label}" in recall.messages[1].content for g in GRADED)
    assert result.grade is not None and result.grade.recall == 1.0
    assert not result.catch_up and result.error is None
    assert [f.chunks for f in result.folds] == [(0,), (1,), (2,)]


async def test_fold_is_delta_only_previous_carrier_plus_one_chunk(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    replies = [text(f"## Goal\ncarrier {i}") for i in range(3)]
    client = ScriptedClient(folds=replies, recall=text(GOOD_ANSWER))
    await run_trajectory(client, inputs(arm))
    second = client.requests[1].messages[1].content
    assert "carrier 0" in second and "19 shards" in second
    assert "41873" not in second.split(CHUNK_MARKER)[1]  # chunk 0 is not re-sent


async def test_q_carrier_is_rendered_under_five_headings(arms: dict[str, Arm]) -> None:
    arm = arms["q"]
    client = ScriptedClient(folds=[good_fold(arm)] * 3, recall=text(GOOD_ANSWER))
    result = await run_trajectory(client, inputs(arm))
    assert result.folds[-1].headings_carried == 5
    assert result.final_carrier.startswith("## Goal\n")


async def test_parse_failure_keeps_raw_text_and_row_stays_valid(arms: dict[str, Arm]) -> None:
    arm = arms["j"]
    broken = text('{"summary": "ingress port 41873 and')
    client = ScriptedClient(folds=[broken, good_fold(arm), broken], recall=text(GOOD_ANSWER))
    result = await run_trajectory(client, inputs(arm))
    assert [f.parse_failed for f in result.folds] == [True, False, True]
    records = records_for(result, arm)
    assert records.row["parse_failures"] == 2 and records.row["valid"] is True


async def test_carry_cap_clips_the_carrier_before_the_next_fold(arms: dict[str, Arm]) -> None:
    arm = arms["u"]  # 1,400-token cap
    huge = text("## Goal\n" + "ingress port 41873 " * 2000)
    client = ScriptedClient(folds=[huge, good_fold(arm), good_fold(arm)], recall=text(""))
    result = await run_trajectory(client, inputs(arm))
    assert result.folds[0].clipped and not result.folds[1].clipped
    assert len(client.requests[1].messages[1].content) < len(huge.text)
    assert records_for(result, arm).row["folds_clipped"] == 1


async def test_empty_fold_triggers_catch_up_and_invalidates_the_row(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    client = ScriptedClient(
        folds=[text(""), good_fold(arm), good_fold(arm)], recall=text(GOOD_ANSWER)
    )
    result = await run_trajectory(client, inputs(arm))
    assert [f.chunks for f in result.folds] == [(0,), (0, 1), (2,)]
    assert result.catch_up
    row = records_for(result, arm).row
    assert (row["valid"], row["invalid_reason"], row["retryable"]) == (False, "catch_up", False)
    assert row["answer_text"] == GOOD_ANSWER  # recall still ran, for audit


async def test_refused_last_fold_is_catch_up_too(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    refusal = ChatResponse(text="", finish_reason="stop", refusal="no")
    client = ScriptedClient(folds=[good_fold(arm), good_fold(arm), refusal], recall=text(""))
    assert (await run_trajectory(client, inputs(arm))).catch_up


async def test_infrastructure_fault_ends_the_row_invalid_and_retryable(
    arms: dict[str, Arm],
) -> None:
    arm = arms["q"]
    client = ScriptedClient(folds=[good_fold(arm), TimeoutFault("read timeout")])
    result = await run_trajectory(client, inputs(arm))
    row = records_for(result, arm).row
    assert (row["valid"], row["invalid_reason"], row["retryable"]) == (
        False,
        "infrastructure:timeout",
        True,
    )
    assert row["folds"] == 1 and row["recall"] is None


async def test_deterministic_rejection_is_not_retryable(arms: dict[str, Arm]) -> None:
    arm = arms["j"]
    reject = RequestRejected(500, "json_schema not supported", reason="schema_unsupported")
    result = await run_trajectory(ScriptedClient(folds=[reject]), inputs(arm))
    row = records_for(result, arm).row
    assert (row["invalid_reason"], row["retryable"]) == ("rejected:schema_unsupported", False)


async def test_length_stops_are_counted_not_retried(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    cut = text("## Goal\ningress port 41873", finish="length")
    client = ScriptedClient(folds=[cut, cut, good_fold(arm)], recall=text(GOOD_ANSWER))
    row = records_for(await run_trajectory(client, inputs(arm)), arm).row
    assert row["folds_length_stop"] == 2 and row["valid"] is True


async def test_x_appends_a_ledger_the_model_did_not_write(arms: dict[str, Arm]) -> None:
    arm = arms["x"]
    vague = text("## Goal\nkeep the service healthy")
    client = ScriptedClient(folds=[vague] * 3, recall=text(""))
    result = await run_trajectory(client, inputs(arm))
    assert "## Ledger" in result.final_carrier
    assert "- port: 41873" in result.final_carrier
    assert "kid-7f3a9c2e" in result.final_carrier
    assert "19 shards" not in result.final_carrier  # unshaped: only the model could carry it


async def test_recall_keeps_the_full_answer_text(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    long_answer = GOOD_ANSWER + "\n" + "note " * 400
    client = ScriptedClient(folds=[good_fold(arm)] * 3, recall=text(long_answer))
    result = await run_trajectory(client, inputs(arm))
    assert result.answer_text == long_answer and len(long_answer) > 400


async def test_row_records_fields_and_prompt_digest(arms: dict[str, Arm]) -> None:
    arm = arms["q"]
    client = boundary(ScriptedClient(folds=[good_fold(arm)] * 3, recall=text(GOOD_ANSWER)))
    records = records_for(await run_trajectory(client, inputs(arm)), arm, client.bill.bill())
    row = records.row
    assert row["system_prompt_sha256"] == arm.system_prompt_sha256
    assert row["declared_capacity_chars"] == 9600
    assert row["fill"] == pytest.approx(row["carrier_chars"] / 9600)
    assert row["headings_carried"] == 5 and row["folds"] == 3
    assert row["prompt_tokens"] == 400 and row["completion_tokens"] == 80
    assert row["checks_passed"] == 3 and row["checks_total"] == 3
    checks, folds = records.tables["checks"], records.tables["folds"]
    assert len(checks) == 3 and len(folds) == 3
    assert all(c["present_in_carrier"] for c in checks)


def records_for(result: TrajectoryResult, arm: Arm, bill: Bill | None = None) -> UnitRecords:
    """The full rows-table record: the carrier's columns inside the engine's shared ones (the
    bill as the request boundary counted it)."""
    spec = UnitSpec("run", "cfg", "model", "fam", arm.name, 0, 0, 0)
    carrier = CarrierContext(
        scenario="small",
        fixture_sha256="0" * 64,
        system_prompt_sha256=arm.system_prompt_sha256,
        declared_capacity_chars=arm.declared_capacity_chars,
    )
    ctx = RowContext(
        endpoint=EndpointConfig(config_id="cfg", model="model", family="fam"),
        publication_date=None,
        seed=11,
        simulated=False,
    )
    now = datetime.now(UTC)
    return unit_records(spec, ctx, trajectory_records(carrier, result), now, now, bill=bill)


async def test_a_reply_from_the_simulator_marks_the_row_simulated(arms: dict[str, Arm]) -> None:
    arm = arms["m"]
    sim = ChatResponse(text="## Goal\nx", finish_reason="stop", simulated=True)
    client = boundary(ScriptedClient(folds=[sim, good_fold(arm), good_fold(arm)], recall=text("")))
    row = records_for(await run_trajectory(client, inputs(arm)), arm, client.bill.bill()).row
    assert row["simulated"] is True
