"""Importers: each public corpus's files, as bytes, to canonical `Transcript`s.

One module per corpus, each with `parse(data, source) -> list[Transcript]` (strict: the first
problem raises `TranscriptError`, one line naming file, record and problem) and
`parse_records(data, source)` (one entry per transcript the file holds, a `Transcript` or the
`TranscriptError` that stopped it, so one bad run does not cost the file's other runs).
`source` is the path relative to the data root; it appears in ids and errors. The caller reads
the file; nothing here touches the disk.

`detect` picks the corpus from the path: the ordered, first-match globs of `PATTERNS`.
`import_file` is the forgiving entry point the study uses: it never raises for bad input, and
returns the transcripts it could read with the problems of the ones it could not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from pipeline.toolout.importers import jsonl, mini_swe_agent, openhands, swe_agent, tau_bench
from pipeline.toolout.importers._common import NESTED_TOO_DEEP, Parsed
from pipeline.toolout.transcript import Transcript, TranscriptError

__all__ = [
    "CORPORA",
    "IMPORTERS",
    "PATTERNS",
    "RECORD_IMPORTERS",
    "ImportOutcome",
    "Parsed",
    "detect",
    "import_file",
    "within_output_cap",
]

Importer = Callable[[bytes, str], list[Transcript]]
RecordImporter = Callable[[bytes, str], list[Parsed]]

IMPORTERS: dict[str, Importer] = {
    swe_agent.CORPUS: swe_agent.parse,
    mini_swe_agent.CORPUS: mini_swe_agent.parse,
    openhands.CORPUS: openhands.parse,
    tau_bench.CORPUS: tau_bench.parse,
    jsonl.CORPUS: jsonl.parse,
}
RECORD_IMPORTERS: dict[str, RecordImporter] = {
    swe_agent.CORPUS: swe_agent.parse_records,
    mini_swe_agent.CORPUS: mini_swe_agent.parse_records,
    openhands.CORPUS: openhands.parse_records,
    tau_bench.CORPUS: tau_bench.parse_records,
    jsonl.CORPUS: jsonl.parse_records,
}
CORPORA: tuple[str, ...] = tuple(IMPORTERS)

# (glob over the relative POSIX path, corpus), first match wins. Suffixes that name a format
# come first; a plain .json/.jsonl is told apart by the corpus folder it sits in (the shipped
# layout is data/transcripts/<corpus>/...), and any other .jsonl is a user's own transcript.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("*.traj.json", mini_swe_agent.CORPUS),
    ("*.traj", swe_agent.CORPUS),
    ("tau-bench/*.json", tau_bench.CORPUS),
    ("*/tau-bench/*.json", tau_bench.CORPUS),
    ("*-airline.json", tau_bench.CORPUS),
    ("*-retail.json", tau_bench.CORPUS),
    ("openhands/*.json", openhands.CORPUS),
    ("openhands/*.jsonl", openhands.CORPUS),
    ("*/openhands/*.json", openhands.CORPUS),
    ("*/openhands/*.jsonl", openhands.CORPUS),
    ("*.jsonl", jsonl.CORPUS),
)


def detect(path_name: str) -> str | None:
    """The corpus a file belongs to by its path, or None (licences, README, SOURCES.json)."""
    path = str(PurePosixPath(path_name.replace("\\", "/")))
    return next((corpus for glob, corpus in PATTERNS if fnmatchcase(path, glob)), None)


@dataclass(frozen=True)
class ImportOutcome:
    """What one file gave: its readable transcripts and a problem per unreadable one."""

    source: str
    corpus: str | None
    transcripts: tuple[Transcript, ...]
    errors: tuple[TranscriptError, ...]


def import_file(data: bytes, source: str, corpus: str | None = None) -> ImportOutcome:
    """Read one file, detecting its corpus when not given; bad input becomes `errors`."""
    name = corpus if corpus is not None else detect(source)
    if name is None or name not in RECORD_IMPORTERS:
        problem = f"unknown corpus {name!r}" if name is not None else "no importer matches the name"
        return ImportOutcome(source, name, (), (TranscriptError(source, "file", problem),))
    try:
        parsed = RECORD_IMPORTERS[name](data, source)
    except TranscriptError as error:
        parsed = [error]
    except RecursionError:  # deep values that decoded but recurse later (json.dumps of args)
        parsed = [TranscriptError(source, "file", NESTED_TOO_DEEP)]
    return ImportOutcome(
        source=source,
        corpus=name,
        transcripts=tuple(p for p in parsed if isinstance(p, Transcript)),
        errors=tuple(p for p in parsed if isinstance(p, TranscriptError)),
    )


def within_output_cap(
    transcripts: Sequence[Transcript], max_bytes: int
) -> tuple[list[Transcript], list[TranscriptError]]:
    """The transcripts whose every message (tool output, mostly) holds at most `max_bytes`;
    a problem naming the first larger message of each of the others (study.max_output_mb)."""
    kept: list[Transcript] = []
    refused: list[TranscriptError] = []
    for transcript in transcripts:
        big = next(
            ((i, m) for i, m in enumerate(transcript.messages) if m.size_bytes > max_bytes),
            None,
        )
        if big is None:
            kept.append(transcript)
            continue
        index, message = big
        problem = (
            f"message {index} ({message.role}) holds {_mb(message.size_bytes)}, over the "
            f"{_mb(max_bytes)} cap (study.max_output_mb); raise it to replay it"
        )
        refused.append(TranscriptError(transcript.source, transcript.id, problem))
    return kept, refused


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n} bytes"
