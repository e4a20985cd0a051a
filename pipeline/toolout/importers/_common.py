"""What every importer shares: JSON decoding, typed field access, and the tool-result rule.

Every problem becomes a `TranscriptError(source, record, problem)`, whose message is one line:
values quoted in a problem go through `brief()` (repr, so newlines are escaped; truncated).
`ChatBuilder` holds the structural rule all corpora obey: a tool result answers exactly one
earlier call of the same transcript that has no result yet, and every call is answered before
the next non-tool message (only the session's last calls may stay unanswered, e.g. `finish`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from pipeline.toolout.transcript import (
    Message,
    RecordedUsage,
    Role,
    ToolCall,
    Transcript,
    TranscriptError,
)
from pipeline.user_files import NonFiniteNumber, loads_json

ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")
Parsed = Transcript | TranscriptError  # one entry per transcript a file holds, in file order
NESTED_TOO_DEEP = "JSON nested too deeply to read (arrays or objects inside each other)"


def brief(value: object, limit: int = 60) -> str:
    """A value quoted in an error: repr (one line) and at most `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def type_name(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer"}
    names[float] = "number"
    return names.get(type(value), "null" if value is None else type(value).__name__)


def decode_json(data: bytes, source: str, record: str = "file") -> Any:
    """Parse UTF-8 JSON text; truncated or invalid input is a one-line error at its position."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TranscriptError(
            source, record, f"not UTF-8: {exc.reason} at byte {exc.start}"
        ) from exc
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        problem = f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise TranscriptError(source, record, problem) from exc
    except NonFiniteNumber as exc:
        raise TranscriptError(source, record, f"not JSON: {exc.args[0]}") from None
    except RecursionError:  # 200,000 `[`: the C decoder recurses once per level
        raise TranscriptError(source, record, NESTED_TOO_DEEP) from None


def expect_object(value: Any, source: str, record: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise TranscriptError(source, record, f"expected an object, got {type_name(value)}")
    return value


def expect_array(value: Any, source: str, record: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise TranscriptError(source, record, f"expected an array, got {type_name(value)}")
    return value


def required(obj: Mapping[str, Any], key: str, source: str, record: str) -> Any:
    if key not in obj:
        raise TranscriptError(source, record, f"missing key {key!r}")
    return obj[key]


def _typed(value: Any, key: str, kind: type, source: str, record: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        problem = f"{key!r} is {type_name(value)}, expected {type_name(kind())}"
        raise TranscriptError(source, record, problem)
    return value


def req_str(obj: Mapping[str, Any], key: str, source: str, record: str) -> str:
    value: str = _typed(required(obj, key, source, record), key, str, source, record)
    return value


def opt_str(obj: Mapping[str, Any], key: str, source: str, record: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    checked: str = _typed(value, key, str, source, record)
    return checked


def req_int(obj: Mapping[str, Any], key: str, source: str, record: str) -> int:
    value: int = _typed(required(obj, key, source, record), key, int, source, record)
    return value


def req_array(obj: Mapping[str, Any], key: str, source: str, record: str) -> Sequence[Any]:
    value = required(obj, key, source, record)
    checked: Sequence[Any] = _typed(value, key, list, source, record)
    return checked


def opt_object(obj: Mapping[str, Any], key: str, source: str, record: str) -> Mapping[str, Any]:
    """An optional sub-object; absent or null reads as empty."""
    value = obj.get(key)
    if value is None:
        return {}
    checked: Mapping[str, Any] = _typed(value, key, dict, source, record)
    return checked


def text_content(value: Any, source: str, record: str) -> str | None:
    """Message content as text: a string, null, or a list of `{"type": "text", "text": ...}`.

    Text parts are joined without a separator (as the provider concatenates them); any other
    part (an image) is an error, since the byte and token accounting cannot price it.
    """
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise TranscriptError(source, record, f"content is {type_name(value)}, expected text")
    parts: list[str] = []
    for i, part in enumerate(value):
        where = f"{record} content[{i}]"
        obj = expect_object(part, source, where)
        if obj.get("type") != "text":
            raise TranscriptError(source, where, f"non-text content part {brief(obj.get('type'))}")
        parts.append(req_str(obj, "text", source, where))
    return "".join(parts)


def timestamp(value: Any, source: str, record: str) -> float | None:
    """Seconds since the epoch from a number or an ISO 8601 string (naive means UTC)."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError as exc:
            raise TranscriptError(source, record, f"bad timestamp {brief(value)}") from exc
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    raise TranscriptError(source, record, f"timestamp is {type_name(value)}")


def _count(obj: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def usage(value: Any) -> RecordedUsage | None:
    """Provider usage in any of the dialects the corpora carry; None when nothing is recorded.

    Prompt/completion tokens: OpenAI names (`prompt_tokens`, `completion_tokens`), else the
    Messages names (`input_tokens`, `output_tokens`). Cached tokens, first found of
    `prompt_tokens_details.cached_tokens`, `prompt_cache_hit_tokens` (DeepSeek),
    `cache_read_input_tokens` (Anthropic). Cost: `cost` (OpenRouter), if numeric.
    """
    if not isinstance(value, dict):
        return None
    details = value.get("prompt_tokens_details")
    cached = _count(details, "cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = _count(value, "prompt_cache_hit_tokens", "cache_read_input_tokens")
    cost = value.get("cost")
    recorded = RecordedUsage(
        prompt_tokens=_count(value, "prompt_tokens", "input_tokens"),
        completion_tokens=_count(value, "completion_tokens", "output_tokens"),
        cached_tokens=cached,
        cost_usd=float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool)
        else None,
    )
    return None if recorded == RecordedUsage() else recorded


def transcript_id(corpus: str, source: str, index: str | None = None) -> str:
    """`<corpus>/<source without its corpus folder and suffix>[/<index>]`.

    The whole relative path (not just the stem) keeps ids unique: the SWE-agent corpus holds
    several `marshmallow-code__marshmallow-1867.traj` in different folders.
    """
    path = PurePosixPath(source.replace("\\", "/"))
    parts = path.parts[1:] if path.parts[:1] == (corpus,) else path.parts
    stem = str(PurePosixPath(*parts)) if parts else path.name
    for suffix in (".traj.json", ".traj", ".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return f"{corpus}/{stem}" + (f"/{index}" if index is not None else "")


def chat_tool_call(value: Any, source: str, record: str) -> ToolCall:
    """An OpenAI `tool_calls[i]`: `{id, type: "function", function: {name, arguments}}`.

    `arguments` is kept as the JSON text sent; an object (some exports decode it) is
    re-serialised with `json.dumps` defaults, since the original spacing is gone.
    """
    obj = expect_object(value, source, record)
    call_type = obj.get("type", "function")
    if call_type != "function":
        raise TranscriptError(source, record, f"tool call type {brief(call_type)}, not 'function'")
    function = expect_object(required(obj, "function", source, record), source, record)
    arguments = required(function, "arguments", source, record)
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    elif not isinstance(arguments, str):
        raise TranscriptError(source, record, f"'arguments' is {type_name(arguments)}")
    return ToolCall(
        id=req_str(obj, "id", source, record),
        name=req_str(function, "name", source, record),
        arguments=arguments,
    )


def chat_message(value: Any, source: str, record: str) -> Message:
    """One OpenAI Chat Completions message: role, content, tool_calls / tool_call_id, name.

    Optional extras read where present: `timestamp` (number or ISO 8601) and `usage`.
    Other keys (`refusal`, `audio`, ...) are ignored; a non-null legacy `function_call` is an
    error rather than a call silently lost.
    """
    obj = expect_object(value, source, record)
    role = req_str(obj, "role", source, record)
    if role not in ROLES:
        raise TranscriptError(source, record, f"unknown role {brief(role)}")
    if obj.get("function_call") is not None:
        raise TranscriptError(source, record, "legacy 'function_call' is not supported")
    raw_calls = obj.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise TranscriptError(source, record, f"'tool_calls' is {type_name(raw_calls)}")
    if raw_calls and role != "assistant":
        raise TranscriptError(source, record, f"a {role} message carries tool_calls")
    calls = tuple(
        chat_tool_call(c, source, f"{record} tool_calls[{i}]") for i, c in enumerate(raw_calls)
    )
    call_id = opt_str(obj, "tool_call_id", source, record)
    if role == "tool" and call_id is None:
        raise TranscriptError(source, record, "tool result without 'tool_call_id'")
    return Message(
        role=role,  # checked against ROLES above
        content=text_content(obj.get("content"), source, record),
        tool_calls=calls,
        tool_call_id=call_id if role == "tool" else None,
        name=opt_str(obj, "name", source, record) if role == "tool" else None,
        timestamp=timestamp(obj.get("timestamp"), source, record),
        usage=usage(obj.get("usage")) if role == "assistant" else None,
    )


class ChatBuilder:
    """Collects one transcript's messages and enforces the call/result rule as they arrive.

    A tool result must name an open call: one an earlier assistant turn made that has no
    result yet. Its `name` is filled in from the call when the corpus leaves it out, and must
    agree with the call when given. The results of a turn's calls come before the next
    non-tool message, as Chat Completions requires of a resent history; only the last turn's
    calls may stay unanswered (a session may end on `finish`). An id may come back once its
    earlier call is answered (gpt-4o does this in tau-bench: ids are kept as recorded, since
    they are request bytes); reusing an id whose call is still open is an error.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.messages: list[Message] = []
        self._open: dict[str, str] = {}  # call id -> tool name, calls awaiting a result
        self._ids: set[str] = set()

    def add(self, message: Message, record: str) -> None:
        if message.role != "tool" and self._open:
            problem = f"call {brief(next(iter(self._open)))} has no result before this message"
            raise TranscriptError(self.source, record, problem)
        for call in message.tool_calls:
            if call.id in self._open:
                problem = f"tool call id {brief(call.id)} reused while its call is unanswered"
                raise TranscriptError(self.source, record, problem)
            self._ids.add(call.id)
            self._open[call.id] = call.name
        if message.role == "tool":
            call_id = message.tool_call_id
            if call_id is None or call_id not in self._open:
                problem = f"tool result without a call (tool_call_id {brief(call_id)})"
                if call_id in self._ids:
                    problem = f"second tool result for call {brief(call_id)}"
                raise TranscriptError(self.source, record, problem)
            name = self._open.pop(call_id)
            if message.name is None:
                message = replace(message, name=name)
            elif message.name != name:
                problem = f"tool result names {brief(message.name)}, its call is {brief(name)}"
                raise TranscriptError(self.source, record, problem)
        self.messages.append(message)

    def open_calls(self) -> tuple[str, ...]:
        return tuple(self._open)


def one_transcript(
    parse_one: Callable[[bytes, str], Transcript], data: bytes, source: str
) -> list[Parsed]:
    """A one-transcript file as `parse_records` gives it: the transcript, or its problem."""
    try:
        return [parse_one(data, source)]
    except TranscriptError as error:
        return [error]


def first_error(parsed: Sequence[Parsed]) -> list[Transcript]:
    """The strict reading of a file: every transcript, or the first problem raised."""
    for entry in parsed:
        if isinstance(entry, TranscriptError):
            raise entry
    return [entry for entry in parsed if isinstance(entry, Transcript)]
