"""Reading a file a user named, without hanging, exhausting memory or leaving its directory.

Why (issue 19): a FIFO named `x.jsonl` hung the sweep, a symlink to /dev/zero ate memory
until MemoryError, a directory named `x.jsonl` raised IsADirectoryError, and a 1 GB line was
read whole before it was refused. `read_bounded` therefore:
- opens with O_NONBLOCK, so a FIFO with no writer cannot block the open;
- checks the open file (fstat: no race with a rename) is a regular file;
- refuses a file over `max_bytes` before reading it, and reads at most `max_bytes + 1` bytes
  (a file that grows meanwhile is refused too);
- with `root`, refuses a symlink whose target lies outside `root`, naming the target: a
  transcript directory must not pull in (and send to an endpoint) a file from elsewhere;
- refuses a symlink loop as `a symlink loop` (issue 32: Python 3.11's `Path.resolve` raised
  `RuntimeError: Symlink loop` and aborted the sweep; later Pythons raise OSError ELOOP).
The problem is one line, `UnreadableFile` (a UserError); the path is shown as its repr, once,
so a name holding a newline cannot break the line.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from pipeline.usererror import UserError

MB = 1024 * 1024


class UnreadableFile(UserError):
    """A file that was not read: `reason` says why (its str adds the path)."""

    def __init__(self, path: Path, reason: str, what: str = "") -> None:
        prefix = f"{what} " if what else ""
        super().__init__(f"{prefix}{str(path)!r}: {reason}")
        self.path = path
        self.reason = reason


def size_text(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


SYMLINK_LOOP = "a symlink loop"


def outside(path: Path, root: Path, what: str = "") -> Path | None:
    """Where `path` really points when that is outside `root` (symlinks followed), else None.

    A symlink loop is UnreadableFile (`SYMLINK_LOOP`), whichever exception the Python raises.
    """
    try:
        target = path.resolve()
    except (RuntimeError, OSError):
        raise UnreadableFile(path, SYMLINK_LOOP, what) from None
    return None if target.is_relative_to(root.resolve()) else target


def read_bounded(
    path: Path, *, max_bytes: int, cap_name: str, root: Path | None = None, what: str = ""
) -> bytes:
    """The bytes of a regular file of at most `max_bytes`, or UnreadableFile saying why not.

    `cap_name` is the option that sets `max_bytes`, named in the refusal so it can be raised.
    """
    if root is not None and (target := outside(path, root, what)) is not None:
        reason = f"a symlink that leaves {str(root)!r} (to {str(target)!r}); copy the file in"
        raise UnreadableFile(path, reason, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        reason = SYMLINK_LOOP if exc.errno == errno.ELOOP else f"cannot read ({exc.strerror})"
        raise UnreadableFile(path, reason, what) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(path, f"{_kind(info.st_mode)}, not a regular file", what)
        if info.st_size > max_bytes:
            raise UnreadableFile(path, _over(info.st_size, max_bytes, cap_name), what)
        chunks: list[bytes] = []
        got = 0
        while got <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - got, 4 * MB))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > max_bytes:
            raise UnreadableFile(path, _over(got, max_bytes, cap_name), what)
        return b"".join(chunks)
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read ({exc.strerror})", what) from None
    finally:
        os.close(fd)


def _over(size: int, cap: int, cap_name: str) -> str:
    return f"{size_text(size)}, over the {size_text(cap)} cap ({cap_name}); raise it to read it"


class NonFiniteNumber(ValueError):
    """NaN or Infinity in a user's JSON: not JSON (RFC 8259), though Python's decoder takes
    it. A file holding one is refused: sent on, it is a number no server parses."""


def _refuse_constant(word: str) -> Any:
    raise NonFiniteNumber(f"{word} is not a JSON number")


def loads_json(text: str | bytes) -> Any:
    """json.loads for a user's file, refusing NaN and Infinity (NonFiniteNumber)."""
    return json.loads(text, parse_constant=_refuse_constant)
