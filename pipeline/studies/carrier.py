"""The carrier study's registration: its tables (pipeline.carrier.records) and its analysis
(jobs.carrier), joined to the configured study (pipeline.carrier.study)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.carrier.records import ROW_COLUMNS, TABLES
from pipeline.carrier.study import CarrierStudy
from pipeline.config.schema import AnalysisConfig
from pipeline.study import Column, TableSpec


@dataclass(frozen=True)
class CarrierDefinition:
    name: str = "carrier"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES

    def configure(self, node: Mapping[str, Any]) -> CarrierStudy:
        return CarrierStudy.from_node(node)

    def analyze(self, run_dir: Path, analysis: AnalysisConfig) -> Path:
        """The analysis with these settings, then the report: once each."""
        from jobs.carrier import run_all
        from jobs.carrier.nothing_ran import write_nothing_ran_report
        from jobs.carrier.report import render_report
        from pipeline.store.reader import part_paths
        from pipeline.studies import layout

        if not part_paths(run_dir, "rows", layout(self)):  # even without a plan: say why
            return write_nothing_ran_report(run_dir)
        run_all.analyze(run_dir, analysis, layout=layout(self))
        return render_report(run_dir)

    def report(self, run_dir: Path) -> Path:
        from jobs.carrier.report import write_report
        from pipeline.studies import layout

        return write_report(run_dir, layout=layout(self))

    def nothing_ran_cause(self, run_dir: Path) -> str:
        from jobs.carrier.nothing_ran import run_cause

        return run_cause(run_dir)


DEFINITION = CarrierDefinition()
