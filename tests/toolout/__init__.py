"""Tests of the tool-output study (pipeline/toolout/), on the shipped transcripts in data/."""

from __future__ import annotations

from pathlib import Path

DATA_ROOT = Path(__file__).resolve().parents[2] / "data" / "transcripts"


def shipped(corpus: str) -> list[str]:
    """The shipped transcript files of one corpus, as paths relative to the data root."""
    from pipeline.toolout.importers import detect

    paths = (p.relative_to(DATA_ROOT).as_posix() for p in DATA_ROOT.rglob("*") if p.is_file())
    return sorted(p for p in paths if detect(p) == corpus)


def read(source: str) -> bytes:
    return (DATA_ROOT / source).read_bytes()
