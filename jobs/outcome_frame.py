"""The outcome frame every study shares: analyze a run that has rows, or say why nothing ran.

A study's own `analyze` and `report` (its StudyDefinition) are called only for a run with
rows. A run without a single attempt (every configuration failed its probes, a server that
could not start, a stop before the first dispatch) gets the shared nothing-ran report instead
(jobs.nothing_ran), which opens with why, per configuration, from what the engine wrote: the
manifest and the plan. The sweep then exits 3 with the same cause in one line. The rule is
here once, for every study, including one registered from outside (the toy study of the
tests): the CLI hands the engine and the commands a `Framed` definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.store.layout import Layout, layout_for
from pipeline.store.reader import part_paths
from pipeline.study import Column, Study, StudyDefinition, TableSpec


def has_rows(run_dir: Path, layout: Layout) -> bool:
    """Whether the run holds a committed part of its rows table (at least one attempt)."""
    return bool(part_paths(run_dir, "rows", layout))


@dataclass(frozen=True)
class Framed:
    """A study definition inside the shared outcome frame (an AnalysedStudy)."""

    study: StudyDefinition

    @property
    def name(self) -> str:
        return self.study.name

    @property
    def row_columns(self) -> tuple[Column, ...]:
        return self.study.row_columns

    @property
    def tables(self) -> tuple[TableSpec, ...]:
        return self.study.tables

    @property
    def default_panel(self) -> str | None:
        return self.study.default_panel

    @property
    def uses_contrasts(self) -> bool:
        return self.study.uses_contrasts

    @property
    def layout(self) -> Layout:
        return layout_for(self.study.row_columns, self.study.tables)

    def configure(self, node: Mapping[str, Any]) -> Study:
        return self.study.configure(node)

    def analyze(self, run_dir: Path, analysis: Any) -> Path:
        """The study's analysis and report, or the nothing-ran report; the report's path."""
        if not has_rows(run_dir, self.layout):
            from jobs.nothing_ran import write_nothing_ran_report

            return write_nothing_ran_report(run_dir)
        return self.study.analyze(run_dir, analysis)

    def report(self, run_dir: Path) -> Path:
        """The study's report, or the nothing-ran report; its path."""
        if not has_rows(run_dir, self.layout):
            from jobs.nothing_ran import write_nothing_ran_report

            return write_nothing_ran_report(run_dir)
        return self.study.report(run_dir)

    def nothing_ran_cause(self, run_dir: Path) -> str:
        """Why the run has no attempt at all, in one line (the sweep's exit-3 error)."""
        from jobs.nothing_ran import run_cause

        return run_cause(run_dir)


def framed(study: StudyDefinition) -> Framed:
    """`study` inside the frame (a Framed one stays as it is)."""
    return study if isinstance(study, Framed) else Framed(study)
