"""What a started llama-server's replies depend on: its identity for the response cache.

A server the engine starts gets a new port every session, so the cache cannot name it by URL
(pipeline/sweep/boundary.py, `endpoint_identity`). Naming it by panel kind and configuration
alone served a configuration whose chat template file had been edited in place from the old
template's entries (issue 32). The identity is therefore everything that changes its replies:

- `weights_sha256`: the GGUF's bytes (and so the GGUF's own chat template, when no file is
  given: `chat_template_sha256` then says `gguf`);
- `chat_template_sha256`: the template file's bytes, read at every start (it is small);
- `flags`: the command line without what cannot change a reply: the binary's and the files'
  paths (their digests stand in), host, port and CORS origin (new every session), and the
  thread counts. Decision: threads are left out because they follow the machine's cores
  (`threads_per_server`), and llama.cpp's CPU kernels split work by output rows, so each
  dot product is summed in the same order whatever the count; keeping them would turn every
  machine's cache into misses. Everything else stays, including flags whose effect on the
  numbers is doubtful (`--cache-ram`): a needless miss costs a request, a wrong hit a result;
- `build_sha256`: the `llama-server` binary's bytes (version, compile flags, CPU baseline).

Weights are hundreds of MB to GBs, so a file's digest is remembered by its real path, size,
mtime, inode and device in `$FOLDSWEEP_CACHE/digests.json` (`file_sha256`): a sweep re-hashes
only a file that changed. An edit in place changes the mtime; a copy or rename changes the
inode. `digest` is the SHA-256 (first 128 bits) of the rest, canonical JSON: what the cache
key uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.endpoints.local_weights import cache_dir

DIGESTS_FILE = "digests.json"
# flags followed by a value that cannot change a reply (see the module doc)
UNCHANGING_FLAGS = frozenset({"--host", "--port", "--cors-origins", "--threads", "--threads-batch"})
# flags whose value is a path: the file's digest is in the identity instead
FILE_FLAGS = frozenset({"--model", "--chat-template-file"})
GGUF_TEMPLATE = "gguf"


def server_identity(
    argv: Sequence[str], weights: Path, template: Path | None, binary: Path
) -> dict[str, Any]:
    """The identity of a llama-server started with `argv` (see the module doc)."""
    identity: dict[str, Any] = {
        "weights_sha256": file_sha256(weights),
        "chat_template_sha256": GGUF_TEMPLATE if template is None else sha256_of(template),
        "flags": output_flags(argv),
        "build_sha256": file_sha256(binary),
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()
    return {**identity, "digest": hashlib.sha256(canonical).hexdigest()[:32]}


def output_flags(argv: Sequence[str]) -> list[str]:
    """The command line's flags that can change a reply, in order, with their values."""
    kept: list[str] = []
    args = list(argv[1:])  # argv[0] is the binary: its digest is the build
    index = 0
    while index < len(args):
        flag = args[index]
        takes_value = index + 1 < len(args) and not args[index + 1].startswith("--")
        value = [args[index + 1]] if takes_value else []
        index += 1 + len(value)
        if flag in UNCHANGING_FLAGS:
            continue
        kept += [flag] if flag in FILE_FLAGS else [flag, *value]
    return kept


def file_sha256(path: Path, store: Path | None = None) -> str:
    """The file's SHA-256, remembered by real path, size, mtime, inode and device in `store`
    (default `$FOLDSWEEP_CACHE/digests.json`): hashed again only when one of them changed."""
    real = path.resolve()
    stat = real.stat()
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev]
    store = store or cache_dir() / DIGESTS_FILE
    known = _load(store)
    entry = known.get(str(real))
    if isinstance(entry, dict) and entry.get("stamp") == stamp and "sha256" in entry:
        return str(entry["sha256"])
    digest = sha256_of(real)
    known[str(real)] = {"stamp": stamp, "sha256": digest}
    _save(store, known)
    return digest


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _load(store: Path) -> dict[str, Any]:
    """The remembered digests; an unreadable or foreign file remembers nothing."""
    try:
        data = json.loads(store.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(store: Path, known: dict[str, Any]) -> None:
    """Written to a temporary name and renamed, so a reader never sees half a file; two
    sweeps saving at once lose at most the other's new entry (hashed again next time). Not
    being able to write only costs the next sweep a hash."""
    temp = store.with_name(f".{store.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        store.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(known, sort_keys=True))
        os.replace(temp, store)
    with contextlib.suppress(OSError):
        temp.unlink(missing_ok=True)
