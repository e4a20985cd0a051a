"""The shipped transcripts are the upstream files, byte for byte, each with its licence."""

from __future__ import annotations

import hashlib
import json

from pipeline.toolout.config import KNOWN_CORPORA
from pipeline.toolout.importers import detect
from tests.toolout import DATA_ROOT

SOURCES = DATA_ROOT / "SOURCES.json"


def _entries() -> list[dict[str, object]]:
    entries: list[dict[str, object]] = json.loads(SOURCES.read_text(encoding="utf-8"))
    return entries


def test_shipped_transcripts_match_their_recorded_sha256() -> None:
    for entry in _entries():
        data = (DATA_ROOT / str(entry["path"])).read_bytes()
        assert len(data) == entry["size_bytes"], entry["path"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["path"]


def test_every_shipped_data_file_has_a_provenance_entry() -> None:
    listed = {str(e["path"]) for e in _entries()}
    files = {
        p.relative_to(DATA_ROOT).as_posix()
        for p in DATA_ROOT.rglob("*")
        if p.is_file() and not p.name.startswith("LICENSE")
    }
    assert files - {"SOURCES.json", "README.md"} == listed


def test_every_corpus_folder_carries_its_licence_and_the_readme_names_it() -> None:
    readme = (DATA_ROOT / "README.md").read_text(encoding="utf-8")
    folders = sorted(p.name for p in DATA_ROOT.iterdir() if p.is_dir())
    assert folders == sorted(KNOWN_CORPORA)
    for folder in folders:
        assert list((DATA_ROOT / folder).glob("LICENSE*")), folder
        assert f"`{folder}/`" in readme
    for entry in _entries():
        assert str(entry["license"]).startswith("MIT"), entry["path"]


def test_every_shipped_transcript_has_an_importer_by_its_path() -> None:
    for entry in _entries():
        assert detect(str(entry["path"])) is not None, entry["path"]
