"""`python -m pipeline report RUN_DIR`: writes RUN_DIR/analysis/report.md with its figures.

The report is built from the outputs of `analyze`; when the run has not been analyzed yet,
the analysis runs first (with the manifest's or the default settings).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.commands.args import CommandParser


def main(argv: list[str]) -> int:
    parser = CommandParser("report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run directory with rows/ parts")
    args = parser.parse_args(argv)
    from jobs.carrier.report import write_report

    print(write_report(args.run_dir))
    return 0
