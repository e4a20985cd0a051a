"""SWE-agent `.traj` files: one JSON object, one transcript.

Mapping (decisions the format leaves to us, also in docs/toolout.md):
- Prefix: the `history` messages before its first assistant turn (system prompt, any
  demonstration `is_demo` user messages, the issue), in order: that is what the first request
  sent.
- Turns: each `trajectory[i]` step is one assistant turn whose content is the step's `thought`
  (the `response` when the thought is empty), with one tool call built from `action`, followed
  by one tool result whose content is the raw `observation`. The command lives in the call's
  arguments, so its bytes are counted once. Call ids are `call_<i>`.
- A file with no `trajectory` (a demonstration keeps only `history`) is read from `history`:
  each assistant message with an `action` is a step, and the message after it is the
  observation.
- An empty action (the model produced no command) is an assistant turn without a call; its
  observation (SWE-agent's format-error reply) becomes a user message.
- Tool names: the action's first word through `COMMAND_TOOLS`; the raw command is the
  arguments. `.traj` steps have no timestamps or per-request usage: `model_stats` (totals) and
  the summed `execution_time` go to `meta`, and every message's timestamp and usage stay None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.toolout.importers._common import (
    ChatBuilder,
    Parsed,
    decode_json,
    expect_object,
    first_error,
    one_transcript,
    opt_object,
    opt_str,
    req_array,
    req_str,
    text_content,
    transcript_id,
)
from pipeline.toolout.transcript import Message, Role, ToolCall, Transcript, TranscriptError

CORPUS = "swe-agent"

# The first word of an action -> the tool name the policies match. Reads stay reads (the seed's
# `read*` rule keeps them exact), mutations carry an `edit` token (forced exact), searches get
# grep/find/ls names (the seed's `grep*` rule compacts them). Anything else is a shell command.
COMMAND_TOOLS: Mapping[str, str] = {
    # file reads
    "open": "read",
    "cat": "read",
    "head": "read",
    "tail": "read",
    "less": "read",
    "more": "read",
    # moving the editor window over an open file
    "goto": "view",
    "scroll_up": "view",
    "scroll_down": "view",
    "set_cursors": "view",
    # mutations
    "edit": "edit",
    "create": "edit",
    "insert": "edit",
    "append": "edit",
    "str_replace": "edit",
    "undo_edit": "edit",
    # searches
    "find_file": "find",
    "find": "find",
    "search_file": "grep",
    "search_dir": "grep",
    "grep": "grep",
    "egrep": "grep",
    "rg": "grep",
    "ls": "ls",
    # shell and the end of the session
    "python": "bash",
    "python3": "bash",
    "pytest": "bash",
    "pip": "bash",
    "bash": "bash",
    "sh": "bash",
    "submit": "submit",
}
UNKNOWN_TOOL = "bash"  # any other first word (curl, rm, ./script, cd, ...) is a shell command

# SWE-agent 1.x's `str_replace_editor <subcommand>`: `view` reads, every other subcommand edits.
EDITOR_SUBCOMMAND_TOOLS: Mapping[str, str] = {"view": "read"}
EDITOR = "str_replace_editor"


def tool_name(action: str) -> str:
    """The tool name of a SWE-agent action: its first word through `COMMAND_TOOLS`."""
    words = action.split(maxsplit=2)
    if not words:
        return UNKNOWN_TOOL
    if words[0] == EDITOR:
        return EDITOR_SUBCOMMAND_TOOLS.get(words[1] if len(words) > 1 else "", "edit")
    return COMMAND_TOOLS.get(words[0], UNKNOWN_TOOL)


def _prefix(history: Sequence[Any], source: str, builder: ChatBuilder) -> None:
    for i, raw in enumerate(history):
        record = f"history[{i}]"
        obj = expect_object(raw, source, record)
        role = req_str(obj, "role", source, record)
        if role == "assistant":
            return
        if role not in ("system", "user"):
            raise TranscriptError(source, record, f"role {role!r} before the first assistant turn")
        content = text_content(obj.get("content"), source, record)
        speaker: Role = "system" if role == "system" else "user"
        builder.add(Message(role=speaker, content=content), record)


def _step(
    builder: ChatBuilder, *, index: int, action: str, thought: str, observation: str, record: str
) -> None:
    if not action.strip():
        builder.add(Message(role="assistant", content=thought), record)
        builder.add(Message(role="user", content=observation), record)
        return
    call = ToolCall(id=f"call_{index}", name=tool_name(action), arguments=action)
    builder.add(Message(role="assistant", content=thought, tool_calls=(call,)), record)
    builder.add(Message(role="tool", content=observation, tool_call_id=call.id), record)


def _thought(step: Mapping[str, Any], source: str, record: str) -> str:
    thought = opt_str(step, "thought", source, record)
    return thought or opt_str(step, "response", source, record) or ""


def _from_trajectory(steps: Sequence[Any], source: str, builder: ChatBuilder) -> float | None:
    total: float | None = None
    for i, raw in enumerate(steps):
        record = f"trajectory[{i}]"
        step = expect_object(raw, source, record)
        action = req_str(step, "action", source, record)
        observation = req_str(step, "observation", source, record)
        _step(
            builder,
            index=i,
            action=action,
            thought=_thought(step, source, record),
            observation=observation,
            record=record,
        )
        seconds = step.get("execution_time")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            total = (total or 0.0) + float(seconds)
    return total


def _from_history(history: Sequence[Any], source: str, builder: ChatBuilder) -> None:
    step = 0
    objects = [expect_object(m, source, f"history[{i}]") for i, m in enumerate(history)]
    first = next((i for i, m in enumerate(objects) if m.get("role") == "assistant"), len(objects))
    i = first
    while i < len(objects):
        record = f"history[{i}]"
        message = objects[i]
        if message.get("role") != "assistant":
            raise TranscriptError(
                source, record, f"expected an assistant turn, got {message.get('role')!r}"
            )
        action = req_str(message, "action", source, record)
        if i + 1 >= len(objects):
            raise TranscriptError(source, record, "action without an observation")
        observation = text_content(objects[i + 1].get("content"), source, f"history[{i + 1}]")
        _step(
            builder,
            index=step,
            action=action,
            thought=_thought(message, source, record),
            observation=observation or "",
            record=record,
        )
        step += 1
        i += 2


def _parse(data: bytes, source: str) -> Transcript:
    top = expect_object(decode_json(data, source), source, "file")
    history = req_array(top, "history", source, "file")
    builder = ChatBuilder(source)
    _prefix(history, source, builder)
    execution_time: float | None = None
    if "trajectory" in top:
        execution_time = _from_trajectory(
            req_array(top, "trajectory", source, "file"), source, builder
        )
    else:
        _from_history(history, source, builder)
    info = opt_object(top, "info", source, "file")
    meta: dict[str, Any] = {
        "steps_from": "trajectory" if "trajectory" in top else "history",
        "exit_status": info.get("exit_status"),
        "model_stats": info.get("model_stats"),
        "execution_time_s": execution_time,
    }
    return Transcript(
        id=transcript_id(CORPUS, source),
        corpus=CORPUS,
        source=source,
        messages=tuple(builder.messages),
        meta=meta,
    )


def parse_records(data: bytes, source: str) -> list[Parsed]:
    """The file's one transcript, or the problem that stops it (a list, like the other corpora)."""
    return one_transcript(_parse, data, source)


def parse(data: bytes, source: str) -> list[Transcript]:
    """The `.traj` file's transcript; a malformed file raises `TranscriptError`."""
    return first_error(parse_records(data, source))
