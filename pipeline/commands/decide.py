"""`python -m pipeline decide RUN_DIR [RUN_DIR ...] [--out DIR] [--provider NAME]
[--template FILE] [--retention F]`: one page that says what to do, joined across studies.

Every input is checked before any work, each refusal one line (exit 2): no run directory, a
path that is not a run directory or a damaged run (the store's `validate_run_dir`), a run of a
study that has no `decide` yet, `--retention` outside (0, 1], a `--template` that is not a
readable file. Then each run's analysis is brought up to date by the registry's rule
(`pipeline.studies.report`: analysed when never analysed, refused in one line when stale), its
study's `decide` reads the outputs, every number it shows is recomputed from the table it
cites (jobs/decision/cited.py; a disagreement is a bug: exit 1, no page), and the joiner
(jobs/decision/) writes decision.md and decision.json to `--out` (default: a new
`decision-<UTC time>` directory beside the first run). The runs are otherwise only read.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.commands.args import CommandParser
from pipeline.decision import DecisionOptions, StudyDecision
from pipeline.usererror import UserError

Decide = Callable[[Path, Any, DecisionOptions], StudyDecision]


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("decide", description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="*", type=Path, help="run directories of any study")
    parser.add_argument("--out", type=Path, help="output directory (default: beside the first run)")
    parser.add_argument("--provider", help="a provider or cache model (default: each in the runs)")
    parser.add_argument("--template", type=Path, help="a chat template file (default: each)")
    parser.add_argument(
        "--retention", type=float, default=0.9, help="share of facts a summary keeps (0.9)"
    )
    return parser


def options(args: argparse.Namespace) -> DecisionOptions:
    """The question asked, checked: one line on a bad value."""
    if not args.run_dirs:
        raise UserError("decide: give at least one RUN_DIR (a sweep's run directory)")
    if not 0.0 < args.retention <= 1.0:
        raise UserError(f"decide: --retention must be in (0, 1], not {args.retention:g}")
    template: Path | None = args.template
    if template is not None and not (template.is_file() and os.access(template, os.R_OK)):
        raise UserError(
            f"decide: --template {template} is not a readable file; give a chat template file"
        )
    return DecisionOptions(args.provider, template, args.retention)


def checked(run_dir: Path) -> tuple[Any, Decide]:
    """The run's study definition and its `decide`, after the store checked the run."""
    from pipeline import studies
    from pipeline.commands.analyze import require_run_dir
    from pipeline.store import RunDirError, validate_run_dir

    require_run_dir(run_dir)
    if not (run_dir / "manifest.json").is_file():
        raise RunDirError(
            f"{run_dir} is not a run directory (no manifest.json); give a sweep's run directory"
        )
    definition = studies.of_run(run_dir)
    validate_run_dir(run_dir, studies.layout(definition))
    decide: Decide | None = getattr(definition, "decide", None)
    if decide is None:
        raise UserError(
            f"decide: study {definition.name} has no decision yet ({run_dir}); leave that run out"
        )
    return definition, decide


def default_out(first: Path) -> Path:
    """A new directory beside the first run: `decision-<UTC time>`, numbered if taken."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = first.resolve().parent / f"decision-{stamp}"
    taken = 1
    found = base
    while found.exists():
        taken += 1
        found = base.with_name(f"{base.name}-{taken}")
    return found


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    asked = options(args)
    runs = [(run_dir, *checked(run_dir)) for run_dir in args.run_dirs]
    from jobs.decision import write_decision
    from jobs.decision.cited import disagreements
    from pipeline import studies

    decisions = []
    for run_dir, definition, decide in runs:
        studies.report(definition, run_dir)
        decisions.append(decide(run_dir, studies.layout(definition), asked))
    wrong = [line for decision in decisions for line in disagreements(decision)]
    if wrong:  # a slip in a study's decision, never the user's: no page with a wrong number
        for line in wrong:
            print(f"decide: {line}", file=sys.stderr)
        print(
            f"decide: {len(wrong)} numbers disagree with their tables; no page written (a bug: "
            "please report it with these lines)",
            file=sys.stderr,
        )
        return 1
    expected = [
        name for name in studies.names() if getattr(studies.definition(name), "decide", None)
    ]
    out = args.out or default_out(args.run_dirs[0])
    for path in write_decision(decisions, asked, out, expected):
        print(path)
    return 0
