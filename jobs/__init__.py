"""Polars analysis jobs: pure functions of a run directory's tables (I/O only in jobs.io)."""

from jobs.carrier import AnalysisSummary, analyze

__all__ = ["AnalysisSummary", "analyze"]
