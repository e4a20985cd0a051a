"""Serve the embedded panel's models until SIGINT or SIGTERM (`python -m pipeline serve local`).

The command line is parsed in pipeline/commands/serve.py (the CLI layer); this module gets the
chosen family, port, log directory and key flag as values and imports nothing of the CLI.

Prints one line per server on stdout, `BASE_URL CONFIG_ID`, flushed once all are ready and
self-tested (the same shape as `serve sim`); the API-key variable, log directory and restarts
go to stderr. The key itself is printed only as `export VAR=...` on request (`--print-key`),
because a standalone server is for a user's own client.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import tempfile
from pathlib import Path

from pipeline.endpoints.local import (
    API_KEY_ENV,
    LocalServer,
    LocalServerError,
    build_servers,
    ensure_port_free,
    load_local_panel,
)
from pipeline.endpoints.local_pool import LocalServerPool, ServerRestart

FAMILIES = ("smollm2", "gemma3", "all")  # `--model` choices: a family of the panel, or all


def serve_local(family: str, *, port: int | None, log_dir: Path | None, print_key: bool) -> int:
    """Serve the panel's models of `family` (or all) from `port` on; 0 once stopped."""
    configs = [
        config
        for config in load_local_panel().configs
        if config.local is not None and family in ("all", config.family)
    ]
    if not configs:
        raise LocalServerError(f"conf/panel/local.yaml has no local model of family {family}")
    ports: dict[str, int] = {}
    if port is not None:
        for offset, config in enumerate(configs):
            ensure_port_free(port + offset)
            ports[config.config_id] = port + offset
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="foldsweep-local-"))
    servers = build_servers(configs, log_dir, ports=ports)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop like Ctrl-C
    try:
        asyncio.run(_serve(servers, log_dir, print_key=print_key))
    except KeyboardInterrupt:
        pass  # interrupted during start-up: the pool has already stopped its servers
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


async def _serve(servers: list[LocalServer], log_dir: Path, *, print_key: bool) -> None:
    def report(event: ServerRestart) -> None:
        state = "restarted" if event.restarted else "NOT restarted"
        print(f"{event.config_id} exited with {event.exit_code}; {state}", file=sys.stderr)

    stop = asyncio.Event()

    def fatal(message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        stop.set()

    async with LocalServerPool(servers, on_restart=report, on_fatal=fatal):
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        for server in servers:
            print(f"{server.base_url} {server.config_id}", flush=True)
        if print_key:
            print(f"export {API_KEY_ENV}={servers[0].api_key}", file=sys.stderr)
        else:
            print(f"API key: rerun with --print-key to see it ({API_KEY_ENV})", file=sys.stderr)
        print(f"logs in {log_dir}; stop with Ctrl-C", file=sys.stderr, flush=True)
        await stop.wait()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
