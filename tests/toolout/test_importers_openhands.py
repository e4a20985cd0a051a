"""OpenHands events: actions are calls, observations answer the action their `cause` names."""

from __future__ import annotations

import json

import pytest

from pipeline.toolout.importers import openhands
from pipeline.toolout.transcript import TranscriptError
from tests.toolout import read, shipped

GUI_MODE = "openhands/basic_gui_mode.json"
MULTI_SWE = "openhands/multi_swe_bench_example_output.jsonl"
RESOLVER = "openhands/resolver_mock_output.jsonl"


def _events(*events: dict[str, object]) -> bytes:
    return json.dumps(list(events)).encode()


USER = {"id": 0, "timestamp": "2025-01-01T00:00:00", "source": "user", "action": "message",
        "args": {"content": "hi"}}  # fmt: skip
RUN = {"id": 1, "timestamp": "2025-01-01T00:00:01", "source": "agent", "action": "run",
       "args": {"command": "ls", "thought": "look"}}  # fmt: skip


@pytest.mark.parametrize("source", shipped("openhands"))
def test_every_shipped_file_parses_and_every_result_answers_a_call(source: str) -> None:
    transcripts = openhands.parse(read(source), source)
    assert transcripts
    for transcript in transcripts:
        calls = {c.id: c.name for m in transcript.messages for c in m.tool_calls}
        for output in transcript.tool_outputs:
            assert calls[output.tool_call_id or ""] == output.name


def test_the_gui_mode_events_read_by_hand() -> None:
    [transcript] = openhands.parse(read(GUI_MODE), GUI_MODE)
    assert [m.role for m in transcript.messages] == ["user"] + ["assistant", "tool"] * 4 + [
        "assistant"
    ]
    assert [c.name for m in transcript.messages for c in m.tool_calls] == [
        "bash",
        "edit",
        "edit",
        "bash",
    ]
    assert transcript.meta["skipped_events"] == {
        "action:change_agent_state": 1,
        "observation:agent_state_changed": 4,
        "observation:null": 3,
    }
    run = transcript.messages[1]
    assert run.tool_calls[0].arguments == '{"command": "mkdir -p /workspace/todo-app"}'
    assert run.usage is not None
    assert (run.usage.prompt_tokens, run.usage.completion_tokens) == (3439, 104)
    assert run.timestamp == pytest.approx(1737404975.040676)
    # the exit-code line OpenHands appends for the model is part of the result
    assert transcript.messages[2].content == "\n[The command completed with exit code 0.]"


def test_the_multi_swe_bench_output_is_one_transcript_a_line_with_counts_read_by_hand() -> None:
    transcripts = openhands.parse(read(MULTI_SWE), MULTI_SWE)
    assert [t.id for t in transcripts] == [
        f"openhands/multi_swe_bench_example_output/{n}" for n in (1, 2, 3)
    ]
    assert [len(t.tool_outputs) for t in transcripts] == [22, 32, 49]
    assert [t.requests for t in transcripts] == [23, 33, 49]
    assert transcripts[0].messages[0].role == "system"
    assert transcripts[0].meta["instance_id"] == "ponylang__ponyc-4595"
    # the rejected call's error reached the model as a user message
    assert sum(m.role == "user" for m in transcripts[1].messages) == 2


def test_legacy_events_pair_each_observation_with_the_action_before_it() -> None:
    first, second = openhands.parse(read(RESOLVER), RESOLVER)
    assert [m.role for m in first.messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert [c.name for m in first.messages for c in m.tool_calls] == [
        "bash",
        "ipython",
        "bash",
        "finish",
    ]
    assert json.loads(first.messages[1].tool_calls[0].arguments) == {"command": "touch LICENSE"}
    assert len(second.tool_outputs) == 21


def test_actions_of_one_model_response_are_one_turn_with_several_calls() -> None:
    def action(event_id: int, call: str) -> dict[str, object]:
        response = {"id": "resp-1", "choices": [{"message": {"content": "two at once"}}]}
        metadata = {
            "function_name": "execute_bash",
            "tool_call_id": call,
            "model_response": response,
        }
        return {**RUN, "id": event_id, "tool_call_metadata": metadata}

    def result(event_id: int, cause: int) -> dict[str, object]:
        return {
            "id": event_id,
            "source": "agent",
            "observation": "run",
            "cause": cause,
            "content": "ok",
        }

    data = _events(USER, action(1, "a"), result(2, 1), action(3, "b"), result(4, 3))
    [transcript] = openhands.parse(data, "openhands/x.json")
    assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "tool"]
    assert [c.id for c in transcript.messages[1].tool_calls] == ["a", "b"]
    assert transcript.messages[1].content == "two at once"


@pytest.mark.parametrize(
    ("data", "record", "problem"),
    [
        (b'[{"id": 0, "action": "message"', "file", "not JSON"),
        (b'{"events": []}', "file", "expected an array of events"),
        (
            _events(USER, {"id": 1, "source": "agent"}),
            "events[1]",
            "neither an action nor an observation",
        ),
        (
            _events(USER, {"id": 2, "observation": "run", "cause": 99, "content": "x"}),
            "events[1]",
            "tool result without a call",
        ),
        (
            _events(USER, RUN, {"id": 2, "observation": "run", "cause": 1}),
            "events[2]",
            "without text content",
        ),
        (
            _events(USER, {**RUN, "action": "condensation"}),
            "events[1]",
            "unmapped action 'condensation'",
        ),
    ],
)
def test_malformed_input_is_one_line_naming_file_record_and_problem(
    data: bytes, record: str, problem: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        openhands.parse(data, "openhands/bad.json")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"openhands/bad.json: {record}: ")
    assert problem in message


def test_a_bad_jsonl_line_costs_only_its_own_transcript() -> None:
    good = json.dumps({"history": [USER, RUN]})
    data = f'{good}\n{{"history": [\n{{"instance_id": 3}}\n'.encode()
    parsed = openhands.parse_records(data, "openhands/out.jsonl")
    assert [type(p).__name__ for p in parsed] == [
        "Transcript",
        "TranscriptError",
        "TranscriptError",
    ]
    assert str(parsed[1]).startswith("openhands/out.jsonl: line 2: not JSON")
    assert str(parsed[2]) == "openhands/out.jsonl: line 3: missing key 'history'"
    with pytest.raises(TranscriptError, match="line 2"):
        openhands.parse(data, "openhands/out.jsonl")
