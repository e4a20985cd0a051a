"""No path outside the given run directories is served: one check, used for every file.

The viewer serves tables through `pipeline.store` and only a few files directly: the report
and its figures under `analysis/`, and a run's input files (`fixture.json`, ...). Every such
path is a name relative to a run directory; `inside` refuses, before anything is opened:
- an absolute path or a drive (`/etc/passwd`, `C:x`);
- any `..` or `.` segment, a backslash, a NUL or another control character, and percent
  signs (a name arrives here already decoded once by the HTTP layer, so a `%2e%2e` or `%2f`
  still present means double encoding, which no file of a run directory needs);
- anything whose real path (symlinks resolved) is not under the run directory's real path, so
  a symlink planted in a run directory cannot lead out of it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from pipeline.usererror import UserError


class PathRefused(UserError):
    """A requested file is not inside the run directory; nothing was opened."""


def inside(root: Path, relative: str) -> Path:
    """`root / relative` after the checks above; PathRefused otherwise."""
    if not relative or any(ord(c) < 32 for c in relative) or "\\" in relative or "%" in relative:
        raise PathRefused(f"refused path {relative!r}: not a plain relative name")
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ":" in pure.parts[0]:
        raise PathRefused(f"refused path {relative!r}: absolute paths are never served")
    if any(part in ("..", ".", "") for part in relative.split("/")):
        raise PathRefused(f"refused path {relative!r}: '..' and '.' segments are never served")
    real_root = root.resolve()
    candidate = (real_root / pure).resolve()
    if candidate != real_root and real_root not in candidate.parents:
        raise PathRefused(f"refused path {relative!r}: it leads outside the run directory")
    return candidate
