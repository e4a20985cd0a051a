"""The bloat scan and trace quality of seed 002 (issue 21): pure functions over trace items."""

from pipeline.traces.scan.quality import HEDGING, SELF_CORRECTION, Quality, is_repetitive, quality
from pipeline.traces.scan.scan import (
    PERCENTILES,
    QUALITIES,
    BandRow,
    ScanResult,
    TraceRecord,
    nearest_rank,
    scan,
    session_of,
)

__all__ = [
    "HEDGING",
    "PERCENTILES",
    "QUALITIES",
    "SELF_CORRECTION",
    "BandRow",
    "Quality",
    "ScanResult",
    "TraceRecord",
    "is_repetitive",
    "nearest_rank",
    "quality",
    "scan",
    "session_of",
]
