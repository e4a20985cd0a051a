"""`python -m pipeline analyze RUN_DIR [--contrasts q_vs_j,m_vs_q] [--bootstrap-seed N]
[--bootstrap-resamples N]`: runs the run's study analysis and writes RUN_DIR/analysis/ + report.md.

The study is the one the run's manifest names (pipeline.studies.of_run), analysed and
reported by the registry's rule for every study (`analyze_and_report`: a run without rows gets
the nothing-ran report). Contrasts and bootstrap settings are the manifest's `config.analysis`
(read through the config schema), each overridden by its flag. Every part's footer is checked
first, and the parts the analysis read are fingerprinted into RUN_DIR/analysis/inputs.json
(pipeline.store.analysis_inputs), which `report` checks.

A run still being written (its lock held by a live sweep of another process) is analysed as
it stands, with one line on stderr and a warning in the report's first lines saying the
analysis is partial (jobs/partial_run.py: it does not wait for the lock).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from pipeline.commands.args import CommandParser
from pipeline.config.schema import AnalysisConfig
from pipeline.usererror import UserError


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("analyze", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a sweep's run directory")
    parser.add_argument("--contrasts", help="comma-separated <b>_vs_<a> names")
    parser.add_argument("--bootstrap-seed", type=int, help="bootstrap seed (default: manifest)")
    parser.add_argument("--bootstrap-resamples", type=int, help="resamples (default: manifest)")
    return parser


def require_run_dir(run_dir: Path) -> Path:
    """`run_dir` if it is a directory; a one-line RunDirError otherwise."""
    from pipeline.store import RunDirError

    if not run_dir.is_dir():
        raise RunDirError(f"run directory not found: {run_dir}")
    return run_dir


def with_flags(
    analysis: AnalysisConfig, args: argparse.Namespace, *, study: str, uses_contrasts: bool
) -> AnalysisConfig:
    """`analysis` with each given flag in place of its setting; `--contrasts` is refused for a
    study that has no paired arm contrasts (it would be silently ignored)."""
    if args.contrasts is not None and not uses_contrasts:
        raise UserError(
            f"analyze: --contrasts does not apply to study {study} (its arms are compared in "
            "its own tables); drop the flag"
        )
    if args.bootstrap_resamples is not None and args.bootstrap_resamples < 1:
        raise UserError("analyze: --bootstrap-resamples must be at least 1")
    contrasts = tuple(c.strip() for c in (args.contrasts or "").split(",") if c.strip())
    bootstrap = analysis.bootstrap
    if args.bootstrap_seed is not None:
        bootstrap = dataclasses.replace(bootstrap, seed=args.bootstrap_seed)
    if args.bootstrap_resamples is not None:
        bootstrap = dataclasses.replace(bootstrap, resamples=args.bootstrap_resamples)
    return dataclasses.replace(
        analysis, contrasts=contrasts or analysis.contrasts, bootstrap=bootstrap
    )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from jobs.io import manifest_analysis
    from jobs.partial_run import partial_note
    from pipeline import studies
    from pipeline.store.run_lock import live_writer

    run_dir = require_run_dir(args.run_dir)
    holder = live_writer(run_dir)  # a sweep still writing it: say so (jobs/partial_run.py)
    if holder is not None:
        print(partial_note(run_dir, holder), file=sys.stderr, flush=True)
    definition = studies.of_run(run_dir)
    analysis = with_flags(
        manifest_analysis(run_dir),
        args,
        study=definition.name,
        uses_contrasts=definition.uses_contrasts,
    )
    report = studies.analyze_and_report(definition, run_dir, analysis)
    print(f"analysis: {report.parent}")
    print(f"report: {report}")
    return 0
