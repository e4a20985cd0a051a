"""The built-in studies' own pages in the viewer, one module each, with their templates.

Each module's `PAGES` is a `pipeline.study.StudyPages`, which its definition hands out as
`pages` (imported only then, so a sweep never loads the viewer). They read runs through
`pipeline.view` (its `Run`, its highlighting); `pipeline.view` never imports them: it asks the
run's definition for its pages, so a study outside this package shows its own the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.study import RunSection

TEMPLATES = Path(__file__).with_name("templates")


class BuiltInPages:
    """What the built-in studies' pages share: this package's templates and, unless a study
    says otherwise, no page of the run beyond the ones every study has."""

    templates: Path = TEMPLATES

    def run_sections(self, run: Any, links: Any) -> Sequence[RunSection]:
        return ()
