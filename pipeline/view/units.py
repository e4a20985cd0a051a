"""The units of a run: one line per planned unit, with its final attempt's row if it has one.

Every planned unit appears (nothing silently dropped), with a `verdict`:
- `valid` / `invalid` from its final attempt (`reason` = `invalid_reason`);
- `not_run` when the plan says so (`reason` = `not_run_reason`), or when the run has ended and
  the manifest counts the unit's absence under a reason the plan does not state (a budget
  stop): that reason is given to every unit without a row;
- `pending` otherwise (a running or interrupted run).
So the overview's counts (planned = valid + invalid by reason + not run by reason + pending)
each name a filter of this frame: `verdict=invalid&reason=R` lists exactly those units.

Filtering, sorting and paging happen here, on the server: the paper's panel has thousands of
units and the page sends one page of them. Any column is a filter (`column=value`, compared
as displayed text), so a study's own columns filter like the shared ones; `filter=` takes an
expression (`recall < 0.5 and arm = "q"`, pipeline/view/filter_expr.py) and `q=` searches
every text column (pipeline/view/search.py). The table shows DEFAULT_COLUMNS of those the run
has; `cols=a,b` (or `cols=all`) chooses others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import polars as pl

from pipeline.store.final import KEY
from pipeline.view.cells import cell_text
from pipeline.view.filter_expr import FilterError, parse, to_polars
from pipeline.view.runs import Run
from pipeline.view.search import FOUND, search

PER_PAGE = 50
MAX_PER_PAGE = 500
LONG_TEXT = 120  # a string column longer than this in any unit is shown on the unit page only
PLAN_COLUMNS = (
    "config_id",
    "model",
    "family",
    "arm",
    "execution_group",
    "repeat",
    "schedule_position",
    "status",
    "not_run_reason",
)
FIRST = ("row_id", "config_id", "arm", "execution_group", "repeat", "attempt", "verdict", "reason")
CONTROL_PARAMS = frozenset({"sort", "desc", "page", "per", "col", "val", "filter", "q", "cols"})
DEFAULT_COLUMNS = (
    "row_id",
    "config_id",
    "arm",
    "verdict",
    "reason",
    "recall",
    "cost_usd",
    "prompt_tokens",
    "completion_tokens",
)


def unit_frame(run: Run) -> pl.DataFrame:
    """Plan ⋈ final rows on the unit key, with `verdict` and `reason` (see module doc)."""
    plan = run.plan.select(PLAN_COLUMNS)
    final = run.final.drop(
        [c for c in ("model", "family", "schedule_position", "run_id") if c in run.final.columns]
    )
    joined = plan.join(final, on=list(KEY), how="left", coalesce=True)
    unfinished = _unfinished_reason(run, plan)
    has_row = pl.col("row_id").is_not_null()
    verdict = (
        pl.when(pl.col("status") == "not_run")
        .then(pl.lit("not_run"))
        .when(has_row & pl.col("valid"))
        .then(pl.lit("valid"))
        .when(has_row)
        .then(pl.lit("invalid"))
        .when(pl.lit(unfinished is not None))
        .then(pl.lit("not_run"))
        .otherwise(pl.lit("pending"))
    )
    reason = (
        pl.when(pl.col("status") == "not_run")
        .then(pl.col("not_run_reason").fill_null("unspecified"))
        .when(has_row & ~pl.col("valid"))
        .then(pl.col("invalid_reason").fill_null("unspecified"))
        .when(~has_row)
        .then(pl.lit(unfinished))
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    frame = joined.with_columns(verdict.alias("verdict"), reason.alias("reason"))
    return frame.select(*FIRST, *[c for c in frame.columns if c not in FIRST])


def _unfinished_reason(run: Run, plan: pl.DataFrame) -> str | None:
    counts = run.manifest.get("counts") or {}
    stated = dict(counts.get("not_run") or {})
    in_plan = plan.filter(pl.col("status") == "not_run")["not_run_reason"].fill_null("unspecified")
    for reason in in_plan.to_list():
        stated[reason] = stated.get(reason, 0) - 1
    leftover = [reason for reason, n in stated.items() if n > 0]
    return leftover[0] if len(leftover) == 1 and not counts.get("pending") else None


def table_columns(frame: pl.DataFrame) -> list[str]:
    """The columns the units table shows: scalars, and strings short enough to read in a cell."""
    shown = []
    for name, dtype in frame.schema.items():
        if dtype.is_nested():
            continue
        longest = frame[name].str.len_chars().max() if dtype == pl.String else None
        if isinstance(longest, int) and longest > LONG_TEXT:
            continue
        shown.append(name)
    return shown


@dataclass(frozen=True)
class UnitQuery:
    """A units-table request: equality filters by column, a filter expression, a text search,
    one sort column, a page, the columns shown (None: the default set)."""

    filters: tuple[tuple[str, str], ...] = ()
    sort: str | None = None
    desc: bool = False
    page: int = 1
    per: int = PER_PAGE
    expression: str = ""
    search: str = ""
    cols: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str], columns: list[str]) -> UnitQuery:
        """From query parameters; unknown columns are ignored, not errors (a stale link)."""
        filters = tuple(
            (k, v) for k, v in params.items() if k in columns and k not in CONTROL_PARAMS
        )
        # the form's free pair: any column (a study's own included) = a value
        column, value = params.get("col"), params.get("val")
        if column in columns and value is not None and column not in dict(filters):
            filters += ((column, value),)
        sort = params.get("sort")
        cols = params.get("cols")
        return cls(
            filters=filters,
            sort=sort if sort in columns else None,
            desc=params.get("desc") == "1",
            page=max(1, _int(params.get("page"), 1)),
            per=min(MAX_PER_PAGE, max(1, _int(params.get("per"), PER_PAGE))),
            expression=params.get("filter", "").strip(),
            search=params.get("q", "").strip(),
            cols=None if not cols else tuple(c for c in cols.split(",") if c),
        )

    def params(self, **change: object) -> dict[str, str]:
        """This query's parameters with some changed (for the pager and the column headers)."""
        out = dict(self.filters)
        values = {
            "filter": self.expression or None,
            "q": self.search or None,
            "cols": None if self.cols is None else ",".join(self.cols),
            "sort": self.sort,
            "desc": "1" if self.desc else None,
            "page": str(self.page),
            "per": str(self.per) if self.per != PER_PAGE else None,
        }
        values.update({k: None if v is None else str(v) for k, v in change.items()})
        out.update({k: v for k, v in values.items() if v is not None})
        return out

    def toggled(self, column: str, default: list[str]) -> str:
        """The `cols` value that shows or hides `column` (for the column chooser's links)."""
        shown = list(self.cols) if self.cols is not None else default
        return ",".join([c for c in shown if c != column] if column in shown else [*shown, column])


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def default_columns(columns: list[str]) -> list[str]:
    """DEFAULT_COLUMNS of those the table has (all of them when it has too few)."""
    found = [c for c in DEFAULT_COLUMNS if c in columns]
    return found if len(found) > 1 else columns


def shown_columns(query: UnitQuery, columns: list[str]) -> list[str]:
    """The columns a page shows: row_id first (it links to the unit), then the chosen ones."""
    if query.cols is None:
        chosen = default_columns(columns)
    elif query.cols == ("all",):
        chosen = columns
    else:
        chosen = [c for c in query.cols if c in columns]
    rest = [c for c in chosen if c != "row_id"]
    return ["row_id", *rest] if "row_id" in columns else rest


@dataclass(frozen=True)
class UnitPage:
    rows: list[dict[str, object]]
    columns: list[str]
    total: int
    matched: int
    pages: int
    query: UnitQuery
    error: str | None = None  # the filter expression's error: the filter is not applied
    stopped: str | None = None  # why the search stopped before reading every unit


def query_units(frame: pl.DataFrame, query: UnitQuery, columns: list[str]) -> UnitPage:
    """One page of `frame` after the query's filters, expression, search and sort; `columns`
    are the ones it shows."""
    selected = frame
    for column, value in query.filters:
        selected = selected.filter(cell_text(column, frame.schema[column]) == value)
    error = None
    try:
        node = parse(query.expression, _filterable(frame))
    except FilterError as exc:
        node, error = None, f"{exc} — the filter is not applied"
    if node is not None:
        selected = selected.filter(to_polars(node, frame.schema))
    stopped = None
    if query.search:
        found = search(selected, query.search)
        selected, stopped = found.frame, found.stopped
        columns = [*columns[:1], FOUND, *columns[1:]]
    if query.sort:
        selected = selected.sort(query.sort, descending=query.desc, nulls_last=True)
    pages = max(1, -(-selected.height // query.per))
    page = min(query.page, pages)
    chunk = selected.slice((page - 1) * query.per, query.per).select(columns)
    shown = replace(query, page=page)
    return UnitPage(
        chunk.to_dicts(), columns, frame.height, selected.height, pages, shown, error, stopped
    )


def _filterable(frame: pl.DataFrame) -> list[str]:
    return [name for name, dtype in frame.schema.items() if not dtype.is_nested()]


def presets(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """The filter presets (label, expression) this table has the columns for; the answer one
    names the first text column called answer…, its quotes left for the text to look for."""
    found = [("invalid", 'verdict = "invalid"')]
    if "recall" in frame.columns:
        found.append(("recall < 0.5", "recall < 0.5"))
    answers = [c for c, t in frame.schema.items() if t == pl.String and c.startswith("answer")]
    if answers:
        found.append(("answer contains …", f'{answers[0]} contains ""'))
    return found
