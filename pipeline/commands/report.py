"""`python -m pipeline report RUN_DIR`: writes RUN_DIR/analysis/report.md with its figures.

The report is built from the outputs of `analyze`; when the run has not been analyzed yet,
the analysis runs first (with the manifest's or the default settings).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NoReturn

from pipeline.usererror import UserError


class _Parser(argparse.ArgumentParser):
    """Argument errors become a UserError, so the CLI prints one line like every other."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"report: {message}")


def main(argv: list[str]) -> int:
    parser = _Parser(prog="python -m pipeline report", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run directory with rows/ parts")
    args = parser.parse_args(argv)
    from jobs.carrier.report import write_report

    print(write_report(args.run_dir))
    return 0
