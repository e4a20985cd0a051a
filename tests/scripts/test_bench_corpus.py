"""scripts/bench_corpus.py writes a seeded corpus the JSONL importer reads whole."""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.toolout.importers import import_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from bench_corpus import write_corpus  # the script's own generator


def test_the_generated_corpus_is_seeded_and_every_file_imports(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    requests = write_corpus(a, 3, 5, 9, seed=7)
    assert requests == write_corpus(b, 3, 5, 9, seed=7)
    assert [p.read_bytes() for p in sorted(a.iterdir())] == [
        p.read_bytes() for p in sorted(b.iterdir())
    ]
    counted = 0
    for path in sorted(a.iterdir()):
        outcome = import_file(path.read_bytes(), path.name, "jsonl")
        assert not outcome.errors and len(outcome.transcripts) == 1
        counted += outcome.transcripts[0].requests - 1  # the closing "Done." turn
    assert counted == requests and 5 * 3 <= requests <= 9 * 3
