"""tau-bench: 200 runs of OpenAI chat messages, one transcript each, a near no-op corpus."""

from __future__ import annotations

import json

import pytest

from pipeline.toolout.corpus import describe
from pipeline.toolout.importers import tau_bench
from pipeline.toolout.transcript import Transcript, TranscriptError
from tests.toolout import read

AIRLINE = "tau-bench/gpt-4o-airline.json"


@pytest.fixture(scope="module")
def airline() -> list[Transcript]:
    return tau_bench.parse(read(AIRLINE), AIRLINE)


def _run(traj: list[dict[str, object]], task_id: int = 0) -> dict[str, object]:
    return {"task_id": task_id, "trial": 0, "reward": 1.0, "info": {}, "traj": traj}


FUNCTION = {"name": "get_user_details", "arguments": "{}"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": FUNCTION}],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{}"}


def test_the_airline_file_gives_200_transcripts_with_counts_read_by_hand(
    airline: list[Transcript],
) -> None:
    assert len(airline) == 200
    assert len({t.id for t in airline}) == 200
    assert airline[0].id == "tau-bench/gpt-4o-airline/task0-trial0"
    assert sum(len(t.messages) for t in airline) == 5308
    assert sum(len(t.tool_outputs) for t in airline) == 1164
    assert sum(t.requests for t in airline) == 2454


def test_every_result_answers_the_latest_call_with_its_id(airline: list[Transcript]) -> None:
    for transcript in airline:
        latest: dict[str, str] = {}  # gpt-4o reuses ids across turns, so walk in order
        for message in transcript.messages:
            latest.update((c.id, c.name) for c in message.tool_calls)
            if message.is_tool_output:
                assert latest.pop(message.tool_call_id or "") == message.name


def test_the_airline_corpus_is_flagged_near_no_op(airline: list[Transcript]) -> None:
    description = describe(airline)
    assert description.eligible_outputs == 34
    assert description.near_no_op
    assert "near no-op" in description.summary()


def test_a_call_id_may_come_back_once_its_call_is_answered() -> None:
    traj = [{"role": "user", "content": "hi"}, CALL, RESULT, CALL, RESULT]
    [transcript] = tau_bench.parse(json.dumps([_run(traj)]).encode(), AIRLINE)
    assert len(transcript.tool_outputs) == 2


@pytest.mark.parametrize(
    ("runs", "record", "problem"),
    [
        ('[{"task_id": 0', "file", "not JSON"),
        ('{"runs": []}', "file", "expected an array, got object"),
        (json.dumps([_run([]), {"task_id": 1, "trial": 0}]), "run 1", "missing key 'traj'"),
        (json.dumps([_run([RESULT])]), "run 0 traj[0]", "tool result without a call"),
        (
            json.dumps([_run([CALL, {"role": "user", "content": "?"}])]),
            "run 0 traj[1]",
            "has no result",
        ),
        (
            json.dumps([_run([{"role": "tool", "content": "x"}])]),
            "run 0 traj[0]",
            "without 'tool_call_id'",
        ),
    ],
)
def test_malformed_input_is_one_line_naming_file_run_and_problem(
    runs: str, record: str, problem: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        tau_bench.parse(runs.encode(), AIRLINE)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{AIRLINE}: {record}: ")
    assert problem in message


def test_a_malformed_run_costs_only_itself() -> None:
    data = json.dumps([_run([CALL, RESULT]), {"trial": 0}, _run([], task_id=2)]).encode()
    parsed = tau_bench.parse_records(data, AIRLINE)
    assert [type(p).__name__ for p in parsed] == ["Transcript", "TranscriptError", "Transcript"]
    assert str(parsed[1]) == f"{AIRLINE}: run 1: missing key 'task_id'"
