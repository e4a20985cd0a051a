"""A user's own JSONL of OpenAI chat messages: one file, one transcript, and back again."""

from __future__ import annotations

import pytest

from pipeline.toolout.importers import jsonl
from pipeline.toolout.transcript import RecordedUsage, TranscriptError

HAND_WRITTEN = b"".join(
    [
        b'{"role": "system", "content": "You are a coding agent.", "timestamp": 1760000000}\n',
        b'{"role": "user", "content": "Fix the failing test.", '
        b'"timestamp": "2025-10-09T08:53:21Z"}\n',
        b'{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", ',
        b'"function": {"name": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}}], ',
        b'"usage": {"prompt_tokens": 1200, "completion_tokens": 20, ',
        b'"prompt_tokens_details": {"cached_tokens": 1024}}}\n',
        b'{"role": "tool", "tool_call_id": "c1", "content": "def f():\\n    return 1\\n"}\n',
        b"\n",
        b'{"role": "assistant", "content": "Done: f returns 1.", "timestamp": 1760000012.5}\n',
    ]
)


def test_a_hand_written_transcript_is_read_with_its_timestamps_and_usage() -> None:
    [transcript] = jsonl.parse(HAND_WRITTEN, "jsonl/session.jsonl")
    assert transcript.id == "jsonl/session"
    assert [m.role for m in transcript.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert transcript.messages[1].timestamp == 1760000001.0
    assert transcript.messages[2].usage == RecordedUsage(1200, 20, 1024)
    result = transcript.tool_outputs[0]
    assert (result.name, result.content) == ("read_file", "def f():\n    return 1\n")
    assert transcript.requests == 2


def test_a_transcript_round_trips_through_to_jsonl() -> None:
    [transcript] = jsonl.parse(HAND_WRITTEN, "jsonl/session.jsonl")
    [again] = jsonl.parse(jsonl.to_jsonl(transcript), "jsonl/session.jsonl")
    assert again == transcript
    assert jsonl.to_jsonl(again) == jsonl.to_jsonl(transcript)


def test_text_parts_are_joined() -> None:
    parts = b'[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]'
    data = b'{"role": "user", "content": ' + parts + b"}\n"
    [transcript] = jsonl.parse(data, "u.jsonl")
    assert transcript.messages[0].content == "ab"


@pytest.mark.parametrize(
    ("data", "record", "problem"),
    [
        (b'{"role": "user", "content": "hi"}\n{"role": "assistant", "cont', "line 2", "not JSON"),
        (b'["user", "hi"]\n', "line 1", "expected an object, got array"),
        (b'{"content": "hi"}\n', "line 1", "missing key 'role'"),
        (
            b'{"role": "tool", "tool_call_id": "nope", "content": "x"}\n',
            "line 1",
            "tool result without a call",
        ),
        (
            b'{"role": "user", "content": [{"type": "image_url"}]}\n',
            "line 1 content[0]",
            "non-text content part",
        ),
        (
            b'{"role": "user", "content": "hi", "timestamp": "yesterday"}\n',
            "line 1",
            "bad timestamp",
        ),
        (b"\n\n", "file", "no messages"),
    ],
)
def test_malformed_input_is_one_line_naming_file_line_and_problem(
    data: bytes, record: str, problem: str
) -> None:
    with pytest.raises(TranscriptError) as caught:
        jsonl.parse(data, "mine/bad.jsonl")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"mine/bad.jsonl: {record}: ")
    assert problem in message
