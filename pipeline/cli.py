"""Thin dispatcher: one module per subcommand under pipeline.commands.

Each subcommand module exposes `main(argv: list[str]) -> int`. Errors the user can fix
(ConfigError, RunDirError, ...) are printed as one line, without a traceback, exit code 2.
"""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS: dict[str, str] = {
    "sweep": "run a sweep (Hydra overrides; +panel=NAME); prints the run directory",
    "panel": "show which configurations of a panel are in and out, and why",
    "probe": "probe each configuration for the request shapes the arms need",
    "fixture": "write a deterministic fixture and print its SHA-256",
    "grade": "grade one recall answer against a fixture",
    "analyze": "run every analysis job on a run directory",
    "report": "write RUN_DIR/analysis/report.md with figures",
    "decide": "join runs of any studies into one page: what to do, and why",
    "query": "run Polars SQL over a run's tables",
    "serve": "serve a simulated, local or replay endpoint until stopped",
    "cache": "the response cache: path, list, prune or clear (a run's or the shared one)",
    "traces": "scan reasoning traces (length, quality) or class chat templates offline",
    "view": "browse run directories in a local web viewer, or --export one HTML file",
    "list": "names and descriptions: arms, policies, scenarios, panels or studies",
}


def _usage() -> str:
    lines = ["usage: python -m pipeline SUBCOMMAND [args]", "", "subcommands:"]
    lines += [f"  {name:<8} {text}" for name, text in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"error: unknown subcommand '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"pipeline.commands.{name}")
    from pipeline.usererror import UserError

    try:
        code: int = module.main(rest)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return code
