"""`python -m pipeline query RUN_DIR "SQL" [--format table|csv|json]`: Polars SQL over a run.

Every table of the run's layout (its study's, named by the manifest: `rows`, `events`, the
study's own such as the carrier's `checks` and `folds`, and `plan`) is registered as a lazy
scan through `pipeline.store`: committed parts only (never a killed writer's `.tmp-*`), every
footer checked, a table without parts empty with its schema. Bad SQL, an unknown table or
column is a one-line error.

The query is read-only over those tables and nothing else: Polars SQL's table functions
(`read_csv`, `read_parquet`, `read_ipc`, `read_json`, `read_ndjson`) would otherwise read any
file on the machine or another run's parquet, so `query_guard.check_read_only` rejects them,
file paths used as tables, qualified names and every statement that is not a read, before the
query runs (see docs/reliability.md, "Query is read-only"). No globals or catalogs are
registered, so a plain name resolves only to a run table or one of the query's CTEs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

import polars as pl

from pipeline.commands.analyze import require_run_dir
from pipeline.commands.args import CommandParser
from pipeline.commands.query_bounds import (
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_TIMEOUT_S,
    QueryLimits,
    run_bounded,
)
from pipeline.commands.query_guard import check_read_only, tokenize
from pipeline.usererror import UserError


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("query", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run directory")
    parser.add_argument("sql", help="a Polars SQL query over the run's tables (rows, plan, ...)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"stop a query that runs longer (default {DEFAULT_TIMEOUT_S:g}; 0: no limit)",
    )
    parser.add_argument(
        "--max-memory-mb",
        type=int,
        default=DEFAULT_MAX_MEMORY_MB,
        help=f"the query process's address space (default {DEFAULT_MAX_MEMORY_MB}; 0: no limit)",
    )
    return parser


def run_tables(run_dir: Path) -> dict[str, pl.LazyFrame]:
    """Every table of the run's layout, by name, as a lazy scan through the store."""
    from pipeline import studies
    from pipeline.store import read_plan, scan

    layout = studies.layout(studies.of_run(require_run_dir(run_dir)))
    frames = {table: scan(run_dir, table, layout) for table in layout.tables}
    stored = read_plan(run_dir)
    plan = pl.from_arrow(layout.schema("plan").empty_table() if stored is None else stored)
    assert isinstance(plan, pl.DataFrame)
    frames["plan"] = plan.lazy()
    return frames


def run_query(run_dir: Path, sql: str) -> pl.DataFrame:
    """The query's result; UserError for a missing or corrupt run dir, a query that reaches
    beyond the run's tables (checked before anything runs), or a failing query."""
    if not tokenize(sql):  # blank, or comments only
        raise UserError("empty query: give one SQL statement, e.g. 'select count(*) from rows'")
    frames = run_tables(run_dir)
    context = pl.SQLContext(frames=frames, register_globals=False)
    try:
        check_read_only(sql, list(frames))
        return context.execute(sql, eager=True)
    except pl.exceptions.PolarsError as exc:
        damaged = _damaged_part(run_dir)  # a part torn behind an intact footer: name it
        if damaged is not None:
            raise damaged from None
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = _ambiguity_hint(first_line, sql, frames)
        if hint is not None:
            raise UserError(f"query failed: {hint}") from exc
        raise UserError(f"query failed ({type(exc).__name__}): {first_line}") from exc


_AMBIGUOUS = re.compile(r'ambiguous reference to column "([^"]+)"')


def _ambiguity_hint(message: str, sql: str, frames: Mapping[str, pl.LazyFrame]) -> str | None:
    """For an ambiguous column: the tables of the query that hold it, and how to qualify it."""
    found = _AMBIGUOUS.search(message)
    if found is None:
        return None
    column = found.group(1)
    at = {t: re.search(rf"\b{re.escape(t)}\b", sql, re.IGNORECASE) for t in frames}
    named = sorted(
        (m.start(), t) for t, m in at.items() if m is not None
    )  # as the query names them
    holders = [t for _, t in named if column in frames[t].collect_schema().names()]
    if len(holders) < 2:
        return None
    listed = ", ".join(holders[:-1]) + f" and {holders[-1]}"
    return f"{column} is in {listed}: write {holders[0]}.{column}"


def _damaged_part(run_dir: Path) -> UserError | None:
    from pipeline import studies
    from pipeline.store.analysis_inputs import find_damaged_part

    return find_damaged_part(run_dir, studies.layout(studies.of_run(run_dir)))


def check_csv_scalar(result: pl.DataFrame) -> None:
    """CSV has no nested values: name the list / struct columns and the ways out (one line)."""
    nested = {name: dtype for name, dtype in result.schema.items() if dtype.is_nested()}
    if nested:
        shown = ", ".join(f"{name} ({dtype})" for name, dtype in nested.items())
        raise UserError(
            f"--format csv cannot write nested column(s) {shown}; use --format json, or "
            f"select scalar columns (e.g. unnest({next(iter(nested))}))"
        )


TABLE_CELL_CHARS = 60  # longest string shown in a table cell
TABLE_ROWS = 100


def _column_width(result: pl.DataFrame, name: str) -> int:
    """Characters the table needs for one column (header, dtype, shown values, borders)."""
    values = result.get_column(name).head(TABLE_ROWS).to_list()
    longest = max((min(len(str(v)), TABLE_CELL_CHARS + 1) for v in values), default=0)
    return max(len(name), len(str(result.schema[name])), longest) + 3


def _column_groups(result: pl.DataFrame, width: int) -> list[list[str]]:
    """Columns in groups that each fit `width`, so no header is cut (issue 19)."""
    groups: list[list[str]] = [[]]
    used = 1
    for name in result.columns:
        need = _column_width(result, name)
        if groups[-1] and used + need > width:
            groups.append([])
            used = 1
        groups[-1].append(name)
        used += need
    return groups


def print_table(result: pl.DataFrame, out: TextIO) -> None:
    """The result as text tables: one, or as many as it takes to show every header whole."""
    width = max(80, shutil.get_terminal_size((200, 24)).columns)
    groups = _column_groups(result, width)
    config = {"tbl_rows": TABLE_ROWS, "tbl_cols": -1, "fmt_str_lengths": TABLE_CELL_CHARS}
    if len(groups) == 1:
        with pl.Config(tbl_width_chars=width, **config):  # type: ignore[arg-type]
            print(result, file=out)
        return
    total, first = len(result.columns), 1
    print(
        f"{total} columns do not fit {width} characters: shown in {len(groups)} parts "
        "(or use --format csv)",
        file=out,
    )
    for group in groups:
        print(f"columns {first}-{first + len(group) - 1} of {total}:", file=out)
        with pl.Config(tbl_width_chars=10 * width, **config):  # type: ignore[arg-type]
            print(result.select(group), file=out)
        first += len(group)


def query_to(argv: list[str], out: TextIO) -> None:
    """Run the query `argv` describes and write its result to `out` (in this process)."""
    args = _parser().parse_args(argv)
    result = run_query(args.run_dir, args.sql)
    if args.format == "csv":
        check_csv_scalar(result)
        out.write(result.write_csv())
    elif args.format == "json":
        out.write(result.write_json() + "\n")
    else:
        print_table(result, out)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)  # bad arguments are refused here, before any child
    limits = QueryLimits(timeout_s=args.timeout_s, max_memory_mb=args.max_memory_mb)
    if limits.unbounded:
        query_to(argv, sys.stdout)
        return 0
    return run_bounded(argv, limits)
