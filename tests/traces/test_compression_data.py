"""The shipped recorded-reasoning files match their recorded provenance and carry a licence."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "data" / "reasoning-fixtures"


def _entries() -> list[dict[str, object]]:
    entries: list[dict[str, object]] = json.loads((ROOT / "SOURCES.json").read_text("utf-8"))
    return entries


def test_recorded_reasoning_files_match_their_recorded_sha256_and_size() -> None:
    for entry in _entries():
        data = (ROOT / str(entry["path"])).read_bytes()
        assert len(data) == entry["size_bytes"], entry["path"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["path"]


def test_every_recorded_reasoning_file_has_provenance_and_the_licence_is_shipped() -> None:
    listed = {str(e["path"]) for e in _entries()}
    files = {p.name for p in ROOT.iterdir() if p.suffix == ".json" and p.name != "SOURCES.json"}
    assert files == listed
    assert {str(e["license"]) for e in _entries()} == {"Apache-2.0"}
    assert "Apache License, Version 2.0" in (ROOT / "LICENSE.vercel-ai.txt").read_text("utf-8")
    for entry in _entries():
        assert {"source_repo", "source_path", "commit", "method"} <= set(entry)
