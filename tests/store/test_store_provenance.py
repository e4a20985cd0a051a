"""Provenance: input hashes keyed by relative path, versions, git outside a repository."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pipeline.store.provenance import (
    git_revision,
    package_versions,
    provenance_lock,
    sha256_file,
)


def test_provenance_lock_maps_relative_paths_to_sha256(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "config.yaml"
    config.write_text("repeats: 2\n")
    outside = tmp_path.parent / f"{tmp_path.name}-fixture.json"
    outside.write_text("{}")
    try:
        lock = provenance_lock([config, outside], root=tmp_path)
    finally:
        outside.unlink()
    assert lock == {
        "conf/config.yaml": hashlib.sha256(b"repeats: 2\n").hexdigest(),
        outside.resolve().as_posix(): hashlib.sha256(b"{}").hexdigest(),
    }


def test_sha256_file_matches_hashlib(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"\x00" * 100_000)
    assert sha256_file(path) == hashlib.sha256(b"\x00" * 100_000).hexdigest()


def test_package_versions_names_python_and_every_result_shaping_package() -> None:
    versions = package_versions()
    assert set(versions) >= {"python", "foldsweep", "ray", "polars", "pyarrow", "hydra-core"}
    assert versions["pyarrow"]
    assert versions["foldsweep"]


def test_git_revision_outside_a_repository_is_none(tmp_path: Path) -> None:
    assert git_revision(tmp_path) == (None, None)
