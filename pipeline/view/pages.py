"""Every page of the viewer, rendered to HTML by Jinja2 templates (server and export alike).

Pages: `index` (the runs given), `overview`, `units`, `unit`, `compare`, and the pages a study
brings (`pipeline.study.StudyPages`, from the definition the run's manifest names): its unit
page, drawn by its own template (the generic one for a study without pages), any page of
the run only it has (`run_sections`) and its sections of the overview (`overview_sections`).
A study's templates are found beside the viewer's, so they can include the viewer's pieces;
the viewer names no study. Each function takes the
run(s), a `Links` (server URLs or the export's anchors) and the request's parameters, and
returns a whole HTML document. The CSS and the little script (sorting and filtering; no build
step) are inlined in every page, so the export is one file and the server needs no static
route.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup

from pipeline.study import RunSection
from pipeline.usererror import UserError
from pipeline.view import compare as compare_mod
from pipeline.view import decision as decision_mod
from pipeline.view.cells import as_text
from pipeline.view.links import Links
from pipeline.view.overview import overview as build_overview
from pipeline.view.runs import Run
from pipeline.view.units import (
    UnitQuery,
    default_columns,
    presets,
    query_units,
    shown_columns,
    table_columns,
    unit_frame,
)

UNITS_KEY = "__units__"


class UnitNotFound(UserError):
    """A unit page asked for a row the run does not have."""


@cache
def environment(study_templates: Path | None = None) -> jinja2.Environment:
    """The viewer's templates, then (when given) a study's own folder: a study's template can
    include the viewer's pieces, and never replaces one of them."""
    loader: jinja2.BaseLoader = jinja2.PackageLoader("pipeline.view", "templates")
    if study_templates is not None:
        loader = jinja2.ChoiceLoader([loader, jinja2.FileSystemLoader(study_templates)])
    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = as_text
    env.filters["inline"] = decision_mod.inline
    env.globals["asset"] = _asset
    env.globals["with_numbers"] = decision_mod.with_numbers
    return env


@cache
def _asset(name: str) -> str:
    return resources.files("pipeline.view").joinpath("assets", name).read_text(encoding="utf-8")


def units_of(run: Run) -> pl.DataFrame:
    if UNITS_KEY not in run._frames:
        run._frames[UNITS_KEY] = unit_frame(run)
    return run._frames[UNITS_KEY]


@dataclass(frozen=True)
class Page:
    """A page's body (HTML) and what its frame needs: title, run, SIMULATED."""

    title: str
    content: Markup
    simulated: bool
    run: Run | None


def _page(template: str, study_templates: Path | None = None, **context: Any) -> Page:
    env = environment(study_templates)
    content = Markup(env.get_template(template).render(static=context["links"].static, **context))
    return Page(context["title"], content, bool(context["simulated"]), context.get("run"))


def document(page: Page, links: Links) -> str:
    """A whole HTML document around one page (the server's response)."""
    return (
        environment()
        .get_template("layout.html")
        .render(
            title=page.title,
            content=page.content,
            simulated=page.simulated,
            run=page.run,
            links=links,
            static=False,
            run_name="",
        )
    )


def all_simulated(runs: Sequence[Run]) -> bool:
    """The page-wide SIMULATED banner of a multi-run page: only when it is true of every run
    shown. Otherwise each simulated run's row carries the mark, so a real run beside a
    simulated one is never labelled simulated."""
    return bool(runs) and all(r.simulated for r in runs)


def index(runs: Sequence[Run], links: Links) -> Page:
    return _page(
        "index.html",
        runs=runs,
        decidable=any(decision_mod.has_decision(r) for r in runs),
        studies=sorted({r.study for r in runs}),
        links=links,
        simulated=all_simulated(runs),
        title="foldsweep runs",
        run=None,
    )


def overview(run: Run, links: Links) -> Page:
    units = units_of(run)
    facts = build_overview(run, units, lambda name: _figure_src(run, links, name))
    return _page(
        "overview.html",
        run=run,
        links=links,
        o=facts,
        study_sections=overview_sections(run, links),
        simulated=run.simulated,
        title=f"{run.name} — overview",
    )


def overview_sections(run: Run, links: Links) -> list[Markup]:
    """The study's own sections of the run overview (its pages' optional
    `overview_sections`), each drawn by the study's template, in the order it gives them."""
    study = run.pages
    sections = getattr(study, "overview_sections", None)
    if study is None or sections is None:
        return []
    return [
        _section(run, links, section, section.title).content for section in sections(run, links)
    ]


def _section(run: Run, links: Links, section: Any, title: str) -> Page:
    """A section of the run drawn by its study's own template."""
    study = run.pages
    assert study is not None  # callers ask only a run whose study has pages
    return _page(
        section.template,
        study.templates,
        run=run,
        links=links,
        simulated=run.simulated,
        title=title,
        **section.context,
    )


def _figure_src(run: Run, links: Links, name: str) -> str | None:
    from pipeline.view.guard import PathRefused

    try:
        path = run.file(f"analysis/{name}")
    except PathRefused:
        return None
    return links.figure(run, name) if path.is_file() else None


def units(run: Run, links: Links, params: Mapping[str, str], *, everything: bool = False) -> Page:
    """The units table. The export's holds every unit and every table column; its script
    filters, searches and shows columns of it from the cells' data (`cells.units_data`)."""
    frame = units_of(run)
    columns = table_columns(frame)
    query = UnitQuery.parse(params, list(frame.columns))
    if everything:  # the export: every unit on one page, filtered in the browser
        query = UnitQuery(query.filters, query.sort, query.desc, 1, max(1, frame.height))
    page = query_units(frame, query, columns if everything else shown_columns(query, columns))
    options = {
        c: sorted(frame[c].cast(pl.String).fill_null("—").unique().to_list())
        for c in ("config_id", "arm", "verdict", "reason")
        if c in frame.columns
    }
    return _page(
        "units.html",
        run=run,
        links=links,
        page=page,
        options=options,
        choosable=columns,
        defaults=default_columns(columns),
        presets=presets(frame),
        simulated=run.simulated,
        title=f"{run.name} — units",
    )


def find_row(run: Run, row_id: str) -> dict[str, Any]:
    found = run.rows_for("rows", row_id)
    if not found.height:
        raise UnitNotFound(f"run {run.name} has no unit row {row_id!r}")
    return found.row(0, named=True)


def row_frame(row: dict[str, Any]) -> pl.DataFrame:
    """The attempts list of a unit never retried: its one row (no scan needed)."""
    return pl.DataFrame([{k: row[k] for k in ("row_id", "attempt", "valid", "invalid_reason")}])


def unit(run: Run, links: Links, row_id: str, params: Mapping[str, str]) -> Page:
    row = find_row(run, row_id)
    units = units_of(run)
    key = {k: row[k] for k in ("config_id", "arm", "execution_group", "repeat")}
    final = units.filter(*[pl.col(k) == v for k, v in key.items()])
    retried = bool(row["attempt"]) or bool(final.height and (final.item(0, "attempt") or 0) > 0)
    attempts = (
        run.scan("rows")
        .filter(*[pl.col(k) == v for k, v in key.items()])
        .select("row_id", "attempt", "valid", "invalid_reason")
        .collect()
        .sort("attempt")
        if retried
        else row_frame(row)
    )
    verdict = units.filter(pl.col("row_id") == row_id)
    study = run.pages
    template, context = ("unit_generic.html", {}) if study is None else study.unit(run, row, params)
    bill = (
        run.rows_for("requests", row_id).sort("session", "position").to_dicts()
        if "requests" in run.layout.tables
        else None
    )
    scalars = {k: v for k, v in row.items() if not isinstance(v, str) or len(v) <= 200}
    return _page(
        template,
        None if study is None else study.templates,
        run=run,
        links=links,
        row=row,
        scalars=scalars,
        attempts=attempts.to_dicts(),
        bill=bill,
        is_final=bool(verdict.height),
        u=context,
        simulated=run.simulated,
        title=f"{run.name} — {row_id}",
    )


def run_sections(run: Run, links: Links) -> list[tuple[RunSection, Page]]:
    """The pages of the run only its study has, each with the section that names its anchor
    (the export shows each once; its unit pages may link to them)."""
    study = run.pages
    if study is None:
        return []
    return [
        (section, _section(run, links, section, f"{run.name} — {section.title}"))
        for section in study.run_sections(run, links)
    ]


def compare(runs: Sequence[Run], links: Links, params: Mapping[str, str]) -> Page:
    table = compare_mod.compare(runs, [units_of(r) for r in runs], params.get("metric"))
    return _page(
        "compare.html",
        runs=runs,
        links=links,
        c=table,
        arm_title=lambda arm: compare_mod.arm_title(runs, arm),
        run=None,
        simulated=all_simulated(runs),
        title="compare runs",
    )


def decision(runs: Sequence[Run], links: Links, params: Mapping[str, str]) -> Page:
    """The decision page of the runs (pipeline/view/decision.py)."""
    found = decision_mod.decided(runs, decision_mod.options_of(params))
    return _page(
        "decision.html",
        decided=found,
        banner=decision_mod.banner(),
        links=links,
        run=None,
        simulated=all_simulated(runs),
        title="decision — foldsweep",
    )


def table(run: Run, links: Links, source: str, where: Sequence[tuple[str, str]]) -> Page:
    """One table a decision cites, its cited rows first (`where`; every row when empty)."""
    if not source.endswith(".parquet"):
        raise UnitNotFound(f"{source} is not a table of run {run.name}")
    try:
        shown, matching, total = decision_mod.cited_rows(run, source, tuple(where))
    except FileNotFoundError:
        raise UnitNotFound(f"run {run.name} has no table {source}") from None
    except pl.exceptions.ColumnNotFoundError as exc:
        raise UnitNotFound(f"{source} has no such column: {exc}") from None
    return _page(
        "table.html",
        run=run,
        links=links,
        source=source,
        where=where,
        named=", ".join(f"{c}={v}" for c, v in where),
        shown=shown,
        matching=matching,
        total=total,
        table_id=links.table_anchor(run, source) or "cited-table",
        simulated=run.simulated,
        title=f"{run.name} — {source}",
    )
