"""The echo study's unit page in the viewer: what was sent and what came back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.study import RunSection, UnitPage


class EchoPages:
    """A `pipeline.study.StudyPages`: one template, no page of the run of its own."""

    templates = Path(__file__).with_name("templates")
    preload: Sequence[str] = ("echoes",)

    def unit(self, run: Any, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        echoes = run.rows_for("echoes", row["row_id"]).to_dicts()
        return UnitPage("unit_echo.html", {"echoes": echoes})

    def run_sections(self, run: Any, links: Any) -> Sequence[RunSection]:
        return ()


PAGES = EchoPages()
