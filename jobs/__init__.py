"""Polars analysis jobs: pure functions of a run directory's tables (I/O only in jobs.io)."""

from jobs.carrier.report import write_report
from jobs.carrier.run_all import AnalysisSummary, analyze

__all__ = ["AnalysisSummary", "analyze", "write_report"]
