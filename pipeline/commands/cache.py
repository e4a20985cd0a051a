"""`python -m pipeline cache path|list|prune|clear [RUN_DIR]`: the response cache.

With RUN_DIR the run's own cache (RUN_DIR/cache, `cache.scope=run`, the default): what a resume
answers from. Without it the shared cache (`cache.scope=shared`): `--dir` or
$FOLDSWEEP_CACHE/responses, entries expiring after `--ttl` (7d, as `cache.ttl`).

- `path` prints the directory;
- `list` prints the entries, their size, how many have expired or hold no reply, how many
  unreadable (damaged) records the scan skipped, and the oldest and newest;
- `prune` rewrites the live entries into one segment, dropping expired, unreadable and
  superseded ones and counting each; it never drops an intact, current entry;
- `clear` deletes every entry: a resume of that run then pays for its requests again.

`prune` and `clear` never run under a live sweep (issue 32): on a run's cache they take the
run dir's session lock, on a shared directory its own lock (pipeline/sweep/cache_lock.py),
or refuse in one line naming the holder, as `sweep resume` does.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pipeline.commands.args import CommandParser
from pipeline.config.schema import ttl_seconds
from pipeline.config.strict import ConfigError
from pipeline.store.run_lock import run_lock
from pipeline.sweep.cache_lock import cache_alone
from pipeline.sweep.response_cache import RUN_CACHE_DIR, ResponseCache, shared_cache_root
from pipeline.usererror import UserError

ACTIONS = ("path", "list", "prune", "clear")


def main(argv: list[str]) -> int:
    parser = CommandParser("cache", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("run_dir", type=Path, nargs="?", help="a run directory (its own cache)")
    parser.add_argument("--dir", type=Path, help="the shared cache's directory")
    parser.add_argument("--ttl", default="7d", help="the shared cache's entry lifetime")
    args = parser.parse_args(argv)
    cache = _cache(args.run_dir, args.dir, args.ttl)
    if args.action == "path":
        print(cache.root)
    elif args.action == "list":
        print(_listing(cache))
    elif args.action == "prune":
        with _alone(cache.root):
            dropped = cache.prune()
        print(
            f"dropped {dropped.total} entr{_ies(dropped.total)} ({dropped.expired} expired, "
            f"{dropped.unreadable} unreadable, {dropped.superseded} superseded) in {cache.root}"
        )
    else:
        with _alone(cache.root):
            removed, damaged = cache.clear()
        unreadable = f" and {_records(damaged, 'unreadable')}" if damaged else ""
        print(f"removed {removed} entr{_ies(removed)}{unreadable} from {cache.root}")
    return 0


def _cache(run_dir: Path | None, folder: Path | None, ttl: str) -> ResponseCache:
    if run_dir is not None:
        if folder is not None:
            raise UserError("give a RUN_DIR or --dir, not both")
        if not (run_dir / "manifest.json").is_file():
            raise UserError(f"{run_dir} is not a run directory (no manifest.json)")
        return ResponseCache(run_dir / RUN_CACHE_DIR)
    try:
        seconds = ttl_seconds(ttl)
    except ConfigError as exc:
        raise UserError(str(exc).replace("cache.ttl", "--ttl")) from None
    return ResponseCache((folder or shared_cache_root()).expanduser(), seconds)


@contextlib.contextmanager
def _alone(root: Path) -> Iterator[None]:
    """No sweep may use `root` meanwhile: a run's cache is its run dir's (the session lock);
    any other directory has its own lock (a run's cache given as --dir takes both)."""
    with contextlib.ExitStack() as held:
        run = root.parent
        if root.name == RUN_CACHE_DIR and (run / "manifest.json").is_file():
            held.enter_context(run_lock(run))
        held.enter_context(cache_alone(root))
        yield


def _ies(n: int) -> str:
    return "y" if n == 1 else "ies"


def _records(n: int, what: str) -> str:
    return f"{n} {what} record{'' if n == 1 else 's'}"


def _listing(cache: ResponseCache) -> str:
    stats = cache.stats()
    damaged = f"; {_records(stats.damaged, 'unreadable')} skipped" if stats.damaged else ""
    if stats.entries == 0:
        return f"{cache.root}: no entries{damaged}"
    lines = [
        f"{cache.root}: {stats.entries} entr{_ies(stats.entries)} in {stats.segments} "
        f"segment(s), {stats.bytes / 1e6:.2f} MB, {stats.expired} expired or not a reply"
        f"{damaged}"
    ]
    if stats.oldest is not None and stats.newest is not None:
        lines.append(f"oldest {_when(stats.oldest)}, newest {_when(stats.newest)}")
    return "\n".join(lines)


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
