"""`python -m pipeline cache path|list|prune|clear [RUN_DIR]`: the response cache.

With RUN_DIR the run's own cache (RUN_DIR/cache, `cache.scope=run`, the default): what a resume
answers from. Without it the shared cache (`cache.scope=shared`): `--dir` or
$FOLDSWEEP_CACHE/responses, entries expiring after `--ttl` (7d, as `cache.ttl`).

- `path` prints the directory;
- `list` prints the entries, their size, how many have expired or hold no reply, how many
  unreadable (damaged) records the scan skipped, and the oldest and newest; then, per
  configuration and model, the entries, their bytes and the USD their requests were billed
  when stored (pipeline/sweep/cache_census.py; entries from before entries named their
  configuration are "unknown configuration");
- `prune` rewrites the live entries into one segment, dropping expired, unreadable and
  superseded ones and counting each; it never drops an intact, current entry;
- `clear` deletes every entry: a resume of that run then pays for its requests again.
  `clear --config ID [--model M]` deletes that configuration's (and model's) entries only,
  rewriting the others as `prune` does but keeping expired ones; an ID the cache does not
  hold is one line naming those it does.

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
from pipeline.sweep.cache_census import OriginShare, census
from pipeline.sweep.cache_lock import cache_alone
from pipeline.sweep.response_cache import (
    RUN_CACHE_DIR,
    CacheEntry,
    Origin,
    ResponseCache,
    shared_cache_root,
)
from pipeline.usererror import UserError

ACTIONS = ("path", "list", "prune", "clear")


def main(argv: list[str]) -> int:
    parser = CommandParser("cache", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=ACTIONS, help="what to do")
    parser.add_argument("run_dir", type=Path, nargs="?", help="a run directory (its own cache)")
    parser.add_argument("--dir", type=Path, help="the shared cache's directory")
    parser.add_argument("--ttl", default="7d", help="the shared cache's entry lifetime")
    parser.add_argument("--config", help="clear: only this configuration's entries")
    parser.add_argument("--model", help="clear: only this model's entries")
    args = parser.parse_args(argv)
    if args.action != "clear" and (args.config is not None or args.model is not None):
        raise UserError("cache: --config and --model go with `clear` only")
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
    elif args.config is not None or args.model is not None:
        with _alone(cache.root):
            print(_clear_some(cache, args.config, args.model))
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
    lines.extend(_shares_table(census(cache)))
    return "\n".join(lines)


UNKNOWN = "unknown configuration"
_USD_NOTES = (
    "USD: what the requests were billed when their replies were stored (the provider's charge, "
    "else the configuration's prices then); nothing is priced again",
    "estimated: replies without usage, billed at their upper estimate; "
    "unpriced: no bill stored, not in USD",
)


def _shares_table(shares: list[OriginShare]) -> list[str]:
    """One aligned row per configuration and model: names left, numbers right, notes last."""
    rows: list[tuple[str, ...]] = [
        ("configuration", "model", "entries", "expired", "bytes", "USD", "")
    ]
    for share in shares:
        config, model = share.origin if share.origin is not None else (UNKNOWN, "-")
        notes = [f"{share.estimated} estimated"] if share.estimated else []
        notes += [f"{share.unpriced} unpriced"] if share.unpriced else []
        counts = (share.entries, share.expired, share.bytes)
        rows.append((config, model, *map(str, counts), f"${share.usd:.4f}", ", ".join(notes)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if i < 2 or i == 6 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return [*lines, *_USD_NOTES]


def _clear_some(cache: ResponseCache, config: str | None, model: str | None) -> str:
    """Remove one configuration's (and/or model's) entries; refuse an ID the cache lacks."""
    origins = [s.origin for s in census(cache) if s.origin is not None]
    _check_present(cache, origins, config, model)

    def chosen(entry: CacheEntry) -> bool:
        origin = entry.origin
        return (
            origin is not None
            and (config is None or origin.config_id == config)
            and (model is None or origin.model == model)
        )

    done = cache.remove(chosen)
    what = " and ".join(
        part
        for part in (
            f"configuration {config}" if config is not None else "",
            f"model {model}" if model is not None else "",
        )
        if part
    )
    dropped = ""
    if done.superseded or done.unreadable:
        dropped = (
            f"; the rewrite dropped {_records(done.superseded, 'superseded')} and "
            f"{_records(done.unreadable, 'unreadable')}"
        )
    return (
        f"removed {done.removed} entr{_ies(done.removed)} of {what} from {cache.root}; "
        f"kept {done.kept}{dropped}"
    )


def _check_present(
    cache: ResponseCache, origins: list[Origin], config: str | None, model: str | None
) -> None:
    if config is not None and all(o.config_id != config for o in origins):
        present = sorted({o.config_id for o in origins})
        raise UserError(
            f"cache clear: no entries of configuration {config!r} in {cache.root}; "
            + _present("configurations", present)
        )
    scope = [o for o in origins if config is None or o.config_id == config]
    if model is not None and all(o.model != model for o in scope):
        whose = f"configuration {config}'s" if config is not None else "present"
        raise UserError(
            f"cache clear: no entries of model {model!r}"
            + (f" in configuration {config}" if config is not None else "")
            + f" in {cache.root}; "
            + _present(f"{whose} models", sorted({o.model for o in scope}))
        )


def _present(what: str, names: list[str]) -> str:
    if not names:
        return "it holds no entries that name their configuration"
    return f"{what}: {', '.join(names)}"


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
