"""`python -m pipeline view RUN_DIR [RUN_DIR ...] [--port N]`: a local, read-only run viewer.

Serves the runs on http://127.0.0.1:PORT/ (loopback only; the port is an option, 0 picks a
free one), prints the URL, and stops on Ctrl-C; `/decision` is the runs' decision page (the
index links it). `--export OUT.html RUN_DIR [RUN_DIR ...]` writes one self-contained HTML file
instead (each run's pages; with several, their index, comparison and decision page too;
figures and data inline; it opens from disk with no server; `--transcripts-per-unit N` views
of a unit page, 1..1000, default 5) and prints its path and size, with a one-line warning on
stderr above `export.WARN_BYTES` (50 MB);
a path it cannot write (a directory, `/proc/x.html`) is one `error:` line, exit 2. The pages
are `pipeline.view`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.commands.args import CommandParser
from pipeline.usererror import UserError

if TYPE_CHECKING:
    from pipeline.view import Run

DEFAULT_PORT = 7576
DEFAULT_VIEWS = 5  # pipeline.view.export.VIEWS_PER_UNIT (not imported: the CLI stays light)
MAX_VIEWS = 1000  # pipeline.view.export.MAX_VIEWS_PER_UNIT


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("view", description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, help="one or more run directories")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 = any free port)",
    )
    parser.add_argument(
        "--export",
        type=Path,
        metavar="OUT.html",
        help="write one self-contained HTML file of the runs instead of serving",
    )
    parser.add_argument(
        "--transcripts-per-unit",
        type=int,
        default=None,
        metavar="N",
        help=f"with --export: the views (transcripts) of one unit page the file holds "
        f"(1..{MAX_VIEWS}; default {DEFAULT_VIEWS})",
    )
    return parser


async def serve(runs: list[Run], port: int) -> None:
    from aiohttp import web

    from pipeline.view import HOST, build_app

    stopped = _stop_on_signals()  # before the URL is printed: a signal right after it counts
    runner = web.AppRunner(build_app(runs), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, port)
        try:
            await site.start()
        except OSError as exc:
            raise UserError(
                f"view: cannot listen on {HOST}:{port} ({exc.strerror}); pick another with --port"
            ) from None
        bound = runner.addresses[0][1]
        print(f"viewing {len(runs)} run(s) at http://{HOST}:{bound}/ (Ctrl-C stops)", flush=True)
        await stopped.wait()
    finally:
        await runner.cleanup()


def _stop_on_signals() -> asyncio.Event:
    """An event set by Ctrl-C (SIGINT) or SIGTERM, even where the shell started us with SIGINT
    ignored (a background job); the caller then cleans the server up."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: KeyboardInterrupt instead
            loop.add_signal_handler(signum, stop.set)
    return stop


def _warn_if_large(out: Path, size: int) -> None:
    from pipeline.view import export

    if size > export.WARN_BYTES:
        print(
            f"warning: {out} is {size / 1e6:.1f} MB, over the {export.WARN_BYTES / 1e6:.0f} MB a "
            "browser opens comfortably; `python -m pipeline view RUN_DIR` serves the same pages "
            "one at a time",
            file=sys.stderr,
        )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise UserError(f"view: --port must be 0..65535, not {args.port}")
    views = args.transcripts_per_unit
    if views is not None and args.export is None:
        raise UserError("view: --transcripts-per-unit applies to --export only")
    if views is not None and not 1 <= views <= MAX_VIEWS:
        raise UserError(f"view: --transcripts-per-unit must be 1..{MAX_VIEWS}, not {views}")
    from pipeline.view import open_runs, write_export

    if args.export is not None:
        runs = open_runs(args.run_dirs)
        size = write_export(runs, args.export, DEFAULT_VIEWS if views is None else views)
        print(f"{args.export} ({size / 1e6:.1f} MB)")
        _warn_if_large(args.export, size)
        return 0
    runs = open_runs(args.run_dirs)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(runs, args.port))
    print("viewer stopped", flush=True)
    return 0
