"""`view --export OUT.html RUN_DIR`: one self-contained HTML file of a run, for a supplement.
`view --export OUT.html RUN_DIR RUN_DIR ...`: the runs' decision page and the tables it cites.

The file holds the overview, the units table (every unit; filtered and sorted in the browser
from the address's fragment, `#units?verdict=invalid&reason=R`) and every unit's page, each a
`<section>` shown one at a time by the inlined script. Figures are inlined as `data:` URIs,
CSS and script inline too: it opens from `file://` with no server and no network. A study's
pages of the run (`pipeline.study.StudyPages.run_sections`) follow the units table, once each.
A unit page that shows one of several views (one transcript of many, one shape of many) shows
its default one in the export, and says so.

The file is streamed: the page frame is rendered once around a marker and split there, then
each section is written as soon as it is rendered, so the process holds one unit's page at a
time, never the whole text (a 5,000-unit export was one 105 MB string, built two or three times
over). An export over WARN_BYTES (50 MB) is written all the same, and the command warns: a
browser opens it slowly, and `view RUN_DIR` serves the same pages one at a time.

It is written to a temporary name beside OUT.html and renamed, so a failed export never leaves
a torn file; on any failure (a path it cannot write, a full disk, Ctrl-C) the temporary is
removed, and an OSError becomes one `ExportError` line naming OUT.html.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from markupsafe import Markup

from pipeline.decision import DecisionOptions
from pipeline.usererror import UserError
from pipeline.view import decision, pages
from pipeline.view.cells import units_data
from pipeline.view.guard import PathRefused
from pipeline.view.links import ExportLinks
from pipeline.view.runs import Run

PRELOAD = ("rows", "requests")  # and the tables the study's unit pages read (`preloaded`)
WARN_BYTES = 50_000_000
CONTENT = "<!--foldsweep-export-content-->"


class ExportError(UserError):
    """The export could not be written where asked; nothing is left behind."""


def _figure_bytes(run: Run, name: str) -> bytes | None:
    try:
        path = run.file(f"analysis/{name}")
    except PathRefused:
        return None
    return path.read_bytes() if path.suffix == ".png" and path.is_file() else None


def preloaded(run: Run) -> tuple[str, ...]:
    """The tables the export holds in memory, sorted by row_id: it reads every unit's rows."""
    study = run.pages
    return (*PRELOAD, *(study.preload if study is not None else ()))


def export_chunks(run: Run) -> Iterator[str]:
    """The file's text in pieces: the frame's head, each section, the frame's tail."""
    run.preload(preloaded(run))
    units = pages.units_of(run)
    row_ids = [r for r in units["row_id"].to_list() if r is not None]
    links = ExportLinks({row_id: f"u{n}" for n, row_id in enumerate(row_ids)}, _figure_bytes)
    head, tail = _frame(run, links)
    yield head
    yield _section("overview", pages.overview(run, links))
    yield "\n" + _section("units", pages.units(run, links, {}, everything=True))
    yield "\n"
    yield from units_data(units)  # the cells the units table's filter script reads
    for section, page in pages.run_sections(run, links):
        yield "\n" + _section(section.anchor, page)
    for row_id in row_ids:
        yield "\n" + _section(links.unit_ids[row_id], pages.unit(run, links, row_id, {}))
    yield tail


def decision_chunks(runs: Sequence[Run]) -> Iterator[str]:
    """The file of several runs: the decision page (what the file opens on), then every
    table it cites, once each, its cited rows picked by the link's fragment. Each run's own
    pages are in its single-run export (`view --export OUT.html RUN_DIR`)."""
    found = decision.decided(runs, DecisionOptions())
    cited: dict[tuple[int, str], str] = {}
    for run, decided in found.decisions:
        for answer in decided.answers:
            for evidence in answer.evidence:
                key = (run.index, evidence.source)
                if evidence.source.endswith(".parquet") and key not in cited:
                    cited[key] = f"t{run.index}-{len(cited)}"
    links = ExportLinks(read_figure=_figure_bytes, table_ids=cited)
    head, tail = _frame_of(f"decision over {len(runs)} runs", runs[0], links, home="decision")
    yield head
    yield _section("decision", pages.decision(runs, links, {}))
    by_index = {run.index: run for run in runs}
    for (index, source), anchor in cited.items():
        yield "\n" + _section(anchor, pages.table(by_index[index], links, source, ()))
    yield tail


def export_html(run: Run) -> str:
    """The whole file as one string (tests; the command streams `export_chunks`)."""
    return "".join(export_chunks(run))


def _frame(run: Run, links: ExportLinks) -> tuple[str, str]:
    return _frame_of(run.name, run, links, home="overview")


def _frame_of(name: str, run: Run, links: ExportLinks, home: str) -> tuple[str, str]:
    """The layout around the sections, split at the one place its content goes."""
    whole = (
        pages.environment()
        .get_template("layout.html")
        .render(
            title=f"{name} — foldsweep export",
            content=Markup(CONTENT),
            simulated=run.simulated if home == "overview" else False,
            run=run,
            links=links,
            static=True,
            run_name=name,
            home=home,
            decision_export=home == "decision",
        )
    )
    head, found, tail = whole.partition(CONTENT)
    assert found and CONTENT not in tail, "layout.html must place {{ content }} exactly once"
    return head, tail


def _section(anchor: str, page: pages.Page) -> str:
    return f'<section class="page" id="{anchor}">\n{page.content}\n</section>'


def write_export(runs: Run | Sequence[Run], out: Path) -> int:
    """Streams the export to `out` atomically; returns its size in bytes (ExportError if it
    cannot be written, with no temporary file left). One run: its pages; several: their
    decision and the tables it cites (`decision_chunks`)."""
    chunks = (
        export_chunks(runs)
        if isinstance(runs, Run)
        else (export_chunks(runs[0]) if len(runs) == 1 else decision_chunks(runs))
    )
    if out.is_dir():
        raise ExportError(
            f"view --export: {out} is a directory; give a file name, e.g. {out / 'run.html'}"
        )
    temporary = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("w", encoding="utf-8") as sink:
            for chunk in chunks:
                sink.write(chunk)
        os.replace(temporary, out)
    except OSError as exc:
        raise ExportError(
            f"view --export: cannot write {out} ({exc.strerror or exc}); "
            "choose a writable file path"
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            temporary.unlink()  # gone after the rename; removed on any failure
    return out.stat().st_size
