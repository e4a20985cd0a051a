"""mini-swe-agent `.traj.json` files: one transcript of plain chat messages.

The file is a JSON array of `{role, content}` messages (the shipped test trajectories), or an
object whose `messages` holds that array (`trajectory_format` mini-swe-agent-1 and later, with
`info` carrying `exit_status` and `model_stats`, kept in `meta`).

mini-swe-agent has no tool-call API: the model writes one fenced bash block per turn and the
harness replies with a user message holding the command output. The explicit mapping:
- an assistant message with exactly one ```` ```bash ```` or ```` ```mswea_bash_command ````
  block makes one tool call named `bash`, whose arguments are the block's command text (the
  message keeps its full content, since that is what is resent); call ids are `call_<i>` by
  message index;
- the next message, if it is a user message, is that call's tool result, its content verbatim
  (`<returncode>...</returncode><output>...</output>`, or the submission for the last one);
- an assistant message with no block or several is not a call (mini-swe-agent rejects it), and
  the user message after it (the format-error reply) stays a user message;
- an assistant message that already carries OpenAI `tool_calls` (the toolcall models of v2) is
  read as Chat Completions, with `role: "tool"` results.
- a `role: "exit"` message (v2's last one, holding the exit status and submission that `info`
  repeats) is dropped: the agent stops on it and never sends it to a model.
Per-message `extra.timestamp` and `extra.response.usage` are read where present.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.toolout.importers._common import (
    ChatBuilder,
    Parsed,
    chat_message,
    decode_json,
    expect_object,
    first_error,
    one_transcript,
    opt_object,
    req_array,
    req_str,
    text_content,
    timestamp,
    transcript_id,
    usage,
)
from pipeline.toolout.transcript import Message, Role, ToolCall, Transcript, TranscriptError

CORPUS = "mini-swe-agent"
BASH_BLOCK = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.DOTALL)
TOOL = "bash"
EXIT = "exit"  # v2's last message (exit_status, submission; also in `info`)


def _messages(top: Any, source: str) -> tuple[Sequence[Any], Mapping[str, Any]]:
    if isinstance(top, list):
        return top, {}
    if isinstance(top, dict):
        info = opt_object(top, "info", source, "file")
        meta = {
            "exit_status": info.get("exit_status"),
            "model_stats": info.get("model_stats"),
            "trajectory_format": top.get("trajectory_format"),
        }
        return req_array(top, "messages", source, "file"), meta
    raise TranscriptError(
        source, "file", "expected an array of messages or an object with 'messages'"
    )


def _extras(message: Mapping[str, Any], source: str, record: str) -> tuple[float | None, Any]:
    extra = opt_object(message, "extra", source, record)
    moment = timestamp(message.get("timestamp", extra.get("timestamp")), source, record)
    response = extra.get("response")
    recorded = usage(response.get("usage")) if isinstance(response, dict) else None
    return moment, recorded


def _parse(data: bytes, source: str) -> Transcript:
    raw_messages, meta = _messages(decode_json(data, source), source)
    builder = ChatBuilder(source)
    pending: str | None = None  # the bash call awaiting its output message
    for i, raw in enumerate(raw_messages):
        record = f"messages[{i}]"
        obj = expect_object(raw, source, record)
        role = req_str(obj, "role", source, record)
        if role == EXIT:  # the agent's end marker: the loop stops there, no model sees it
            continue
        if obj.get("tool_calls") or role == "tool":
            builder.add(chat_message(obj, source, record), record)
            pending = None
            continue
        content = text_content(obj.get("content"), source, record)
        moment, recorded = _extras(obj, source, record)
        if role == "user" and pending is not None:
            message = Message(role="tool", content=content, tool_call_id=pending, timestamp=moment)
            pending = None
        elif role == "assistant":
            blocks = BASH_BLOCK.findall(content or "")
            calls = (
                (ToolCall(id=f"call_{i}", name=TOOL, arguments=blocks[0]),)
                if len(blocks) == 1
                else ()
            )
            pending = calls[0].id if calls else None
            message = Message(
                role="assistant",
                content=content,
                tool_calls=calls,
                timestamp=moment,
                usage=recorded,
            )
        elif role in ("system", "user"):
            speaker: Role = "system" if role == "system" else "user"
            message = Message(role=speaker, content=content, timestamp=moment)
        else:
            raise TranscriptError(source, record, f"unknown role {role!r}")
        builder.add(message, record)
    return Transcript(
        id=transcript_id(CORPUS, source),
        corpus=CORPUS,
        source=source,
        messages=tuple(builder.messages),
        meta=dict(meta),
    )


def parse_records(data: bytes, source: str) -> list[Parsed]:
    """The file's one transcript, or the problem that stops it."""
    return one_transcript(_parse, data, source)


def parse(data: bytes, source: str) -> list[Transcript]:
    """The `.traj.json` file's transcript; a malformed file raises `TranscriptError`."""
    return first_error(parse_records(data, source))
