"""The importer registry: detection by path, and the forgiving `import_file`."""

from __future__ import annotations

import pytest

from pipeline.toolout.config import OPT_IN_CORPORA
from pipeline.toolout.importers import CORPORA, IMPORTERS, detect, import_file
from tests.toolout import DATA_ROOT, read


def test_every_corpus_has_an_importer() -> None:
    assert set(CORPORA) == {"swe-agent", "mini-swe-agent", "openhands", "tau-bench", "jsonl"}
    assert set(IMPORTERS) == set(CORPORA)


def test_every_shipped_transcript_file_is_detected_as_the_corpus_of_its_folder() -> None:
    for path in DATA_ROOT.rglob("*"):
        relative = path.relative_to(DATA_ROOT).as_posix()
        if (
            path.is_file()
            and not path.name.startswith(("LICENSE", "README"))
            and path.name != "SOURCES.json"
        ):
            folder = relative.split("/")[0]
            assert detect(relative) == OPT_IN_CORPORA.get(folder, folder), relative


@pytest.mark.parametrize(
    ("path", "corpus"),
    [
        ("runs/x.traj", "swe-agent"),
        ("runs/x.traj.json", "mini-swe-agent"),
        ("data/transcripts/tau-bench/gpt-4o-retail.json", "tau-bench"),
        ("elsewhere/sonnet-35-new-airline.json", "tau-bench"),
        ("openhands/basic.json", "openhands"),
        ("my/own/session.jsonl", "jsonl"),
        ("tau-bench/LICENSE.tau-bench.txt", None),
        ("SOURCES.json", None),
        ("mini-swe-agent/results.json", None),
    ],
)
def test_detect_by_path_pattern(path: str, corpus: str | None) -> None:
    assert detect(path) == corpus


def test_import_file_reports_bad_input_instead_of_raising() -> None:
    outcome = import_file(b'{"role": "user"', "mine/session.jsonl")
    assert outcome.corpus == "jsonl"
    assert outcome.transcripts == ()
    assert [str(e) for e in outcome.errors] == [
        "mine/session.jsonl: line 1: not JSON: Expecting ',' delimiter at line 1 column 16"
    ]
    unknown = import_file(b"", "notes.txt")
    assert str(unknown.errors[0]) == "notes.txt: file: no importer matches the name"


def test_import_file_reads_a_shipped_file() -> None:
    source = "openhands/resolver_mock_output.jsonl"
    outcome = import_file(read(source), source)
    assert (len(outcome.transcripts), outcome.errors) == (2, ())
