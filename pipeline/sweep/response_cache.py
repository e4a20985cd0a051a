"""The response cache on disk: one file per entry, written atomically, read as a miss if odd.

Why a store of our own and not SQLite or diskcache: an entry is written once and never
updated, and on a Ray cluster several processes (and hosts, on a shared filesystem) write the
same directory. A file per entry renamed into place (`os.replace`, atomic on POSIX and on NFS
for one directory) needs no lock and no server; SQLite's locking is unsafe over NFS. A kill at
any instant leaves either a whole entry or none (a `.tmp-*` file at most, which `prune`
removes); an entry that is truncated, corrupt, of another version or expired is a miss,
never a crash.

Layout: `DIR/<first two hex digits>/<key>.json`, holding `{"v", "key", "kind", "created",
"reply"}`. The key is the request boundary's (pipeline/sweep/boundary.py): a BLAKE2b digest
of the endpoint's identity, the body as sent, the unit's repeat and the request's position.
Only the reply is stored: no header, no API key, nothing the body did not already say.
It lives in the engine (pipeline.sweep), not pipeline.store, whose package loads Polars: the
actors that read it import no pyarrow or Polars and stay small.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY_VERSION = 1
TMP_PREFIX = ".tmp-"
RUN_CACHE_DIR = "cache"  # RUN_DIR/cache for scope=run


def shared_cache_root() -> Path:
    """$FOLDSWEEP_CACHE/responses (default ~/.cache/foldsweep/responses): cache.scope=shared."""
    root = os.environ.get("FOLDSWEEP_CACHE") or str(Path.home() / ".cache" / "foldsweep")
    return Path(root) / "responses"


@dataclass(frozen=True)
class CacheEntry:
    key: str
    kind: str  # chat | template
    created: float  # epoch seconds
    reply: dict[str, Any]


@dataclass(frozen=True)
class CacheStats:
    entries: int
    bytes: int
    expired: int
    oldest: float | None
    newest: float | None


class ResponseCache:
    """Get and put replies by key under `root`; `ttl_s` None: entries never expire."""

    def __init__(
        self, root: Path, ttl_s: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.root = root
        self.ttl_s = ttl_s
        self.clock = clock
        self._made: set[str] = set()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None: absent, unreadable, of another version or expired."""
        try:
            raw = self.path(key).read_bytes()
        except OSError:  # absent, or a name that is not a readable file
            return None
        entry = parse_entry(raw)
        if entry is None or entry.key != key:
            return None
        if self.ttl_s is not None and self.clock() - entry.created > self.ttl_s:
            return None
        return entry

    def put(self, key: str, kind: str, reply: dict[str, Any]) -> None:
        """Store a whole reply: a temporary file in the entry's directory, then a rename."""
        folder = self.root / key[:2]
        if key[:2] not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(key[:2])
        body = {"v": ENTRY_VERSION, "key": key, "kind": kind, "created": self.clock()}
        data = json.dumps({**body, "reply": reply}, separators=(",", ":")).encode()
        tmp = folder / f"{TMP_PREFIX}{key}-{os.getpid()}-{time.monotonic_ns()}"
        with open(tmp, "wb") as handle:
            handle.write(data)
        os.replace(tmp, folder / f"{key}.json")

    # -- maintenance (the `cache` command) --------------------------------------------------
    def entries(self) -> Iterator[tuple[Path, CacheEntry | None]]:
        """Every entry file with its parsed entry (None: unreadable or corrupt)."""
        if not self.root.is_dir():
            return
        for folder in sorted(self.root.iterdir()):
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in sorted(folder.glob("*.json")):
                try:
                    yield path, parse_entry(path.read_bytes())
                except OSError:
                    yield path, None

    def expired(self, entry: CacheEntry | None) -> bool:
        if entry is None:
            return True
        return self.ttl_s is not None and self.clock() - entry.created > self.ttl_s

    def stats(self) -> CacheStats:
        count = size = expired = 0
        created: list[float] = []
        for path, entry in self.entries():
            count += 1
            size += path.stat().st_size
            expired += self.expired(entry)
            if entry is not None:
                created.append(entry.created)
        return CacheStats(
            count, size, expired, min(created, default=None), max(created, default=None)
        )

    def prune(self) -> int:
        """Delete expired, corrupt and temporary files; returns how many."""
        removed = 0
        for path, entry in list(self.entries()):
            if self.expired(entry):
                path.unlink(missing_ok=True)
                removed += 1
        if self.root.is_dir():
            for tmp in self.root.glob(f"*/{TMP_PREFIX}*"):
                tmp.unlink(missing_ok=True)
                removed += 1
        return removed

    def clear(self) -> int:
        """Delete every entry and temporary file; returns how many."""
        removed = 0
        if self.root.is_dir():
            for path in [*self.root.glob("*/*.json"), *self.root.glob(f"*/{TMP_PREFIX}*")]:
                path.unlink(missing_ok=True)
                removed += 1
        return removed


def parse_entry(raw: bytes) -> CacheEntry | None:
    """An entry from its file's bytes, or None for anything but a whole entry of this version."""
    try:
        data = json.loads(raw)
    except ValueError:  # truncated, not JSON, not UTF-8
        return None
    if not isinstance(data, dict) or data.get("v") != ENTRY_VERSION:
        return None
    key, kind, created, reply = (data.get(k) for k in ("key", "kind", "created", "reply"))
    if not (isinstance(key, str) and isinstance(kind, str) and isinstance(reply, dict)):
        return None
    if not isinstance(created, int | float):
        return None
    return CacheEntry(key, kind, float(created), reply)
