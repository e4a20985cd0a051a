"""Read a user's trace files for `traces scan`: files and folders, the format told by the file.

What is read (docs/traces.md, "Reasoning traces: the scan"):
- `*.traj`: a SWE-agent trajectory (each step's `thought`);
- `*.jsonl`: an OpenHands output file when its first record has a `history`, else the
  documented traces JSONL (`{"id", "text"[, "source"]}` per line);
- `*.json`: an OpenHands event array or record with a `history`, or a recorded provider reply
  (`choices[].message` reasoning fields, `content[]` thinking blocks);
- a folder: every such file below it, in path order (`SOURCES.json` files are skipped).
A file that yields no trace is listed by the caller. Reads are bounded as the toolout
importers' are (`pipeline.user_files.read_bounded`: regular files only, opened without
blocking, at most `max_bytes`, checked before a byte is read; issue 32).

What cannot be scanned is never dropped silently (issue 32): a file named on the command line
raises one line naming it (`TraceFileError` or `UnreadableFile`, both UserErrors); a file found
under a folder (a FIFO, a device, a symlink loop, a file over the cap, an unrecognised JSON such
as a `results.json`, bad UTF-8) is a `SkippedFile` with its reason, and the rest is scanned.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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
from pipeline.user_files import MB, UnreadableFile, read_bounded

SUFFIXES = (".traj", ".jsonl", ".json")
CAP_NAME = "traces scan --max-file-mb"
DEFAULT_MAX_BYTES = 64 * MB  # study.max_file_mb's default: one bound for every user trace file


@dataclass(frozen=True)
class SkippedFile:
    """A file found under a folder and not scanned: `reason` is one line (the path apart)."""

    path: Path
    reason: str


@dataclass
class ScanInput:
    """What `read_paths` found: every scanned file with its traces, and every skipped file."""

    files: list[tuple[Path, list[TraceItem]]] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def _text(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFileError(name, "file", f"not UTF-8 text (byte {exc.start})") from None


def _parsed(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFileError(name, f"line {exc.lineno}", f"not JSON: {exc.msg}") from None
    except RecursionError:
        raise TraceFileError(name, "file", "nested too deeply to read") from None


def _first_record(text: str, name: str) -> Any:
    for line in text.split("\n"):
        if line.strip():
            try:
                return json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return None  # from_jsonl names the line and the problem
    raise TraceFileError(name, "file", "no traces: the file is empty")


def parse_file(
    data: bytes, name: str, suffix: str, edges: Sequence[int] = DEFAULT_EDGES
) -> list[TraceItem]:
    """The traces of one file's bytes, its reader told by its suffix and content."""
    if suffix not in SUFFIXES:
        raise TraceFileError(name, "file", "not a trace file (.traj, .jsonl or .json)")
    if suffix == ".jsonl":  # decoded line by line, so bad UTF-8 names its line
        first = _first_record(data.decode("utf-8", errors="replace"), name)
        if isinstance(first, dict) and isinstance(first.get("history"), list):
            return from_openhands_jsonl(data, name, edges=edges)
        return from_jsonl(data, name, edges)
    parsed = _parsed(name, _text(name, data))
    if suffix == ".traj":
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


def read_file(
    path: Path, edges: Sequence[int] = DEFAULT_EDGES, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[TraceItem]:
    """The traces of one file, read bounded (`UnreadableFile` says why a file was not read)."""
    if path.suffix not in SUFFIXES:  # refused before it is opened
        raise TraceFileError(str(path), "file", "not a trace file (.traj, .jsonl or .json)")
    data = read_bounded(path, max_bytes=max_bytes, cap_name=CAP_NAME)
    return parse_file(data, str(path), path.suffix, edges)


def _under(folder: Path) -> list[Path]:
    """Every entry with a trace suffix below `folder` that is not a directory, in path order.

    Not `is_file()`: that is False for a FIFO, a device or a symlink loop, which would then be
    dropped without a word; `read_bounded` says what each one is.
    """
    return sorted(
        p for p in folder.rglob("*")
        if p.suffix in SUFFIXES and p.name != "SOURCES.json" and not p.is_dir()
    )  # fmt: skip


def _why(error: TraceFileError | UnreadableFile) -> str:
    if isinstance(error, UnreadableFile):
        return error.reason
    return error.problem if error.record == "file" else f"{error.record}: {error.problem}"


def read_paths(
    paths: Iterable[Path],
    edges: Sequence[int] = DEFAULT_EDGES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ScanInput:
    """Every file of the given files and folders with its traces, in path order (repeats
    kept; a file may hold none, and the caller says so), and the files skipped under folders."""
    found = ScanInput()
    for path in paths:
        if path.is_dir():
            for member in _under(path):
                try:
                    found.files.append((member, read_file(member, edges, max_bytes)))
                except (TraceFileError, UnreadableFile) as exc:
                    found.skipped.append(SkippedFile(member, _why(exc)))
        elif path.exists() or path.is_symlink():  # a loop does not "exist": let the read say so
            found.files.append((path, read_file(path, edges, max_bytes)))
        else:
            raise TraceFileError(str(path), "file", "no such file or folder")
    return found
