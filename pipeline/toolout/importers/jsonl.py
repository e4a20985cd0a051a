"""A user's own transcripts: JSONL of OpenAI Chat Completions messages, one file per transcript.

Each non-blank line is one message object: `role`, `content` (string, null or text parts),
assistant `tool_calls` `[{id, type: "function", function: {name, arguments}}]`, tool results'
`tool_call_id` and optional `name`, and optionally `timestamp` (seconds since the epoch or
ISO 8601) and, on assistant turns, `usage` (OpenAI, DeepSeek or Anthropic cache fields).
Decisions: one file is one transcript (no separator lines: several sessions are several
files); whitespace-only lines hold no record and are passed over; errors name `line <n>`
(1-based, as editors count). `to_jsonl` writes a transcript back in this form, so a
transcript round-trips through it.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.toolout.importers._common import (
    ChatBuilder,
    Parsed,
    chat_message,
    decode_json,
    first_error,
    one_transcript,
    transcript_id,
)
from pipeline.toolout.transcript import Message, RecordedUsage, Transcript, TranscriptError

CORPUS = "jsonl"


def _parse(data: bytes, source: str) -> Transcript:
    builder = ChatBuilder(source)
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        record = f"line {number}"
        builder.add(chat_message(decode_json(line, source, record), source, record), record)
    if not builder.messages:
        raise TranscriptError(source, "file", "no messages")
    return Transcript(
        id=transcript_id(CORPUS, source),
        corpus=CORPUS,
        source=source,
        messages=tuple(builder.messages),
    )


def parse_records(data: bytes, source: str) -> list[Parsed]:
    """The file's one transcript, or the problem that stops it."""
    return one_transcript(_parse, data, source)


def parse(data: bytes, source: str) -> list[Transcript]:
    """The file's transcript; a malformed line raises `TranscriptError` naming it."""
    return first_error(parse_records(data, source))


def _usage(recorded: RecordedUsage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if recorded.prompt_tokens is not None:
        out["prompt_tokens"] = recorded.prompt_tokens
    if recorded.completion_tokens is not None:
        out["completion_tokens"] = recorded.completion_tokens
    if recorded.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": recorded.cached_tokens}
    if recorded.cost_usd is not None:
        out["cost"] = recorded.cost_usd
    return out


def message_record(message: Message) -> dict[str, Any]:
    """One message as a JSONL record (the fields this module reads)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.timestamp is not None:
        out["timestamp"] = message.timestamp
    if message.usage is not None:
        out["usage"] = _usage(message.usage)
    return out


def to_jsonl(transcript: Transcript) -> bytes:
    """The transcript's messages as JSONL, one message a line (UTF-8, no ASCII escaping)."""
    lines = (json.dumps(message_record(m), ensure_ascii=False) for m in transcript.messages)
    return "".join(line + "\n" for line in lines).encode("utf-8")
