"""`python -m pipeline grade --fixture FILE --answer FILE [--carrier FILE]`.

Grades one recall answer against a fixture's graded facts and prints one JSON object:
`{"recall", "checks_passed", "checks_total", "abstains", "checks": [{"label", "expected",
"kind", "passed", "present_in_carrier", "answered", "outcome", "stock_signature"}...]}`.
`present_in_carrier` is null when no --carrier was given (nothing was audited).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pipeline.carrier.grade import ExpectedFact, Grade, grade
from pipeline.commands.args import CommandParser
from pipeline.user_files import read_bounded
from pipeline.usererror import UserError


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("grade", description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", required=True, type=Path, help="fixture JSON file")
    parser.add_argument("--answer", required=True, type=Path, help="recall answer text file")
    parser.add_argument("--carrier", type=Path, help="final carrier text file (audit)")
    return parser


GRADE_FILE_MAX_BYTES = 16 * 2**20  # an answer or carrier is a few kB; a FIFO or device never


def _read_text(path: Path, what: str) -> str:
    if not path.exists():
        raise UserError(f"{what} file not found: {path}")
    # a FIFO, a device, a directory or a huge file: one line, never a hang (issue 19)
    data = read_bounded(
        path, max_bytes=GRADE_FILE_MAX_BYTES, cap_name="grade's file limit", what=f"{what} file"
    )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what} file is not UTF-8 text: {path} ({exc.reason})") from exc


def _load_graded(path: Path) -> Sequence[ExpectedFact]:
    """The fixture's graded facts; the loader raises FixtureError (a UserError) naming what
    is wrong with a malformed file."""
    if not path.is_file():
        raise UserError(f"fixture file not found: {path}")
    from pipeline.carrier.fixture import load_fixture  # lazy: grading needs no generator

    return load_fixture(path).graded


def to_json(result: Grade) -> dict[str, Any]:
    """The printed object: the grade's totals and every check, in fixture order."""
    return {
        "recall": result.recall,
        "checks_passed": result.checks_passed,
        "checks_total": result.checks_total,
        "abstains": result.abstains,
        "checks": [asdict(check) for check in result.checks],
    }


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    graded = _load_graded(args.fixture)
    if not graded:
        raise UserError(f"fixture has no graded facts: {args.fixture}")
    answer = _read_text(args.answer, "answer")
    carrier = None if args.carrier is None else _read_text(args.carrier, "carrier")
    result = grade(graded, answer, carrier)
    json.dump(to_json(result), sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
