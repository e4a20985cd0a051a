"""The decision page of the opened runs, and the tables it cites (docs/engine.md "Decide").

The same values as `python -m pipeline decide` (each study's `decide`, joined by
jobs/decision/), with the viewer's defaults: every provider and template of the runs, and the
retention goal 0.9 (`?provider=`, `?retention=` on the served page). The viewer only reads: a
run whose analysis is missing or older than its tables is listed with the one line that says
how to bring it up to date, never analysed here. Every number links to the rows of the table
it comes from (`table`), where the same page's test recomputes it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl
from markupsafe import Markup, escape

from jobs.decision.join import SIMULATED_BANNER, Page, join
from jobs.decision.recompute import rows
from pipeline.decision import DecisionOptions, Evidence, Number, StudyDecision, Where
from pipeline.store.analysis_inputs import analysis_not_current
from pipeline.view.runs import Run

TABLE_ROWS = 500
"""A cited table page shows at most this many rows (the analysis tables are smaller)."""


@dataclass(frozen=True)
class Decided:
    """The page's values: the joined page, each run's decision and the runs left out."""

    page: Page
    decisions: list[tuple[Run, StudyDecision]]
    left_out: list[str]
    options: DecisionOptions


def has_decision(run: Run) -> bool:
    from pipeline import studies

    return getattr(studies.definition(run.study), "decide", None) is not None


def options_of(params: Mapping[str, str]) -> DecisionOptions:
    """The served page's question; a retention that is not a number in (0, 1] falls back to
    0.9, which the page's "Asked for" line shows."""
    try:
        retention = float(params.get("retention", "0.9"))
    except ValueError:
        retention = 0.9
    retention = retention if 0.0 < retention <= 1.0 else 0.9
    return DecisionOptions(params.get("provider") or None, None, retention)


def decided(runs: Sequence[Run], options: DecisionOptions) -> Decided:
    """Every run that has a decision and a current analysis, decided; the others named."""
    from pipeline import studies

    found: list[tuple[Run, StudyDecision]] = []
    left_out = []
    for run in runs:
        decide = getattr(studies.definition(run.study), "decide", None)
        if decide is None:
            left_out.append(f"{run.name}: study {run.study} has no decision")
            continue
        why = analysis_not_current(run.path, run.layout)
        if why is not None:
            left_out.append(why)
            continue
        found.append((run, decide(run.path, run.layout, options)))
    expected = [n for n in studies.names() if getattr(studies.definition(n), "decide", None)]
    page = join([d for _, d in found], expected)
    return Decided(page, found, left_out, options)


def with_numbers(evidence: Evidence) -> Markup:
    """The evidence's value with each cited number in a `<data>` element that carries how it
    follows from the cited rows (`data-number`, the Number as JSON; the tooltip in words),
    left to right, as the numbers are listed."""
    text, out, at = evidence.value, [], 0
    for number in evidence.numbers:
        found = text.find(number.shown, at)
        if found < 0:
            continue
        out.append(escape(text[at:found]))
        how = json.dumps(dataclasses.asdict(number), sort_keys=True)
        out.append(
            Markup('<data class="cited" value="{}" data-number="{}" title="{}">{}</data>').format(
                number.shown, how, _title(number), number.shown
            )
        )
        at = found + len(number.shown)
    out.append(escape(text[at:]))
    return Markup("").join(out)


def _title(number: Number) -> str:
    """The tooltip: how the number follows from the cited rows."""
    how = f"{number.rule} of {number.column}"
    how += f" over the rows where {_named(number.where)}" if number.where else ""
    how += f", minus the rows where {_named(number.versus)}" if number.versus else ""
    how += f", divided by the same of {number.over}" if number.over else ""
    return how + (f", × {number.scale:g}" if number.scale != 1.0 else "")


def _named(where: Where) -> str:
    return ", ".join(f"{c}={v}" for c, v in where)


_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def inline(text: str) -> Markup:
    """The decision's markdown spans (`code`, **bold**) as HTML; everything else escaped."""
    escaped = str(escape(text))
    escaped = _CODE.sub(r"<code>\1</code>", escaped)
    return Markup(_BOLD.sub(r"<strong>\1</strong>", escaped))


def cited_rows(run: Run, source: str, where: Where) -> tuple[pl.DataFrame, int, int]:
    """A cited table's rows (at most TABLE_ROWS), the rows that match and the table's size;
    the file is read through the guard (`Run.file`)."""
    table = pl.read_parquet(run.file(source))
    matching = rows(table, where) if where else table
    return matching.head(TABLE_ROWS), matching.height, table.height


def banner() -> str:
    return SIMULATED_BANNER
