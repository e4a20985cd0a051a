"""`python -m pipeline analyze RUN_DIR [--contrasts q_vs_j,m_vs_q] [--bootstrap-seed N]
[--bootstrap-resamples N]`: runs every analysis job and writes RUN_DIR/analysis/ + report.md.

Contrasts and bootstrap settings default to the run's manifest (config.analysis), then to
the built-in defaults (seed 166, 10,000 resamples).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.commands.args import CommandParser
from pipeline.usererror import UserError


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("analyze", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run directory with rows/ parts")
    parser.add_argument("--contrasts", help="comma-separated <b>_vs_<a> names")
    parser.add_argument("--bootstrap-seed", type=int, help="bootstrap seed (default 166)")
    parser.add_argument("--bootstrap-resamples", type=int, help="resamples (default 10000)")
    return parser


def manifest_bootstrap(manifest: dict[str, Any] | None) -> tuple[int, int]:
    """(seed, resamples) from config.analysis.bootstrap of a manifest, else the defaults."""
    config = (manifest or {}).get("config")
    analysis = config.get("analysis") if isinstance(config, dict) else None
    bootstrap = analysis.get("bootstrap") if isinstance(analysis, dict) else None
    bootstrap = bootstrap if isinstance(bootstrap, dict) else {}
    seed, resamples = bootstrap.get("seed", 166), bootstrap.get("resamples", 10_000)
    return (
        seed if isinstance(seed, int) else 166,
        resamples if isinstance(resamples, int) else 10_000,
    )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from jobs import io
    from jobs.carrier.run_all import analyze

    run_dir = io.require_run_dir(args.run_dir)
    seed, resamples = manifest_bootstrap(io.read_manifest(run_dir))
    if args.bootstrap_resamples is not None and args.bootstrap_resamples < 1:
        raise UserError("analyze: --bootstrap-resamples must be at least 1")
    contrasts = (
        [c.strip() for c in args.contrasts.split(",") if c.strip()] if args.contrasts else None
    )
    summary = analyze(
        run_dir,
        contrasts=contrasts,
        bootstrap_seed=seed if args.bootstrap_seed is None else args.bootstrap_seed,
        bootstrap_resamples=resamples
        if args.bootstrap_resamples is None
        else args.bootstrap_resamples,
    )
    print(f"analysis: {summary.analysis_dir}")
    print(f"contrasts: {', '.join(summary.contrasts) or 'none'}")
    for skipped in summary.skipped:
        print(f"skipped {skipped.contrast}: {skipped.reason}")
    print(f"report: {summary.report}")
    return 0
