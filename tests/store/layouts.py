"""Run-directory layouts for store and sweep tests: the carrier's real tables."""

from __future__ import annotations

from typing import Any

import pipeline.studies
from pipeline.store.layout import Layout

CARRIER_LAYOUT: Layout = pipeline.studies.layout(pipeline.studies.definition("carrier"))
ROWS = CARRIER_LAYOUT.schema("rows")
CHECKS = CARRIER_LAYOUT.schema("checks")
FOLDS = CARRIER_LAYOUT.schema("folds")


def empty_row() -> dict[str, Any]:
    """A carrier rows record with every column present and None."""
    return dict.fromkeys(ROWS.names)
