"""OpenHands event streams: a `.json` array of events, or `.jsonl` output with a `history` a line.

Two event shapes occur in the shipped files, and both are read:
- current: `{id, timestamp, source, action | observation, args | extras, content, cause,
  tool_call_metadata{function_name, tool_call_id, model_response}}`;
- legacy (resolver output): no `id`, `source`, `cause` or timestamps; an action's arguments
  sit beside `action`, and an observation follows the action it answers.

Mapping (decisions, also in docs/toolout.md):
- `system` action -> system message; `message` action -> a user or assistant message by its
  `source` (a legacy message without a source is the user's when no assistant turn came yet).
- A tool action (`ACTION_TOOLS`; an unlisted one with `tool_call_metadata` keeps its
  `function_name`) -> an assistant turn with one tool call. Its content is the model's text
  from `model_response` (else the action's `thought`); its arguments are the JSON the model
  sent (else the action's args as JSON, without `thought` and harness state such as
  `is_confirmed`); its id is the recorded
  `tool_call_id` (else `event_<id>` / `call_<index>`). Actions of one model response (same
  `model_response.id`) are one assistant turn with several calls. Usage is that response's
  `usage`; timestamps are the events'.
- An observation -> the tool result of the action its `cause` names (else of its recorded
  `tool_call_id`; legacy: of the action just before it); content is its `content`, wrapped in
  the `extras.metadata` prefix and suffix when recorded (the "[The command completed with exit
  code N.]" line OpenHands appends to command output for the model).
  An `error` observation linked to no action (a call OpenHands rejected before running it) is
  a user message, since that is how the model saw it.
- Bookkeeping events the model never sees (`SKIPPED_EVENTS`) are passed over and counted in
  `meta["skipped_events"]`; `recall` is among them because the rendered workspace-context text
  is not recorded. Anything else unmappable (e.g. `condensation`, which rewrites history) is an
  error.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.toolout.importers._common import (
    ChatBuilder,
    Parsed,
    brief,
    decode_json,
    expect_object,
    first_error,
    opt_object,
    opt_str,
    req_array,
    text_content,
    timestamp,
    transcript_id,
    usage,
)
from pipeline.toolout.transcript import (
    Message,
    RecordedUsage,
    ToolCall,
    Transcript,
    TranscriptError,
)

CORPUS = "openhands"

ACTION_TOOLS: Mapping[str, str] = {
    "run": "bash",
    "run_ipython": "ipython",
    "read": "read",
    "edit": "edit",
    "write": "write",
    "browse": "browse",
    "browse_interactive": "browse",
    "think": "think",
    "finish": "finish",
    "delegate": "delegate",
    "call_tool_mcp": "mcp",
}
SKIPPED_EVENTS: frozenset[tuple[str, str]] = frozenset(
    {
        ("action", "change_agent_state"),
        ("action", "recall"),
        ("observation", "agent_state_changed"),
        ("observation", "null"),
        ("observation", "recall"),
    }
)
# Action fields that are harness state, not what the model sent (left out of rebuilt arguments).
_NOT_ARGUMENTS = frozenset(
    {
        "thought",
        "action_risk",
        "security_risk",
        "is_confirmed",
        "confirmation_state",
        "keep_prompt",
        "kernel_init_code",
        "impl_source",
        "hidden",
        "blocking",
        "is_input",
    }
)


@dataclass
class _Turn:
    """An assistant turn under construction (later actions of its response add calls)."""

    record: str
    content: str | None
    response_id: str | None
    timestamp: float | None
    usage: RecordedUsage | None
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class _Stream:
    """The messages of one event stream, in order, before the call/result rule is checked."""

    source: str
    entries: list[_Turn | tuple[Message, str]] = field(default_factory=list)
    calls_by_event: dict[int, str] = field(default_factory=dict)
    calls_by_id: set[str] = field(default_factory=set)
    pending: str | None = None  # legacy: the last call, answered by the next observation
    skipped: Counter[str] = field(default_factory=Counter)
    assistant_seen: bool = False

    def add(self, message: Message, record: str) -> None:
        self.entries.append((message, record))


def _kind(event: Mapping[str, Any], source: str, record: str) -> tuple[str, str]:
    for kind in ("action", "observation"):
        if kind in event:
            value = event[kind]
            if not isinstance(value, str):
                raise TranscriptError(source, record, f"{kind!r} is not a string: {brief(value)}")
            return kind, value
    raise TranscriptError(source, record, "event is neither an action nor an observation")


def _args(event: Mapping[str, Any], source: str, record: str) -> Mapping[str, Any]:
    if "id" in event:
        return opt_object(event, "args", source, record)
    return {k: v for k, v in event.items() if k not in ("action", "observation")}


def _model_call(metadata: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(response id, the model's text, the call's JSON arguments) from `model_response`."""
    response = metadata.get("model_response")
    if not isinstance(response, dict):
        return None, None, None
    choices = response.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices else None
    if not isinstance(message, dict):
        return response.get("id"), None, None
    text = message.get("content") if isinstance(message.get("content"), str) else None
    arguments = None
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id") == metadata.get("tool_call_id"):
            function = call.get("function")
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                arguments = function["arguments"]
    return response.get("id"), text, arguments


def _tool_action(
    stream: _Stream, event: Mapping[str, Any], name: str, index: int, record: str
) -> None:
    source = stream.source
    args = _args(event, source, record)
    metadata = opt_object(event, "tool_call_metadata", source, record)
    response_id, text, arguments = _model_call(metadata)
    if arguments is None:
        arguments = json.dumps({k: v for k, v in args.items() if k not in _NOT_ARGUMENTS})
    call_id = opt_str(metadata, "tool_call_id", source, record)
    if call_id is None:
        call_id = f"event_{event['id']}" if "id" in event else f"call_{index}"
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    turn = next((e for e in reversed(stream.entries) if isinstance(e, _Turn)), None)
    if turn is not None and response_id is not None and turn.response_id == response_id:
        turn.calls.append(call)  # a later call of the same model response
    else:
        thought = args.get("thought") if isinstance(args.get("thought"), str) else None
        stream.entries.append(
            _Turn(
                record=record,
                content=text if text is not None else thought,
                response_id=response_id,
                timestamp=timestamp(event.get("timestamp"), source, record),
                usage=usage(_response_usage(metadata)),
                calls=[call],
            )
        )
    stream.assistant_seen = True
    stream.calls_by_id.add(call_id)
    if "id" in event:
        stream.calls_by_event[event["id"]] = call_id
    stream.pending = call_id


def _response_usage(metadata: Mapping[str, Any]) -> Any:
    response = metadata.get("model_response")
    return response.get("usage") if isinstance(response, dict) else None


def _message_action(stream: _Stream, event: Mapping[str, Any], record: str) -> None:
    source = stream.source
    args = _args(event, source, record)
    content = text_content(args.get("content", event.get("message")), source, record)
    who = event.get("source")
    if who is None and "id" not in event and not stream.assistant_seen:
        who = "user"  # legacy streams open with the user's instruction and record no source
    moment = timestamp(event.get("timestamp"), source, record)
    if who == "user":
        stream.add(Message(role="user", content=content, timestamp=moment), record)
    elif who == "agent":
        stream.assistant_seen = True
        stream.entries.append(_Turn(record, content, None, moment, None))
    else:
        raise TranscriptError(source, record, f"message from unknown source {brief(who)}")


def _observation(stream: _Stream, event: Mapping[str, Any], kind: str, record: str) -> None:
    source = stream.source
    content = event.get("content", event.get("message"))
    if not isinstance(content, str):
        raise TranscriptError(source, record, f"{kind} observation without text content")
    wrap = opt_object(opt_object(event, "extras", source, record), "metadata", source, record)
    prefix, suffix = wrap.get("prefix"), wrap.get("suffix")
    if isinstance(prefix, str) and isinstance(suffix, str):
        content = prefix + content + suffix  # the exit-code line the model read after output
    moment = timestamp(event.get("timestamp"), source, record)
    cause = event.get("cause")
    metadata = opt_object(event, "tool_call_metadata", source, record)
    if cause is not None:
        if not isinstance(cause, int) or isinstance(cause, bool):
            raise TranscriptError(source, record, f"'cause' is not an event id: {brief(cause)}")
        call_id = stream.calls_by_event.get(cause)
        if call_id is None:
            problem = f"tool result without a call (cause {brief(cause)} made no tool call)"
            raise TranscriptError(source, record, problem)
    elif metadata.get("tool_call_id") in stream.calls_by_id:
        call_id = metadata["tool_call_id"]
    elif "id" not in event and stream.pending is not None:
        call_id = stream.pending
    elif kind == "error":
        stream.add(Message(role="user", content=content, timestamp=moment), record)
        return
    else:
        raise TranscriptError(source, record, f"tool result without a call ({kind} observation)")
    stream.pending = None
    message = Message(role="tool", content=content, tool_call_id=call_id, timestamp=moment)
    stream.add(message, record)


def _event(stream: _Stream, raw: Any, index: int, record: str) -> None:
    source = stream.source
    event = expect_object(raw, source, record)
    kind, name = _kind(event, source, record)
    if (kind, name) in SKIPPED_EVENTS:
        stream.skipped[f"{kind}:{name}"] += 1
    elif kind == "observation":
        _observation(stream, event, name, record)
    elif name == "system":
        args = _args(event, source, record)
        content = text_content(args.get("content", event.get("message")), source, record)
        moment = timestamp(event.get("timestamp"), source, record)
        stream.add(Message(role="system", content=content, timestamp=moment), record)
    elif name == "message":
        _message_action(stream, event, record)
    elif name in ACTION_TOOLS:
        _tool_action(stream, event, ACTION_TOOLS[name], index, record)
    elif isinstance(
        opt_object(event, "tool_call_metadata", source, record).get("function_name"), str
    ):
        function = event["tool_call_metadata"]["function_name"]
        _tool_action(stream, event, function, index, record)
    else:
        raise TranscriptError(source, record, f"unmapped action {brief(name)}")


def _transcript(
    events: Sequence[Any], source: str, prefix: str, index: str | None, meta: Mapping[str, Any]
) -> Transcript:
    stream = _Stream(source)
    for i, raw in enumerate(events):
        _event(stream, raw, i, f"{prefix}[{i}]")
    builder = ChatBuilder(source)
    for entry in stream.entries:
        if isinstance(entry, _Turn):
            message = Message(
                role="assistant",
                content=entry.content,
                tool_calls=tuple(entry.calls),
                timestamp=entry.timestamp,
                usage=entry.usage,
            )
            builder.add(message, entry.record)
        else:
            builder.add(*entry)
    return Transcript(
        id=transcript_id(CORPUS, source, index),
        corpus=CORPUS,
        source=source,
        messages=tuple(builder.messages),
        meta={**meta, "skipped_events": dict(sorted(stream.skipped.items()))},
    )


def _record_meta(record: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    metrics = opt_object(record, "metrics", source, where)
    return {
        "instance_id": record.get("instance_id"),
        "error": record.get("error"),
        "accumulated_cost": metrics.get("accumulated_cost"),
    }


def _jsonl(data: bytes, source: str) -> list[Parsed]:
    parsed: list[Parsed] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        record = f"line {number}"
        try:
            obj = expect_object(decode_json(line, source, record), source, record)
            history = req_array(obj, "history", source, record)
            meta = _record_meta(obj, source, record)
            parsed.append(_transcript(history, source, f"{record} history", str(number), meta))
        except TranscriptError as error:
            parsed.append(error)
    return parsed


def parse_records(data: bytes, source: str) -> list[Parsed]:
    """One entry per transcript: a `.jsonl` line each (by line number), a `.json` file one.

    A `.json` file is an array of events, or one output record with a `history`.
    """
    if source.endswith(".jsonl"):
        return _jsonl(data, source)
    try:
        top = decode_json(data, source)
        if isinstance(top, dict) and "history" in top:
            history = req_array(top, "history", source, "file")
            return [
                _transcript(history, source, "history", None, _record_meta(top, source, "file"))
            ]
        if not isinstance(top, list):
            raise TranscriptError(source, "file", "expected an array of events")
        return [_transcript(top, source, "events", None, {})]
    except TranscriptError as error:
        return [error]


def parse(data: bytes, source: str) -> list[Transcript]:
    """Every transcript of the file; the first malformed one raises `TranscriptError`."""
    return first_error(parse_records(data, source))
