"""Jobs of the fold-and-recall carrier study: one query family per module."""

from jobs.carrier.report import render_report
from jobs.carrier.run_all import AnalysisSummary, SkippedContrast, analyze

__all__ = ["AnalysisSummary", "SkippedContrast", "analyze", "render_report"]
