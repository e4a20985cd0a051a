"""The response cache on disk: append-only segment files, one per writing process.

Why a store of our own, and why segments: an entry is written once and never updated, and on
a Ray cluster many processes (and hosts, on a shared filesystem) write one directory. Each
process appends to a segment file of its own (`seg-<host>-<pid>-<random>.log`), so no two
writers share a file and nothing needs a lock, also over NFS; SQLite (and diskcache, which is
SQLite) is not safe there. A file per entry with an atomic rename would be safe too, but
creating a file cost 1-2 ms of the actor's time per request on this machine's ext4, where an
append costs about 20 us (docs/benchmarks.md): the cache is on every request's path.

Record: `FSC1 <key> <created> <length> <crc32>\\n<length bytes of JSON>\\n`, written by one
`os.write` on an O_APPEND descriptor before the reply is handed to the study. A process kill
leaves a whole record or a torn tail; a reader stops at the first record whose header, length
or CRC does not check out (a torn tail, or damage), so a kill at any instant leaves a whole
entry or none, and a corrupt, truncated, foreign-version or expired entry is a miss, never a
crash. Records are not fsynced: a process kill keeps them; a power cut may lose the last.

The index (key -> where) is read from the directory's segments when the cache is first asked,
and entries this process writes join it; another process's entries written later are not seen
until the next session (each (unit, request position) is asked by one worker). Only the reply
is stored: no header, no API key, nothing the body did not already say. This module lives in
the engine (pipeline.sweep), not pipeline.store, whose package loads Polars: the actors that
use it import no pyarrow or Polars and stay small.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

MAGIC = b"FSC1"
SEGMENT_GLOB = "seg-*.log"
RUN_CACHE_DIR = "cache"  # RUN_DIR/cache for scope=run
_MAX_HEADER = 200


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
    expired: int  # expired or unreadable
    oldest: float | None
    newest: float | None
    segments: int


class _Where(NamedTuple):
    path: Path
    offset: int  # of the payload
    length: int
    crc: int
    created: float


class ResponseCache:
    """Get and put replies by key under `root`; `ttl_s` None: entries never expire."""

    def __init__(
        self, root: Path, ttl_s: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.root = root
        self.ttl_s = ttl_s
        self.clock = clock
        self._index: dict[str, _Where] | None = None
        self._fd: int | None = None
        self._segment: Path | None = None
        self._size = 0

    # -- reading ----------------------------------------------------------------------------
    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key`, or None: absent, damaged, of another version or expired."""
        where = self.index().get(key)
        if where is None:
            return None
        if self.ttl_s is not None and self.clock() - where.created > self.ttl_s:
            return None
        payload = _read_at(where)
        if payload is None:
            return None
        return _entry(key, where.created, payload)

    def index(self) -> dict[str, _Where]:
        if self._index is None:
            self._index = {}
            for path in self.segments():
                for key, where in scan_segment(path):
                    known = self._index.get(key)
                    if known is None or where.created >= known.created:  # the latest wins
                        self._index[key] = where
        return self._index

    def segments(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(SEGMENT_GLOB) if p.is_file())

    # -- writing ----------------------------------------------------------------------------
    def put(self, key: str, kind: str, reply: dict[str, Any]) -> None:
        """Append one whole record to this process's segment, in one write."""
        payload = orjson.dumps({"kind": kind, "reply": reply})
        created = self.clock()
        crc = zlib.crc32(payload)
        header = b"%s %s %.6f %d %08x\n" % (MAGIC, key.encode(), created, len(payload), crc)
        fd = self._writer()
        os.write(fd, header + payload + b"\n")
        assert self._segment is not None
        offset = self._size + len(header)
        self._size += len(header) + len(payload) + 1
        self.index()[key] = _Where(self._segment, offset, len(payload), crc, created)

    def _writer(self) -> int:
        if self._fd is None or self._segment is None:
            self.root.mkdir(parents=True, exist_ok=True)
            name = f"seg-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.log"
            self._segment = self.root / name
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(self._segment, flags, 0o600)
            self._size = 0
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- maintenance (the `cache` command; run it when no sweep writes the directory) -------
    def entries(self) -> Iterator[tuple[str, _Where, CacheEntry | None]]:
        """Every indexed entry, parsed (None: its payload is damaged)."""
        for key, where in self.index().items():
            payload = _read_at(where)
            entry = _entry(key, where.created, payload) if payload is not None else None
            yield key, where, entry

    def expired(self, where: _Where, entry: CacheEntry | None) -> bool:
        if entry is None:
            return True
        return self.ttl_s is not None and self.clock() - where.created > self.ttl_s

    def stats(self) -> CacheStats:
        count = size = expired = 0
        created: list[float] = []
        for _key, where, entry in self.entries():
            count += 1
            size += where.length
            expired += self.expired(where, entry)
            created.append(where.created)
        segments = len(self.segments())
        return CacheStats(
            count, size, expired, min(created, default=None), max(created, default=None), segments
        )

    def prune(self) -> int:
        """Rewrite the live entries into one new segment and delete the old segments; returns
        how many entries were dropped (expired, damaged, or superseded by a later record)."""
        old = self.segments()
        if not old:
            return 0
        records = sum(1 for path in old for _ in scan_segment(path))
        live = [(k, e) for k, w, e in self.entries() if e is not None and not self.expired(w, e)]
        fresh = ResponseCache(self.root, clock=self.clock)
        for key, entry in live:
            fresh.put(key, entry.kind, entry.reply)
        fresh.close()
        for path in old:
            path.unlink(missing_ok=True)
        self._index = None
        return records - len(live)

    def clear(self) -> int:
        """Delete every segment; returns how many entries they held."""
        old = self.segments()
        records = sum(1 for path in old for _ in scan_segment(path))
        for path in old:
            path.unlink(missing_ok=True)
        self._index = None
        return records


def scan_segment(path: Path) -> Iterator[tuple[str, _Where]]:
    """The records of one segment, up to the first that does not check out (a torn tail)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; an unreadable file has no records
    except OSError:
        return
    with handle:
        offset = 0
        while True:
            header = handle.readline(_MAX_HEADER)
            if not header.endswith(b"\n"):
                return
            parts = header.split()
            if len(parts) != 5 or parts[0] != MAGIC:
                return
            try:
                key, created, length, crc = (
                    parts[1].decode("ascii"),
                    float(parts[2]),
                    int(parts[3]),
                    int(parts[4], 16),
                )
            except ValueError:
                return
            start = offset + len(header)
            handle.seek(length, os.SEEK_CUR)
            if handle.read(1) != b"\n":
                return
            yield key, _Where(path, start, length, crc, created)
            offset = start + length + 1


def _read_at(where: _Where) -> bytes | None:
    try:
        with open(where.path, "rb") as handle:
            handle.seek(where.offset)
            payload = handle.read(where.length)
    except OSError:
        return None
    if len(payload) != where.length or zlib.crc32(payload) != where.crc:
        return None
    return payload


def _entry(key: str, created: float, payload: bytes) -> CacheEntry | None:
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    kind, reply = data.get("kind"), data.get("reply")
    if not isinstance(kind, str) or not isinstance(reply, dict):
        return None
    return CacheEntry(key, kind, created, reply)
