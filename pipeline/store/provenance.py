"""Where a run came from: input-file hashes, package versions and the code's git revision.

The paper's published harness could not be re-run because a dirty working tree went
unrecorded; so the manifest pins every input file by SHA-256 (the provenance lock), records the
versions of the packages that shape results, and records the git commit *and* whether the tree
had uncommitted changes.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import pipeline

PROJECT_DIR = Path(__file__).resolve().parents[2]

VERSIONED_PACKAGES = ("foldsweep", "ray", "polars", "pyarrow", "aiohttp", "tenacity", "hydra-core")


class GitRevision(NamedTuple):
    """The commit the code ran from; ``dirty`` is True when tracked files had changes."""

    sha: str | None
    dirty: bool | None


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, streamed."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def provenance_lock(paths: Iterable[Path], *, root: Path = PROJECT_DIR) -> dict[str, str]:
    """Map each input file to its SHA-256, keyed by its path relative to ``root``.

    Files outside ``root`` (a study's input in the run dir, a catalog elsewhere) keep their
    absolute path. A missing input is a bug in the caller and raises FileNotFoundError.
    """
    root = root.resolve()
    lock: dict[str, str] = {}
    for path in paths:
        resolved = path.resolve()
        key = (
            resolved.relative_to(root).as_posix()
            if resolved.is_relative_to(root)
            else resolved.as_posix()
        )
        lock[key] = sha256_file(resolved)
    return dict(sorted(lock.items()))


def package_versions() -> dict[str, str | None]:
    """Python and the versions of the packages that shape results (None if not installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            # Run from a checkout (not pip-installed): the package's own version string.
            versions[name] = pipeline.__version__ if name == "foldsweep" else None
    return versions


def git_revision(project_dir: Path = PROJECT_DIR) -> GitRevision:
    """``git rev-parse HEAD`` and dirtiness in ``project_dir``; Nones when git is unavailable."""
    sha = _git(project_dir, "rev-parse", "HEAD")
    if sha is None:
        return GitRevision(None, None)
    # --no-optional-locks: never take index.lock, so a concurrent commit cannot collide.
    status = _git(project_dir, "--no-optional-locks", "status", "--porcelain", "-uno")
    return GitRevision(sha, None if status is None else status != "")


def _git(project_dir: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=project_dir,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (FileNotFoundError, NotADirectoryError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
