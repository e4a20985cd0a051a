"""Issue 21: analyze checks the stored templates against the manifest's provenance lock before
anything renders them, since the SHA-256 stored beside each text can be recomputed by anyone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from jobs.traces.tables import read_template_entries
from pipeline.store import RunDirError, provenance_lock
from pipeline.store.manifest import Manifest, write_manifest
from pipeline.traces.study import TEMPLATES_FILE


def _entry(text: str, source: str = "shipped") -> dict[str, str]:
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "source": source, "text": text}


def _run_dir(tmp_path: Path, templates: dict[str, dict[str, str]]) -> Path:
    run_dir = tmp_path / "traces-run"
    run_dir.mkdir()
    (run_dir / TEMPLATES_FILE).write_text(json.dumps(templates), encoding="utf-8")
    manifest = Manifest.start(
        run_dir.name,
        {},
        config_fingerprint="x",
        study="traces",
        provenance=provenance_lock([run_dir / TEMPLATES_FILE], root=tmp_path),
    )
    write_manifest(run_dir, manifest)
    return run_dir


def test_untouched_templates_pass_the_lock_with_their_sources(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {"a": _entry("{{ 1 }}"), "mine": _entry("{{ 2 }}", "user")})
    assert read_template_entries(run_dir) == {
        "a": {"text": "{{ 1 }}", "source": "shipped"},
        "mine": {"text": "{{ 2 }}", "source": "user"},
    }


def test_a_template_added_with_its_own_recomputed_sha256_is_refused_before_rendering(
    tmp_path: Path,
) -> None:
    run_dir = _run_dir(tmp_path, {"a": _entry("{{ 1 }}")})
    path = run_dir / TEMPLATES_FILE
    altered = {"a": _entry("{{ 1 }}"), "evil": _entry("{{ 'a' * 10**10 }}")}
    path.write_text(json.dumps(altered), encoding="utf-8")  # per-text hashes all consistent
    with pytest.raises(RunDirError, match="differs from the manifest's provenance lock"):
        read_template_entries(run_dir)


def test_a_run_whose_lock_lacks_the_file_is_refused(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, {"a": _entry("{{ 1 }}")})
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["provenance"] = {}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDirError, match="not in the manifest's provenance lock"):
        read_template_entries(run_dir)
