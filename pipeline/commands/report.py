"""`python -m pipeline report RUN_DIR`: writes RUN_DIR/analysis/report.md with its figures.

The report is the run's study's (the manifest names it), built from the outputs of `analyze`;
when the run has not been analyzed yet, the analysis runs first, with the manifest's settings.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.commands.analyze import require_run_dir
from pipeline.commands.args import CommandParser


def main(argv: list[str]) -> int:
    parser = CommandParser("report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a sweep's run directory")
    args = parser.parse_args(argv)
    from pipeline import studies

    run_dir = require_run_dir(args.run_dir)
    print(studies.of_run(run_dir).report(run_dir))
    return 0
