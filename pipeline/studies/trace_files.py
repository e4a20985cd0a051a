"""Read a user's trace files for `traces scan`: files and folders, the format told by the file.

What is read (docs/protocol.md, "Reasoning traces: the scan"):
- `*.traj`: a SWE-agent trajectory (each step's `thought`);
- `*.jsonl`: an OpenHands output file when its first record has a `history`, else the
  documented traces JSONL (`{"id", "text"[, "source"]}` per line);
- `*.json`: an OpenHands event array or record with a `history`, or a recorded provider reply
  (`choices[].message` reasoning fields, `content[]` thinking blocks);
- a folder: every such file below it, in path order (`SOURCES.json` files are skipped).
A file that yields no trace is listed by the caller. Any other file, or a file that is not
UTF-8, not JSON, or nested too deeply, is one line naming it (`TraceFileError`, a UserError);
nothing is skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.traces.compression.bands import DEFAULT_EDGES
from pipeline.traces.compression.items import (
    TraceFileError,
    TraceItem,
    from_jsonl,
    from_openhands,
    from_openhands_jsonl,
    from_reasoning_fixture,
    from_swe_agent,
)

SUFFIXES = (".traj", ".jsonl", ".json")


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFileError(str(path), "file", f"not UTF-8 text (byte {exc.start})") from None


def _parsed(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFileError(str(path), f"line {exc.lineno}", f"not JSON: {exc.msg}") from None
    except RecursionError:
        raise TraceFileError(str(path), "file", "nested too deeply to read") from None


def _first_record(text: str, name: str) -> Any:
    for line in text.split("\n"):
        if line.strip():
            try:
                return json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return None  # from_jsonl names the line and the problem
    raise TraceFileError(name, "file", "no traces: the file is empty")


def read_file(path: Path, edges: Sequence[int] = DEFAULT_EDGES) -> list[TraceItem]:
    """The traces of one file, its reader told by its suffix and content."""
    name = str(path)
    if path.suffix not in SUFFIXES:
        raise TraceFileError(name, "file", "not a trace file (.traj, .jsonl or .json)")
    if path.suffix == ".jsonl":
        raw = path.read_bytes()  # decoded line by line, so bad UTF-8 names its line
        first = _first_record(raw.decode("utf-8", errors="replace"), name)
        if isinstance(first, dict) and isinstance(first.get("history"), list):
            return from_openhands_jsonl(raw, name, edges=edges)
        return from_jsonl(raw, name, edges)
    parsed = _parsed(path, _text(path))
    if path.suffix == ".traj":
        if not isinstance(parsed, dict):
            raise TraceFileError(name, "file", "a .traj file holds one JSON object")
        return from_swe_agent(parsed, name, edges=edges)
    if isinstance(parsed, list) or (isinstance(parsed, dict) and "history" in parsed):
        return from_openhands(parsed, name, edges=edges)
    if isinstance(parsed, dict) and ("choices" in parsed or "content" in parsed):
        return from_reasoning_fixture(parsed, name, edges=edges)
    raise TraceFileError(
        name, "file", "not a known trace file (OpenHands events, or a reply with choices/content)"
    )


def _files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p for p in path.rglob("*")
                if p.is_file() and p.suffix in SUFFIXES and p.name != "SOURCES.json"
            )  # fmt: skip
        elif path.is_file():
            found.append(path)
        else:
            raise TraceFileError(str(path), "file", "no such file or folder")
    return found


def read_paths(
    paths: Iterable[Path], edges: Sequence[int] = DEFAULT_EDGES
) -> list[tuple[Path, list[TraceItem]]]:
    """Every file of the given files and folders with its traces, in path order (repeats
    kept; a file may hold none, and the caller says so)."""
    return [(path, read_file(path, edges)) for path in _files(paths)]
