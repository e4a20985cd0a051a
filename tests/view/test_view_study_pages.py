"""The viewer names no study: each definition brings its own pages (`pipeline.study.StudyPages`).

A definition from the tests (the example echo study, with pages whose templates live beside
this file) gets its unit page and its run section drawn by the viewer with nothing under
pipeline/view knowing it; without pages a study gets the generic unit page. And no file of
pipeline/view names a built-in study, not even in prose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from examples.echo import EchoDefinition
from pipeline import studies
from pipeline.study import RunSection, StudyDefinition, UnitPage
from pipeline.view import export_html, open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import ROOT, finish_run, full

TEMPLATES = Path(__file__).with_name("echo_templates")
ROW = "cfg-e/a/g0/r0/a0"


@dataclass(frozen=True)
class EchoPages:
    """The toy study's pages: each unit's echoes, and one line about the run."""

    templates: Path = TEMPLATES
    preload: tuple[str, ...] = ("echoes",)

    def unit(self, run: Any, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        echoed = run.rows_for("echoes", row["row_id"])["echoed"].to_list()
        return UnitPage("unit_echo.html", {"echoed": echoed})

    def run_sections(self, run: Any, links: Any) -> Sequence[RunSection]:
        return (RunSection("echo-run", "echoes", "echo_run.html", {"units": run.final.height}),)


@dataclass(frozen=True)
class PagedEcho(EchoDefinition):
    name: str = "echo_paged"

    @property
    def pages(self) -> EchoPages:
        return EchoPages()


@dataclass(frozen=True)
class PlainEcho(EchoDefinition):
    """The echo study without pages of its own."""

    name: str = "echo_plain"
    pages: None = None  # type: ignore[assignment]


def echo_run(run_dir: Path, definition: StudyDefinition) -> Path:
    """A one-unit run of `definition` (the echo study's tables), written through the store."""
    from pipeline.store import write_batch
    from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME

    studies.register(definition)
    layout = studies.layout(definition)
    names = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in definition.row_columns]
    row: dict[str, object] = dict.fromkeys(names)
    key = {"run_id": "run-e", "row_id": ROW}
    row.update(key, config_id="cfg-e", model="m", arm="a", execution_group=0, repeat=0)
    row.update(attempt=0, schedule_position=0, seed=1, simulated=True, valid=True)
    row.update(retryable=False, requests=1, echo_matches=True)
    echo = {**key, "sent": f"echo: {ROW}", "echoed": f"echo: {ROW}"}
    run_dir.mkdir(parents=True)
    children = {"echoes": full(layout, "echoes", [echo])}
    write_batch(run_dir, part_name="p0", rows=[row], children=children, layout=layout)
    finish_run(run_dir, "run-e", definition.name)
    return run_dir


def test_a_definition_with_pages_gets_its_unit_page_and_run_section(tmp_path: Path) -> None:
    (run,) = open_runs([echo_run(tmp_path / "run", PagedEcho())])
    html = str(pages.unit(run, Links(), ROW, {}).content)
    assert f'<p id="echoed">echoed by the endpoint: echo: {ROW}</p>' in html
    assert f"<h1>Unit <code>{ROW}</code></h1>" in html  # the viewer's header, included
    exported = export_html(run)
    section = '<section class="page" id="echo-run">\n<h1 id="echo-run-echo-run">run: 1 echo units'
    assert section in exported  # the section's ids carry its anchor (pipeline/view/anchors.py)
    assert exported.count('<p id="u0-echoed">') == 1


def test_a_definition_without_pages_gets_the_generic_unit_page(tmp_path: Path) -> None:
    (run,) = open_runs([echo_run(tmp_path / "run", PlainEcho())])
    html = str(pages.unit(run, Links(), ROW, {}).content)
    assert "This study has no unit view of its own" in html
    assert 'id="echoed"' not in html


def built_in_studies() -> set[str]:
    found = {p.stem for p in (ROOT / "pipeline" / "studies").glob("[!_]*.py")}
    return found | {"carrier", "toolout", "traces"}


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (ROOT / "pipeline" / "view").rglob("*") if p.suffix in (".py", ".html")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_viewer_file_names_a_study(path: Path) -> None:
    """Not as a literal, an import, a template name nor a word of prose: a study's own pages
    live with the study (pipeline/study_pages for the built-in ones)."""
    word = re.compile(r"\b(" + "|".join(sorted(built_in_studies())) + r")\b", re.IGNORECASE)
    lines = path.read_text(encoding="utf-8").splitlines()
    named = [f"{n}: {line.strip()}" for n, line in enumerate(lines, 1) if word.search(line)]
    assert named == [], f"{path.relative_to(ROOT)} names a study"
