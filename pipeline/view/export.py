"""`view --export OUT.html RUN_DIR`: one self-contained HTML file of a run, for a supplement.

The file holds the overview, the units table (every unit; filtered and sorted in the browser
from the address's fragment, `#units?verdict=invalid&reason=R`) and every unit's page, each a
`<section>` shown one at a time by the inlined script. Figures are inlined as `data:` URIs,
CSS and script inline too: it opens from `file://` with no server and no network. A unit page
that shows one of several views (a toolout unit's transcripts, a traces unit's shapes) shows
its default one in the export, and says so.

The file is written to a temporary name beside OUT.html and renamed, so a failed export never
leaves a torn file.
"""

from __future__ import annotations

import os
from pathlib import Path

from markupsafe import Markup

from pipeline.view import pages
from pipeline.view.guard import PathRefused
from pipeline.view.links import ExportLinks
from pipeline.view.runs import Run

PRELOAD = (
    "rows",
    "requests",
    "folds",
    "checks",
    "sessions",
    "template_probes",
    "recitals",
    "compressions",
)


def _figure_bytes(run: Run, name: str) -> bytes | None:
    try:
        path = run.file(f"analysis/{name}")
    except PathRefused:
        return None
    return path.read_bytes() if path.suffix == ".png" and path.is_file() else None


def export_html(run: Run) -> str:
    """The whole file as text."""
    run.preload(PRELOAD)
    units = pages.units_of(run)
    row_ids = [r for r in units["row_id"].to_list() if r is not None]
    links = ExportLinks({row_id: f"u{n}" for n, row_id in enumerate(row_ids)}, _figure_bytes)
    sections = [
        _section("overview", pages.overview(run, links)),
        _section("units", pages.units(run, links, {}, everything=True)),
    ]
    if run.study == "carrier":
        sections.append(_section("chunks", pages.fixture_chunks(run, links)))
    sections += [
        _section(links.unit_ids[row_id], pages.unit(run, links, row_id, {})) for row_id in row_ids
    ]
    return (
        pages.environment()
        .get_template("layout.html")
        .render(
            title=f"{run.name} — foldsweep export",
            content=Markup("\n".join(sections)),
            simulated=run.simulated,
            run=run,
            links=links,
            static=True,
            run_name=run.name,
        )
    )


def _section(anchor: str, page: pages.Page) -> str:
    return f'<section class="page" id="{anchor}">\n{page.content}\n</section>'


def write_export(run: Run, out: Path) -> int:
    """Writes the export to `out` atomically; returns its size in bytes."""
    text = export_html(run)
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, out)
    return out.stat().st_size
