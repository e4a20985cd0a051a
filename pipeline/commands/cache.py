"""`python -m pipeline cache path|list|prune|clear [RUN_DIR]`: the response cache.

With RUN_DIR the run's own cache (RUN_DIR/cache, `cache.scope=run`, the default): what a resume
answers from. Without it the shared cache (`cache.scope=shared`): `--dir` or
$FOLDSWEEP_CACHE/responses, entries expiring after `--ttl` (7d, as `cache.ttl`).

- `path` prints the directory;
- `list` prints the entries, their size, how many have expired or are unreadable, and the
  oldest and newest;
- `prune` rewrites the live entries into one segment, dropping expired, damaged and superseded
  ones (run it when no sweep is writing that directory);
- `clear` deletes every entry: a resume of that run then pays for its requests again.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from pipeline.commands.args import CommandParser
from pipeline.config.schema import ttl_seconds
from pipeline.config.strict import ConfigError
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
        dropped = cache.prune()
        print(
            f"dropped {dropped} expired, damaged or superseded entr{_ies(dropped)} in {cache.root}"
        )
    else:
        removed = cache.clear()
        print(f"removed {removed} entr{_ies(removed)} from {cache.root}")
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


def _ies(n: int) -> str:
    return "y" if n == 1 else "ies"


def _listing(cache: ResponseCache) -> str:
    stats = cache.stats()
    if stats.entries == 0:
        return f"{cache.root}: no entries"
    lines = [
        f"{cache.root}: {stats.entries} entr{_ies(stats.entries)} in {stats.segments} "
        f"segment(s), {stats.bytes / 1e6:.2f} MB, {stats.expired} expired or unreadable"
    ]
    if stats.oldest is not None and stats.newest is not None:
        lines.append(f"oldest {_when(stats.oldest)}, newest {_when(stats.newest)}")
    return "\n".join(lines)


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
