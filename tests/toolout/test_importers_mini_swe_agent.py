"""mini-swe-agent `.traj.json`: one bash block is one call, the next user message its output."""

from __future__ import annotations

import json

import pytest

from pipeline.toolout.importers import mini_swe_agent
from pipeline.toolout.transcript import TranscriptError
from tests.toolout import read, shipped

GITHUB_ISSUE = "mini-swe-agent/github_issue.traj.json"


def _file(*messages: dict[str, object]) -> bytes:
    return json.dumps(list(messages)).encode()


def _bash(command: str) -> str:
    return f"THOUGHT\n\n```bash\n{command}\n```"


@pytest.mark.parametrize("source", shipped("mini-swe-agent"))
def test_every_shipped_trajectory_parses_and_every_result_answers_a_call(source: str) -> None:
    [transcript] = mini_swe_agent.parse(read(source), source)
    calls = {c.id for m in transcript.messages for c in m.tool_calls}
    assert transcript.tool_outputs
    assert {o.tool_call_id for o in transcript.tool_outputs} <= calls


def test_the_github_issue_trajectory_has_ten_bash_calls_read_by_hand() -> None:
    [transcript] = mini_swe_agent.parse(read(GITHUB_ISSUE), GITHUB_ISSUE)
    assert len(transcript.messages) == 22
    assert transcript.requests == 10
    assert len(transcript.tool_outputs) == 10
    first = transcript.messages[2].tool_calls[0]
    assert (first.name, first.arguments) == (
        "bash",
        "cat /Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py",
    )
    assert (transcript.tool_outputs[0].content or "").startswith("<returncode>1</returncode>")
    assert (transcript.tool_outputs[-1].content or "").startswith("diff --git")


def test_a_turn_without_exactly_one_block_is_not_a_call() -> None:
    data = _file(
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "no block here"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action"},
        {"role": "assistant", "content": _bash("ls") + _bash("pwd")},
        {"role": "user", "content": "format error again"},
        {"role": "assistant", "content": _bash("ls")},
        {"role": "user", "content": "<returncode>0</returncode>"},
    )
    [transcript] = mini_swe_agent.parse(data, "m.traj.json")
    assert [m.role for m in transcript.messages] == [
        "system",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]


def test_the_object_form_keeps_info_in_meta() -> None:
    data = json.dumps(
        {
            "info": {"exit_status": "Submitted", "model_stats": {"api_calls": 1}},
            "messages": [{"role": "assistant", "content": _bash("ls")}],
            "trajectory_format": "mini-swe-agent-1",
        }
    ).encode()
    [transcript] = mini_swe_agent.parse(data, "m.traj.json")
    assert transcript.meta["exit_status"] == "Submitted"


def test_the_v2_exit_message_is_dropped_since_no_model_is_sent_it() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    data = json.dumps(
        {
            "info": {"exit_status": "Submitted", "submission": "diff"},
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "assistant", "content": "look", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>"},
                {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
            ],
            "trajectory_format": "mini-swe-agent-1.1",
        }
    ).encode()
    [transcript] = mini_swe_agent.parse(data, "m.traj.json")
    assert [m.role for m in transcript.messages] == ["system", "assistant", "tool"]
    assert transcript.meta["exit_status"] == "Submitted"


@pytest.mark.parametrize(
    ("data", "record", "problem"),
    [
        (b'[{"role": "system", "content": "s"}', "file", "not JSON"),
        (b'"messages"', "file", "expected an array of messages"),
        (
            _file({"role": "system", "content": "s"}, {"content": "x"}),
            "messages[1]",
            "missing key 'role'",
        ),
        (_file({"role": "robot", "content": "x"}), "messages[0]", "unknown role 'robot'"),
        (
            _file({"role": "tool", "tool_call_id": "c9", "content": "x"}),
            "messages[0]",
            "tool result without a call",
        ),
    ],
)
def test_malformed_input_is_one_line_naming_file_record_and_problem(
    data: bytes, record: str, problem: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        mini_swe_agent.parse(data, "mini-swe-agent/bad.traj.json")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"mini-swe-agent/bad.traj.json: {record}: ")
    assert problem in message
