"""`view --export OUT.html RUN_DIR [RUN_DIR ...]`: one self-contained HTML file of runs.

Of one run, the file holds the overview, the units table (every unit; filtered and sorted in
the browser from the address's fragment, `#units?verdict=invalid&reason=R`) and every unit's
page, each a `<section>` shown one at a time by the inlined script. A study's pages of the run
(`pipeline.study.StudyPages.run_sections`) follow the units table, once each. A unit page that
shows one view of several (one transcript of many) holds its default view and, each in its own
section, the first `views_per_unit` views its pages link to (`ExportLinks.view`; the page says
how many of how many). Of several runs, it holds the same for each run (anchors `r{i}-...`),
then the runs' index (`#index`), the compare page (`#compare`, on its default metric) and,
when a run's study decides, the decision page and the tables it cites (`#decision`, what the
file opens on then; else the index).

Figures are inlined as `data:` URIs, CSS and script inline too: it opens from `file://` with no
server and no network. Element ids are unique in the file: each section's ids carry its
prefix (`pipeline.view.anchors`): none for a single run's overview and units, the section's
anchor for the others (`u12-verdict`), `r{i}-` for a run's overview and units among several.

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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from markupsafe import Markup

from pipeline.decision import DecisionOptions
from pipeline.usererror import UserError
from pipeline.view import anchors, decision, pages
from pipeline.view.cells import units_data
from pipeline.view.guard import PathRefused
from pipeline.view.links import ExportLinks
from pipeline.view.runs import Run

PRELOAD = ("rows", "requests")  # and the tables the study's unit pages read (`preloaded`)
WARN_BYTES = 50_000_000
VIEWS_PER_UNIT = 5  # views of one unit page the file holds (`--transcripts-per-unit`)
MAX_VIEWS_PER_UNIT = 1000
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


def export_chunks(run: Run, views_per_unit: int = VIEWS_PER_UNIT) -> Iterator[str]:
    """The file's text in pieces: the frame's head, each section, the frame's tail."""
    links = ExportLinks(read_figure=_figure_bytes, cap=views_per_unit)
    head, tail = _frame_of(run.name, run, links, home="overview")
    yield head
    yield from _run_chunks(run, links)
    yield tail


def several_chunks(runs: Sequence[Run], views_per_unit: int = VIEWS_PER_UNIT) -> Iterator[str]:
    """The file of several runs: the decision page (when a run's study decides) and the tables
    it cites, the runs' index and compare page, then each run's pages as `export_chunks`."""
    decides = any(decision.has_decision(run) for run in runs)
    cited = _cited_tables(runs) if decides else {}
    links = ExportLinks(
        read_figure=_figure_bytes, table_ids=cited, several=True, cap=views_per_unit
    )
    for run in runs:  # every unit's anchor, before any page links to one
        _number_units(run, links)
    home = "decision" if decides else "index"
    head, tail = _frame_of(f"{len(runs)} runs", runs[0], links, home=home)
    yield head
    if decides:
        yield _section("decision", pages.decision(runs, links, {}))
        by_index = {run.index: run for run in runs}
        for (index, source), anchor in cited.items():
            page = pages.table(by_index[index], links, source, ())
            yield "\n" + _section(anchor, page, f"{anchor}-")
    yield "\n" + _section("index", pages.index(runs, links), "index-")
    yield "\n" + _section("compare", pages.compare(runs, links, {}), "compare-")
    for run in runs:
        yield from _run_chunks(run, links)
    yield tail


def _cited_tables(runs: Sequence[Run]) -> dict[tuple[int, str], str]:
    """The anchor of every table the runs' decisions cite, once each."""
    found = decision.decided(runs, DecisionOptions())
    cited: dict[tuple[int, str], str] = {}
    for run, decided in found.decisions:
        for answer in decided.answers:
            for evidence in answer.evidence:
                key = (run.index, evidence.source)
                if evidence.source.endswith(".parquet") and key not in cited:
                    cited[key] = f"t{run.index}-{len(cited)}"
    return cited


def _number_units(run: Run, links: ExportLinks) -> list[str]:
    """The run's unit rows, each given its anchor in `links` (`u{n}`, or `r{i}-u{n}`)."""
    run.preload(preloaded(run))
    units = pages.units_of(run)
    row_ids = [r for r in units["row_id"].to_list() if r is not None]
    prefix = links.prefix(run)
    links.unit_ids.update(
        {(run.index, row_id): f"{prefix}u{n}" for n, row_id in enumerate(row_ids)}
    )
    return row_ids


def _run_chunks(run: Run, links: ExportLinks) -> Iterator[str]:
    """One run's sections: overview, units (with the cells its script filters), the study's
    run pages, then every unit's page and the views of it that its page links to."""
    row_ids = _number_units(run, links)
    prefix = links.prefix(run)
    sections = pages.run_sections(run, links)
    own = {section.anchor: f"{prefix}{section.anchor}" for section, _ in sections}
    yield "\n" + _section(f"{prefix}overview", pages.overview(run, links), prefix, own)
    units = pages.units(run, links, {}, everything=True)
    yield "\n" + _open(f"{prefix}units", prefix) + anchors.prefixed(units.content, prefix, own)
    yield "\n"
    yield from units_data(pages.units_of(run), f"{prefix}units-data")
    yield "\n</section>"
    for section, page in sections:
        anchor = own[section.anchor]
        yield "\n" + _section(anchor, page, f"{anchor}-", own)
    for row_id in row_ids:
        anchor = links.unit_ids[(run.index, row_id)]
        yield "\n" + _section(anchor, pages.unit(run, links, row_id, {}), f"{anchor}-", own)
        views = links.views.get(anchor, [])
        shown = 0
        while shown < len(views):  # a view's page may link further views, up to the cap
            view_anchor = f"{anchor}-v{shown}"
            page = pages.unit(run, links, row_id, dict(views[shown]))
            yield "\n" + _section(view_anchor, page, f"{view_anchor}-", own)
            shown += 1


def export_html(run: Run, views_per_unit: int = VIEWS_PER_UNIT) -> str:
    """The whole file as one string (tests; the command streams `export_chunks`)."""
    return "".join(export_chunks(run, views_per_unit))


def _frame_of(name: str, run: Run, links: ExportLinks, home: str) -> tuple[str, str]:
    """The layout around the sections, split at the one place its content goes."""
    whole = (
        pages.environment()
        .get_template("layout.html")
        .render(
            title=f"{name} — foldsweep export",
            content=Markup(CONTENT),
            simulated=run.simulated if not links.several else False,
            run=run,
            links=links,
            static=True,
            run_name=name,
            home=home,
            several=links.several,
        )
    )
    head, found, tail = whole.partition(CONTENT)
    assert found and CONTENT not in tail, "layout.html must place {{ content }} exactly once"
    return head, tail


def _open(anchor: str, ids: str) -> str:
    """A section's opening tag; `data-ids` only where its ids' prefix is not `anchor-`."""
    named = "" if ids == f"{anchor}-" else f' data-ids="{ids}"'
    return f'<section class="page" id="{anchor}"{named}>\n'


def _section(
    anchor: str, page: pages.Page, ids: str = "", own: Mapping[str, str] | None = None
) -> str:
    """A page as the section `anchor`, its ids prefixed by `ids` (`anchors.prefixed`)."""
    return f"{_open(anchor, ids)}{anchors.prefixed(page.content, ids, own)}\n</section>"


def write_export(runs: Run | Sequence[Run], out: Path, views_per_unit: int = VIEWS_PER_UNIT) -> int:
    """Streams the export to `out` atomically; returns its size in bytes (ExportError if it
    cannot be written, with no temporary file left). One run: its pages; several: theirs,
    with their index, comparison and decision (`several_chunks`)."""
    several = [runs] if isinstance(runs, Run) else list(runs)
    chunks = (
        export_chunks(several[0], views_per_unit)
        if len(several) == 1
        else several_chunks(several, views_per_unit)
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
