"""Checks a run's decision against its own tables: every cited number, recomputed.

Why: `decide` refuses to write a page whose numbers its tables do not give back, so a slip
in a study's decision (a wrong column, a filter the page does not name, a rounding) is a
failure with the evidence named, never a wrong number in front of a user. The tests use the
same check on runs whose answers are known.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from jobs import io
from jobs.decision.recompute import agrees, recompute
from pipeline.decision import Evidence, StudyDecision


def _boot(run_dir: Path) -> tuple[int, int] | None:
    try:
        boot = io.manifest_analysis(run_dir).bootstrap
    except (OSError, ValueError):
        return None
    return boot.seed, boot.resamples


def disagreements(decision: StudyDecision) -> list[str]:
    """One line per number its cited table does not give back (empty: every one agrees)."""
    run_dir = Path(decision.run_dir)
    boot = _boot(run_dir)
    tables: dict[str, pl.DataFrame | None] = {}
    found = []
    for answer in decision.answers:
        for evidence in answer.evidence:
            if not evidence.numbers:
                continue
            if evidence.source not in tables:
                tables[evidence.source] = io.read_parquet(run_dir / evidence.source)
            table = tables[evidence.source]
            found += _wrong(evidence, table, boot, f"{decision.run_name}: {answer.subject}")
    return found


def _wrong(
    evidence: Evidence, table: pl.DataFrame | None, boot: tuple[int, int] | None, where: str
) -> list[str]:
    if table is None:
        return [f"{where}: {evidence.label} cites {evidence.source}, which is not there"]
    wrong = []
    for number in evidence.numbers:
        got = recompute(table, evidence.where, number, boot)
        if not agrees(number.shown, got):
            wrong.append(
                f"{where}: {evidence.label} shows {number.shown} but {evidence.source} "
                f"[{evidence.row}] gives {number.rule}({number.column}) = {got}"
            )
    return wrong
