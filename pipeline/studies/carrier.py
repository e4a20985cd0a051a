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
from pipeline.decision import DecisionOptions, StudyDecision
from pipeline.store.layout import Layout
from pipeline.study import ArmDescriptions, Column, StudyPages, TableSpec


@dataclass(frozen=True)
class CarrierDefinition:
    name: str = "carrier"
    row_columns: tuple[Column, ...] = ROW_COLUMNS
    tables: tuple[TableSpec, ...] = TABLES
    default_panel: str | None = None  # the embedded local panel
    uses_contrasts: bool = True  # analysis.contrasts: q_vs_j, m_vs_q, ...

    @property
    def pages(self) -> StudyPages:
        """Its own pages in the viewer, imported only when a viewer asks for them."""
        from pipeline.study_pages.carrier import PAGES

        return PAGES

    def describe(self) -> ArmDescriptions:
        """Every arm under conf/arms/ and what it is (its file's `description`)."""
        from pipeline.config.descriptions import descriptions

        return ArmDescriptions("arms", descriptions("arms"))

    def configure(self, node: Mapping[str, Any]) -> CarrierStudy:
        return CarrierStudy.from_node(node)

    def analyze(self, run_dir: Path, analysis: AnalysisConfig, layout: Layout) -> None:
        from jobs.carrier import run_all

        run_all.analyze(run_dir, analysis, layout=layout)

    def render(self, run_dir: Path, layout: Layout) -> Path:
        from jobs.carrier.report import render_report

        return render_report(run_dir, self.describe().by_name)

    def decide(self, run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
        """What the run says a summariser should write (`python -m pipeline decide`)."""
        from jobs.carrier.decision import decide

        return decide(run_dir, layout, options)


DEFINITION = CarrierDefinition()
