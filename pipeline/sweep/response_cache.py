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
leaves a whole record or a torn tail. A record counts only when its header, its length (a
newline right after the payload) and its CRC all check out; anything else is one unreadable
stretch, and the scanner resynchronises at the next line that starts with the magic (issue
32: it used to stop there, so one damaged length field hid every later record, and `prune`
deleted them). The JSON payload never holds a raw newline (orjson escapes it), so only a
header can start a line. The CRC is checked while scanning, not only when an entry is read: a
damaged length can point exactly at the end of a later record, and only the CRC tells that
apart from a whole one. So a kill at any instant leaves a whole entry or none, and a corrupt,
truncated, foreign-version or expired entry is a miss, never a crash. The CRC detects damage;
it authenticates nothing (docs/cluster.md, who may write a cache directory). Records are not
fsynced: a process kill keeps them; a power cut may lose the last.

Each entry also names the configuration and model whose request wrote it (`Origin`, in the
payload beside the reply), so `cache list` can say what each configuration's replies cost and
`cache clear --config` can drop one. The cache key does not contain the configuration: two
configurations that send the same body to the same server share an entry, and it names the
one that paid for it. Entries written before the origin was stored have none, and read as
before ("unknown configuration").

The index (key -> where) is read from the directory's segments when the cache is first asked,
and entries this process writes join it; another process's entries written later are not seen
until the next session (each (unit, request position) is asked by one worker). Only the reply
is stored: no header, no API key, nothing the body did not already say. This module lives in
the engine (pipeline.sweep), not pipeline.store, whose package loads Polars: the actors that
use it import no pyarrow or Polars and stay small.
"""

from __future__ import annotations

import mmap
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


class Origin(NamedTuple):
    """Who wrote an entry: the configuration whose request it answers, and its model."""

    config_id: str
    model: str


@dataclass(frozen=True)
class CacheEntry:
    key: str
    kind: str  # chat | template
    created: float  # epoch seconds
    reply: dict[str, Any]
    origin: Origin | None = None  # None: written before entries named their configuration


@dataclass(frozen=True)
class CacheStats:
    entries: int
    bytes: int
    expired: int  # indexed, but expired or not a reply
    oldest: float | None
    newest: float | None
    segments: int
    damaged: int = 0  # stretches of the segments that are no whole record (skipped)


@dataclass(frozen=True)
class Dropped:
    """What `prune` dropped, by why: every record it did not carry over is counted once."""

    expired: int  # past the TTL
    unreadable: int  # damaged stretches, and whole records that hold no reply
    superseded: int  # a later record of the same key answers instead

    @property
    def total(self) -> int:
        return self.expired + self.unreadable + self.superseded


@dataclass(frozen=True)
class Removed:
    """What `remove` did: the entries it was asked to drop, the ones it kept, and the records
    the rewrite dropped on the way (as `prune` would), each counted once."""

    removed: int
    kept: int
    superseded: int  # a later record of the same key answered instead
    unreadable: int  # damaged stretches, and records that could not be read back


class _Where(NamedTuple):
    path: Path
    offset: int  # of the payload
    length: int
    crc: int
    created: float


class SegmentScan(NamedTuple):
    """One segment's whole records, in file order, and how many stretches were skipped."""

    records: list[tuple[str, _Where]]
    damaged: int


class ResponseCache:
    """Get and put replies by key under `root`; `ttl_s` None: entries never expire."""

    def __init__(
        self, root: Path, ttl_s: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.root = root
        self.ttl_s = ttl_s
        self.clock = clock
        self._index: dict[str, _Where] | None = None
        self._records = 0  # whole records in the segments, superseded ones included
        self._damaged = 0  # unreadable stretches the scan skipped
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
            self._records = self._damaged = 0
            for path in self.segments():
                scan = scan_segment(path)
                self._records += len(scan.records)
                self._damaged += scan.damaged
                for key, where in scan.records:
                    known = self._index.get(key)
                    if known is None or where.created >= known.created:  # the latest wins
                        self._index[key] = where
        return self._index

    def segments(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob(SEGMENT_GLOB) if p.is_file())

    # -- writing ----------------------------------------------------------------------------
    def put(
        self,
        key: str,
        kind: str,
        reply: dict[str, Any],
        created: float | None = None,
        origin: Origin | None = None,
    ) -> None:
        """Append one whole record to this process's segment, in one write; `created` is now
        unless given (a prune keeps each entry's age, so its TTL is not restarted)."""
        record: dict[str, Any] = {"kind": kind, "reply": reply}
        if origin is not None:
            record["config_id"], record["model"] = origin
        self._append(key, orjson.dumps(record), self.clock() if created is None else created)

    def _append(self, key: str, payload: bytes, created: float) -> None:
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

    def close(self, *, sync: bool = False) -> None:
        if self._fd is not None:
            if sync:
                os.fsync(self._fd)
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
        oldest, newest = min(created, default=None), max(created, default=None)
        return CacheStats(count, size, expired, oldest, newest, segments, self._damaged)

    def prune(self) -> Dropped:
        """Rewrite the live entries into one new segment (synced), then delete the old
        segments. Every whole, unexpired record that is the latest of its key is carried
        over, so no intact reply is lost; what is not is counted by why (`Dropped`)."""
        self._index = None
        old = self.segments()
        if not old:
            return Dropped(0, 0, 0)
        entries = list(self.entries())  # scans `old` (and anything newer, which is kept)
        live = [(k, e) for k, w, e in entries if e is not None and not self.expired(w, e)]
        not_replies = sum(1 for _k, _w, e in entries if e is None)
        dropped = Dropped(
            expired=len(entries) - len(live) - not_replies,
            unreadable=self._damaged + not_replies,
            superseded=self._records - len(entries),
        )
        fresh = ResponseCache(self.root, clock=self.clock)
        for key, entry in live:
            fresh.put(key, entry.kind, entry.reply, entry.created, entry.origin)
        fresh.close(sync=True)  # on disk before the only other copy is deleted
        for path in old:
            path.unlink(missing_ok=True)
        self._index = None
        return dropped

    def remove(self, chosen: Callable[[CacheEntry], bool]) -> Removed:
        """Drop the entries `chosen` picks: every other record that is the latest of its key
        (expired ones and ones that are no reply included) is copied byte for byte, with its
        age, into one new segment (synced) before the old segments are deleted, as `prune`
        does. Picks nothing: changes nothing. Records another process appends meanwhile are
        not seen: run it alone (the `cache` command takes the lock)."""
        self._index = None
        old = self.segments()
        index = self.index()
        kept: list[tuple[str, bytes, float]] = []
        removed = unreadable = 0
        for key, where in index.items():
            payload = _read_at(where)
            if payload is None:
                unreadable += 1
                continue
            entry = _entry(key, where.created, payload)
            if entry is not None and chosen(entry):
                removed += 1
            else:
                kept.append((key, payload, where.created))
        superseded = self._records - len(index)
        if removed == 0:
            self._index = None
            return Removed(0, len(kept), 0, 0)
        fresh = ResponseCache(self.root, clock=self.clock)
        for key, payload, created in kept:
            fresh._append(key, payload, created)
        fresh.close(sync=True)  # on disk before the only other copy is deleted
        for path in old:
            path.unlink(missing_ok=True)
        self._index = None
        return Removed(removed, len(kept), superseded, unreadable + self._damaged)

    def clear(self) -> tuple[int, int]:
        """Delete every segment; returns how many whole records and unreadable stretches
        they held."""
        self._index = None
        self.index()
        records, damaged = self._records, self._damaged
        for path in self.segments():
            path.unlink(missing_ok=True)
        self._index = None
        return records, damaged


def scan_segment(path: Path) -> SegmentScan:
    """The whole records of one segment; a stretch that is none (damage, a torn tail) is
    skipped up to the next line starting with the magic, and counted (see the module doc)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return SegmentScan([], 0)
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _scan(path, data)
    except (OSError, ValueError):  # unreadable, or shrunk to nothing meanwhile: no records
        return SegmentScan([], 0)


def _scan(path: Path, data: mmap.mmap) -> SegmentScan:
    records: list[tuple[str, _Where]] = []
    damaged, offset, size = 0, 0, len(data)
    while offset < size:
        found = _record_at(path, data, offset)
        if found is not None:
            records.append(found[:2])
            offset = found[2]
            continue
        damaged += 1
        after = data.find(b"\n" + MAGIC + b" ", offset)
        offset = size if after < 0 else after + 1
    return SegmentScan(records, damaged)


def _record_at(path: Path, data: mmap.mmap, offset: int) -> tuple[str, _Where, int] | None:
    """The record starting at `offset` and where the next one starts, if it checks out."""
    end_of_header = data.find(b"\n", offset, offset + _MAX_HEADER)
    if end_of_header < 0:
        return None
    parts = data[offset:end_of_header].split()
    if len(parts) != 5 or parts[0] != MAGIC:
        return None
    try:
        key, created = parts[1].decode("ascii"), float(parts[2])
        length, crc = int(parts[3]), int(parts[4], 16)
    except ValueError:
        return None
    start = end_of_header + 1
    end = start + length
    if length < 0 or end >= len(data) or data[end] != ord("\n"):
        return None
    if zlib.crc32(data[start:end]) != crc:
        return None
    return key, _Where(path, start, length, crc, created), end + 1


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
    config_id, model = data.get("config_id"), data.get("model")
    origin = None
    if isinstance(config_id, str) and isinstance(model, str):
        origin = Origin(config_id, model)
    return CacheEntry(key, kind, created, reply, origin)
