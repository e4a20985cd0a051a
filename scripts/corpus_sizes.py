"""Per shipped corpus folder: sessions, tool outputs, and how many reach the 2,000-byte floor.

Why: the issue asks whether a corpus has large tool outputs (seed 000 compacts only outputs of
2,000 bytes or more), and data/transcripts/README.md quotes these figures; this script is how
they are made, with the study's own importers (the same parse a run does), so the figures and a
replay cannot disagree.

    python scripts/corpus_sizes.py [FOLDER ...]   # default: every folder under data/transcripts
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from pipeline.toolout.importers import detect, import_file

DATA = Path(__file__).resolve().parents[1] / "data" / "transcripts"
FLOOR = 2000  # bytes: seed 000's "large tool output"


def measure(folder: str) -> str:
    """One line: sessions, unreadable ones, tool outputs, share at the floor, median, bytes."""
    sessions = errors = 0
    sizes: list[int] = []
    disk = 0
    for path in sorted((DATA / folder).rglob("*")):
        source = path.relative_to(DATA).as_posix()
        if not path.is_file() or detect(source) is None:
            continue
        data = path.read_bytes()
        disk += len(data)
        outcome = import_file(data, source)
        errors += len(outcome.errors)
        for transcript in outcome.transcripts:
            sessions += 1
            sizes.extend(m.size_bytes for m in transcript.tool_outputs)
    large = sum(s >= FLOOR for s in sizes)
    share = large / len(sizes) if sizes else 0.0
    median = statistics.median(sizes) if sizes else 0
    return (
        f"{folder}: {sessions} sessions ({errors} unreadable), {len(sizes)} tool outputs, "
        f"{large} >= {FLOOR} B ({share:.1%}), median {median:.0f} B; files {disk / 1e6:.1f} MB"
    )


def main(argv: list[str]) -> None:
    folders = argv or sorted(p.name for p in DATA.iterdir() if p.is_dir())
    for folder in folders:
        print(measure(folder))


if __name__ == "__main__":
    main(sys.argv[1:])
