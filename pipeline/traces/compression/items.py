"""Trace items: one reasoning trace to compress, with where it came from.

Pure: every function takes already-parsed JSON (or, for JSONL, the text) and the file's path as
the caller names it; the glue reads the files. `load_real(parsed, path)` picks the reader from
the path (`*.traj` SWE-agent, a folder `openhands` OpenHands, a folder `reasoning-fixtures`
recorded provider replies).

What counts as a trace (docs/traces.md, "Reasoning traces: compression"):
- SWE-agent `.traj`: each `trajectory[i].thought`; a file without a trajectory (the
  function-calling demonstration) gives its assistant `history[i].thought` instead. Both
  exist in most files and hold the same text, so only one is read.
- OpenHands events: each action's `args.thought` (new-style events with an `id`) or its
  top-level `thought` (legacy resolver events without one).
- Recorded replies: Chat Completions `choices[i].message` reasoning under `reasoning_content`,
  `reasoning` or `reasoning_text` (the three dialects the seed's harness writes back), and
  Messages `content[i]` blocks of type `thinking`. A `compaction` block is a summary a server
  wrote, not reasoning, and is not an item.
- A user's JSONL: one object a line, `{"id", "text"}` and optional `source`; other keys are
  rejected so a misspelt key is not silently lost.
Blank and whitespace-only thoughts are not items. Ids are `<source>/<path without its corpus
folder and suffix>/<record>`; `dedupe` removes repeated texts (SWE-agent ships several replays
of the same marshmallow run, whose thoughts repeat word for word).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeGuard

from pipeline.traces.compression.bands import DEFAULT_EDGES, band_of
from pipeline.user_files import NonFiniteNumber, loads_json
from pipeline.usererror import UserError

SYNTHETIC = "synthetic"
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_JSONL_KEYS = frozenset({"id", "text", "source"})


class TraceFileError(UserError, ValueError):
    """A trace file cannot be read: `<file>: <record>: <problem>`, one line."""

    def __init__(self, name: str, record: str, problem: str) -> None:
        super().__init__(f"{name}: {record}: {problem}")
        self.record = record  # kept apart, so a scan can skip the file in one line (issue 32)
        self.problem = problem


@dataclass(frozen=True)
class TraceItem:
    """One trace. `band` is the length band of `text` under the edges it was built with."""

    id: str
    text: str
    source: str  # swe-agent | openhands | reasoning-fixture | jsonl | synthetic | a user's own
    provenance: str  # upstream file and record, or the generator's seed and version
    synthetic: bool
    band: str

    @property
    def chars(self) -> int:
        return len(self.text)


def make_item(
    id: str,
    text: str,
    source: str,
    provenance: str,
    *,
    synthetic: bool = False,
    edges: Sequence[int] = DEFAULT_EDGES,
) -> TraceItem:
    return TraceItem(id, text, source, provenance, synthetic, band_of(len(text), edges))


def _stem(path: str, corpus: str) -> str:
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if corpus in parts:
        parts = parts[parts.index(corpus) + 1 :]
    stem = "/".join(parts)
    for suffix in (".traj.json", ".traj", ".jsonl", ".json"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def _items(
    found: Iterable[tuple[str, Any]],
    source: str,
    *,
    path: str,
    origin: str,
    edges: Sequence[int],
    corpus: str | None = None,
) -> list[TraceItem]:
    stem = _stem(path, corpus or source)
    where = f"{origin} {path}" if origin else path
    return [
        make_item(f"{source}/{stem}/{record}", text, source, f"{where}#{record}", edges=edges)
        for record, text in found
        if isinstance(text, str) and text.strip()
    ]


def from_swe_agent(
    traj: Mapping[str, Any], path: str, origin: str = "", edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """The `thought` of every trajectory step (else of every assistant history message)."""
    steps = traj.get("trajectory")
    if isinstance(steps, list) and steps:
        found = [(f"trajectory[{i}]", s.get("thought")) for i, s in enumerate(steps) if _obj(s)]
    else:
        history = traj.get("history")
        messages = history if isinstance(history, list) else []
        found = [
            (f"history[{i}]", m.get("thought"))
            for i, m in enumerate(messages)
            if _obj(m) and m.get("role") == "assistant"
        ]
    return _items(found, "swe-agent", path=path, origin=origin, edges=edges)


def _obj(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _event_thoughts(events: Sequence[Any], prefix: str) -> list[tuple[str, Any]]:
    found = []
    for i, event in enumerate(events):
        if not _obj(event) or "action" not in event:
            continue
        args = event.get("args") if "id" in event else event
        if _obj(args):
            found.append((f"{prefix}[{i}]", args.get("thought")))
    return found


def from_openhands(
    parsed: Any, path: str, origin: str = "", edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """Action thoughts of an event array, or of an output record's `history`."""
    if _obj(parsed) and isinstance(parsed.get("history"), list):
        found = _event_thoughts(parsed["history"], "history")
    elif isinstance(parsed, list):
        found = _event_thoughts(parsed, "events")
    else:
        raise TraceFileError(path, "file", "expected an OpenHands event array or a history")
    return _items(found, "openhands", path=path, origin=origin, edges=edges)


def from_openhands_jsonl(
    text: str | bytes, path: str, origin: str = "", edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """An OpenHands output JSONL: one record with a `history` per line, ids by line number."""
    items: list[TraceItem] = []
    for number, line in _lines(text, path):
        record = _json_line(line, path, number)
        history = record.get("history") if _obj(record) else None
        if not isinstance(history, list):
            raise TraceFileError(path, f"line {number}", "expected an object with a 'history'")
        found = _event_thoughts(history, f"{number}/history")
        items.extend(_items(found, "openhands", path=path, origin=origin, edges=edges))
    return items


def from_reasoning_fixture(
    reply: Mapping[str, Any], path: str, origin: str = "", edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """Reasoning recorded in a Chat Completions or a Messages reply."""
    found: list[tuple[str, Any]] = []
    choices = reply.get("choices")
    for i, choice in enumerate(choices if isinstance(choices, list) else []):
        message = choice.get("message") if _obj(choice) else None
        if _obj(message):
            found += [(f"choices[{i}].{f}", message.get(f)) for f in _REASONING_FIELDS]
    content = reply.get("content")
    for i, block in enumerate(content if isinstance(content, list) else []):
        if _obj(block) and block.get("type") == "thinking":
            found.append((f"content[{i}].thinking", block.get("thinking")))
    return _items(
        found,
        "reasoning-fixture",
        path=path,
        origin=origin,
        edges=edges,
        corpus="reasoning-fixtures",
    )


def origin_of(entry: Mapping[str, Any]) -> str:
    """A SOURCES.json entry as the `origin` of its items: `repo@commit12 (licence)`."""
    commit = str(entry.get("commit", "")).split(" ")[0][:12]
    return f"{entry.get('source_repo', '?')}@{commit} ({entry.get('license', '?')})"


def load_real(
    parsed: Any, path: str, origin: str = "", edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """The traces of one parsed corpus JSON file, its reader chosen from its path.

    JSONL files are text, not one JSON value: pass them to `from_openhands_jsonl` (OpenHands
    output) or `from_jsonl` (a user's traces). `origin` is typically `origin_of(entry)` for the
    file's SOURCES.json entry.
    """
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if path.endswith(".traj") and _obj(parsed):
        return from_swe_agent(parsed, path, origin, edges)
    if "openhands" in parts:
        return from_openhands(parsed, path, origin, edges)
    if "reasoning-fixtures" in parts and _obj(parsed):
        return from_reasoning_fixture(parsed, path, origin, edges)
    raise TraceFileError(
        path, "file", "not a known trace corpus (a .traj, openhands/ or reasoning-fixtures/ file)"
    )


def _decoded(chunk: bytes | str, name: str, number: int) -> str:
    if isinstance(chunk, str):
        return chunk
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte {exc.start} of the line)"
        raise TraceFileError(name, f"line {number}", problem) from None


def _lines(text: str | bytes, name: str = "") -> Iterable[tuple[int, str]]:
    """Non-blank lines with their numbers; bytes are decoded line by line, so invalid UTF-8
    is one TraceFileError naming the line (and the byte in it), not a decode traceback."""
    raw: Sequence[bytes | str] = text.split(b"\n") if isinstance(text, bytes) else text.split("\n")
    for number, chunk in enumerate(raw, start=1):
        line = _decoded(chunk, name, number)
        if line.strip():
            yield number, line


def _json_line(line: str, name: str, number: int) -> Any:
    try:
        return loads_json(line)
    except json.JSONDecodeError as exc:
        raise TraceFileError(name, f"line {number}", f"not JSON: {exc.msg}") from exc
    except NonFiniteNumber as exc:
        raise TraceFileError(name, f"line {number}", f"not JSON: {exc.args[0]}") from None
    except RecursionError:
        problem = "nested too deeply to read (JSON arrays or objects inside each other)"
        raise TraceFileError(name, f"line {number}", problem) from None


def _field(record: Mapping[str, Any], key: str, name: str, number: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        got = "missing" if key not in record else f"{type(value).__name__} {value!r:.40}"
        problem = f"'{key}' must be a non-empty string, got {got}"
        raise TraceFileError(name, f"line {number}", problem)
    return value


def from_jsonl(
    text: str | bytes, name: str, edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """A user's own traces: each non-blank line `{"id": ..., "text": ..., "source"?: ...}`."""
    items: list[TraceItem] = []
    seen: dict[str, int] = {}
    for number, line in _lines(text, name):
        record = _json_line(line, name, number)
        if not _obj(record):
            problem = f"expected an object, got {type(record).__name__}"
            raise TraceFileError(name, f"line {number}", problem)
        unknown = sorted(set(record) - _JSONL_KEYS)
        if unknown:
            problem = f"unknown key {unknown[0]!r}; a line holds only id, text and source"
            raise TraceFileError(name, f"line {number}", problem)
        item_id = _field(record, "id", name, number)
        if item_id in seen:
            problem = f"id {item_id!r} already used on line {seen[item_id]}"
            raise TraceFileError(name, f"line {number}", problem)
        seen[item_id] = number
        trace = _field(record, "text", name, number)
        source = _field(record, "source", name, number) if "source" in record else "jsonl"
        items.append(make_item(item_id, trace, source, f"{name}#line {number}", edges=edges))
    if not items:
        raise TraceFileError(name, "file", "no traces: write one JSON object per line")
    return items


def dedupe(items: Iterable[TraceItem]) -> tuple[list[TraceItem], int]:
    """Items with a text not seen before (the first kept), and how many repeats were removed."""
    kept: list[TraceItem] = []
    texts: set[str] = set()
    removed = 0
    for item in items:
        if item.text in texts:
            removed += 1
            continue
        texts.add(item.text)
        kept.append(item)
    return kept, removed
