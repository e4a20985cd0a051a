"""SWE-agent `.traj`: steps become call/result pairs, actions map to tool names by the table."""

from __future__ import annotations

import json

import pytest

from pipeline.toolout.importers import swe_agent
from pipeline.toolout.transcript import TranscriptError
from tests.toolout import read, shipped

TEST_REPO = (
    "swe-agent/tests/test_data/trajectories/"
    "gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/"
    "6e44b9__sweagenttestrepo-1c2844.traj"
)


def _traj(steps: list[dict[str, object]]) -> bytes:
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "issue"}]
    return json.dumps({"history": history, "trajectory": steps}).encode()


def _step(action: str, observation: str = "out") -> dict[str, object]:
    return {"action": action, "observation": observation, "thought": "t", "response": "r"}


@pytest.mark.parametrize("source", shipped("swe-agent"))
def test_every_shipped_trajectory_parses_and_every_result_answers_a_call(source: str) -> None:
    [transcript] = swe_agent.parse(read(source), source)
    calls = {c.id: c.name for m in transcript.messages for c in m.tool_calls}
    assert transcript.tool_outputs
    for output in transcript.tool_outputs:
        assert calls[output.tool_call_id or ""] == output.name


def test_the_test_repo_trajectory_has_five_steps_read_by_hand() -> None:
    [transcript] = swe_agent.parse(read(TEST_REPO), TEST_REPO)
    assert [m.role for m in transcript.messages[:2]] == ["system", "user"]
    assert transcript.requests == 5
    assert len(transcript.tool_outputs) == 5
    names = [c.name for m in transcript.messages for c in m.tool_calls]
    assert names == ["find", "read", "edit", "bash", "submit"]
    assert (
        transcript.messages[4].tool_calls[0].arguments
        == 'open "/SWE-agent__test-repo/tests/missing_colon.py"'
    )
    assert transcript.tool_outputs[3].content == "8.2"
    assert transcript.meta["model_stats"]["api_calls"] == 5
    assert transcript.id == TEST_REPO.removesuffix(".traj")


@pytest.mark.parametrize(
    ("action", "tool"),
    [
        ("open foo.py", "read"),
        ('open "src/marshmallow/fields.py" 1474', "read"),
        ("cat setup.py", "read"),
        ("edit 1:3\nx = 1\nend_of_edit", "edit"),
        ("create reproduce.py", "edit"),
        ("insert 'x'", "edit"),
        ("str_replace_editor str_replace /a.py --old_str x --new_str y", "edit"),
        ("str_replace_editor view /a.py", "read"),
        ("goto 120", "view"),
        ("scroll_down", "view"),
        ("find_file fields.py src", "find"),
        ("search_dir TimeDelta", "grep"),
        ("search_file foo", "grep"),
        ("grep -rn foo .", "grep"),
        ("ls -a", "ls"),
        ("python reproduce.py", "bash"),
        ("pytest -x tests", "bash"),
        ("pip install -e .", "bash"),
        ("submit", "submit"),
        ("curl http://example.com", "bash"),
        ("./rock", "bash"),
        ("cd src && python x.py", "bash"),
    ],
)
def test_the_first_word_of_an_action_maps_to_its_tool_name(action: str, tool: str) -> None:
    assert swe_agent.tool_name(action) == tool


def test_the_raw_command_is_kept_as_the_arguments() -> None:
    [transcript] = swe_agent.parse(_traj([_step("open foo.py"), _step("edit 1:3")]), "x.traj")
    calls = [c for m in transcript.messages for c in m.tool_calls]
    assert [(c.name, c.arguments) for c in calls] == [("read", "open foo.py"), ("edit", "edit 1:3")]
    assert transcript.messages[2].content == "t"  # the thought, not the response


def test_an_empty_action_is_a_turn_without_a_call_and_its_reply_a_user_message() -> None:
    [transcript] = swe_agent.parse(_traj([_step("", "format error")]), "x.traj")
    assert [m.role for m in transcript.messages] == ["system", "user", "assistant", "user"]
    assert transcript.messages[-1].content == "format error"


def test_a_history_only_file_is_read_from_its_history() -> None:
    source = "swe-agent/trajectories/demonstrations/function_calling_simple.traj"
    [transcript] = swe_agent.parse(read(source), source)
    assert transcript.meta["steps_from"] == "history"
    assert [c.name for m in transcript.messages for c in m.tool_calls] == [
        "find",
        "read",
        "edit",
        "bash",
        "submit",
    ]


@pytest.mark.parametrize(
    ("data", "record", "problem"),
    [
        (b'{"history": [', "file", "not JSON"),
        (b"[]", "file", "expected an object, got array"),
        (b'{"trajectory": []}', "file", "missing key 'history'"),
        (
            _traj([_step("ls"), {"action": "ls", "thought": "t"}]),
            "trajectory[1]",
            "missing key 'observation'",
        ),
        (
            _traj([{"action": 3, "observation": "o"}]),
            "trajectory[0]",
            "'action' is integer, expected string",
        ),
    ],
)
def test_malformed_input_is_one_line_naming_file_record_and_problem(
    data: bytes, record: str, problem: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        swe_agent.parse(data, "swe-agent/bad.traj")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"swe-agent/bad.traj: {record}: ")
    assert problem in message
