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
from pipeline.store.layout import Layout, layout_for
from pipeline.study import Column, TableSpec


@dataclass(frozen=True)
class CarrierDefinition:
    name: str = "carrier"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES
    default_panel: str | None = None  # the embedded local panel
    uses_contrasts: bool = True  # analysis.contrasts: q_vs_j, m_vs_q, ...

    @property
    def layout(self) -> Layout:
        return layout_for(self.row_columns, self.tables)

    def configure(self, node: Mapping[str, Any]) -> CarrierStudy:
        return CarrierStudy.from_node(node)

    def analyze(self, run_dir: Path, analysis: AnalysisConfig) -> Path:
        """The analysis with these settings, then the report: once each."""
        from jobs.carrier import run_all
        from jobs.carrier.report import render_report

        run_all.analyze(run_dir, analysis, layout=self.layout)
        return render_report(run_dir)

    def report(self, run_dir: Path) -> Path:
        from jobs.carrier.report import write_report

        return write_report(run_dir, layout=self.layout)


DEFINITION = CarrierDefinition()
