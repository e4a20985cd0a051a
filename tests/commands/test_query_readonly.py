"""`python -m pipeline query` reads only the run's own tables (pipeline/commands/query_guard.py).

Every way Polars SQL has to reach other data (table functions, paths as tables, other runs'
parquet, non-read statements) is refused before the query runs, with a one-line UserError; the
files the refused queries name exist and hold a marker, so a guard that let one through would
fail the test by returning data rather than by a missing file. Legitimate queries, including
string values that look like table functions or paths, still run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.commands import query_guard
from pipeline.commands.query import run_query
from pipeline.usererror import UserError
from tests.jobs.jobs_testdata import row, write_run

ONLY = "query may read only this run's tables (rows, checks, folds, events, requests, plan)"
MARKER = "SECRET-MARKER"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [
        row("A", "j", 0, 7, answer_text="see /etc/passwd"),
        row("A", "q", 0, 14, answer_text="read_csv('x') is text"),
    ]
    checks = [{"row_id": r["row_id"], "label": "x", "passed": True} for r in rows]
    return write_run(tmp_path / "run", rows, checks=checks, manifest={})


@pytest.fixture
def other_run(tmp_path: Path) -> Path:
    """Another run next to `run_dir`, whose rows must stay out of reach."""
    return write_run(tmp_path / "other", [row("B", "j", 0, 1, answer_text=MARKER)])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """One readable file per table function, each holding MARKER."""
    frame = pl.DataFrame({"secret": [MARKER]})
    paths = {
        "read_csv": tmp_path / "secret.csv",
        "read_parquet": tmp_path / "secret.parquet",
        "read_ipc": tmp_path / "secret.arrow",
        "read_json": tmp_path / "secret.json",
        "read_ndjson": tmp_path / "secret.ndjson",
    }
    frame.write_csv(paths["read_csv"])
    frame.write_parquet(paths["read_parquet"])
    frame.write_ipc(paths["read_ipc"])
    frame.write_json(paths["read_json"])
    frame.write_ndjson(paths["read_ndjson"])
    return paths


def rejection(run_dir: Path, sql: str) -> str:
    with pytest.raises(UserError) as caught:
        run_query(run_dir, sql)
    assert MARKER not in str(caught.value)
    return str(caught.value)


def column(run_dir: Path, sql: str, name: str) -> list[object]:
    return run_query(run_dir, sql)[name].to_list()


# --- table functions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "function", ["read_csv", "read_parquet", "read_ipc", "read_json", "read_ndjson"]
)
def test_each_polars_table_function_is_rejected(
    run_dir: Path, files: dict[str, Path], function: str
) -> None:
    sql = f"SELECT * FROM {function}('{files[function]}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function {function} is not allowed"


@pytest.mark.parametrize("function", ["read_delta", "read_avro", "scan_parquet", "scan_csv"])
def test_reader_names_polars_does_not_support_yet_are_rejected_too(
    run_dir: Path, function: str
) -> None:
    sql = f"SELECT * FROM {function}('/tmp/x')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function {function} is not allowed"


def test_a_table_function_in_a_join_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"SELECT * FROM rows r CROSS JOIN read_csv('{files['read_csv']}') s"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_a_table_function_in_a_from_list_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"SELECT * FROM rows, read_csv('{files['read_csv']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_a_table_function_in_from_first_syntax_is_rejected(
    run_dir: Path, files: dict[str, Path]
) -> None:
    sql = f"FROM read_csv('{files['read_csv']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_a_table_function_with_a_list_of_paths_is_rejected(
    run_dir: Path, files: dict[str, Path]
) -> None:
    sql = f"SELECT * FROM read_json(['{files['read_json']}'])"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_json is not allowed"


# --- CTEs and subqueries that wrap a table function -----------------------------------------


def test_a_cte_wrapping_a_table_function_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"WITH t AS (SELECT * FROM read_csv('{files['read_csv']}')) SELECT * FROM t"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_a_cte_named_like_a_table_function_does_not_unlock_it(
    run_dir: Path, files: dict[str, Path]
) -> None:
    sql = f"WITH read_csv AS (SELECT * FROM rows) SELECT * FROM read_csv('{files['read_csv']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_a_derived_table_wrapping_a_table_function_is_rejected(
    run_dir: Path, files: dict[str, Path]
) -> None:
    sql = f"SELECT * FROM (SELECT * FROM read_parquet('{files['read_parquet']}')) x"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_parquet is not allowed"


def test_a_scalar_subquery_in_select_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"SELECT (SELECT secret FROM read_csv('{files['read_csv']}')) AS s FROM rows"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


def test_an_in_subquery_in_where_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"SELECT * FROM rows WHERE arm IN (SELECT secret FROM read_ipc('{files['read_ipc']}'))"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_ipc is not allowed"


def test_a_union_with_a_table_function_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"SELECT arm FROM rows UNION ALL SELECT secret FROM read_ndjson('{files['read_ndjson']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_ndjson is not allowed"


def test_explain_of_a_table_function_is_rejected(run_dir: Path, files: dict[str, Path]) -> None:
    sql = f"EXPLAIN SELECT * FROM read_csv('{files['read_csv']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_csv is not allowed"


# --- case, whitespace and comment tricks ----------------------------------------------------


@pytest.mark.parametrize(
    ("spelling", "name"),
    [
        ("READ_CSV (", "READ_CSV"),
        ("Read_Csv(", "Read_Csv"),
        ("read_csv/**/(", "read_csv"),
        ("read_csv /* a /* nested */ comment */ (", "read_csv"),
        ("read_csv -- a line comment\n(", "read_csv"),
        ("read_csv\n\t(", "read_csv"),
        ('"read_csv"(', "read_csv"),
        ("`read_csv`(", "read_csv"),
    ],
)
def test_case_whitespace_comments_and_quotes_around_a_table_function_are_rejected(
    run_dir: Path, files: dict[str, Path], spelling: str, name: str
) -> None:
    sql = f"SELECT * FROM {spelling}'{files['read_csv']}')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function {name} is not allowed"


# --- paths used as tables, other runs --------------------------------------------------------


def test_a_string_literal_path_as_a_table_is_rejected(
    run_dir: Path, files: dict[str, Path]
) -> None:
    path = files["read_csv"]
    assert rejection(run_dir, f"SELECT * FROM '{path}'") == (
        f"{ONLY}; a file path ('{path}') cannot be used as a table"
    )


def test_a_string_literal_path_in_a_join_is_rejected(run_dir: Path) -> None:
    assert rejection(run_dir, "SELECT * FROM rows JOIN '/etc/passwd' ON TRUE") == (
        f"{ONLY}; a file path ('/etc/passwd') cannot be used as a table"
    )


def test_a_string_literal_path_in_a_from_list_is_rejected(run_dir: Path) -> None:
    assert rejection(run_dir, "SELECT * FROM rows, '/etc/passwd'") == (
        f"{ONLY}; a file path ('/etc/passwd') cannot be used as a table"
    )


def test_a_quoted_identifier_path_as_a_table_is_rejected(
    run_dir: Path, files: dict[str, Path]
) -> None:
    path = files["read_parquet"]
    assert rejection(run_dir, f'SELECT * FROM "{path}"') == (
        f"{ONLY}; a file path ('{path}') cannot be used as a table"
    )


def test_a_bare_file_name_as_a_table_is_rejected(run_dir: Path) -> None:
    assert rejection(run_dir, 'SELECT * FROM "secret.csv"') == (
        f"{ONLY}; a file path ('secret.csv') cannot be used as a table"
    )


def test_another_runs_parquet_parts_are_rejected(run_dir: Path, other_run: Path) -> None:
    part = other_run / "rows" / "part-0000.parquet"
    assert rejection(run_dir, f"SELECT answer_text FROM read_parquet('{part}')") == (
        f"{ONLY}; table function read_parquet is not allowed"
    )


def test_a_glob_over_other_runs_is_rejected(run_dir: Path, other_run: Path) -> None:
    glob = other_run.parent / "*" / "rows" / "*.parquet"
    assert rejection(run_dir, f"SELECT * FROM read_parquet('{glob}')") == (
        f"{ONLY}; table function read_parquet is not allowed"
    )
    assert rejection(run_dir, f'SELECT * FROM "{glob}"') == (
        f"{ONLY}; a file path ('{glob}') cannot be used as a table"
    )


def test_a_relative_path_to_another_run_is_rejected(run_dir: Path, other_run: Path) -> None:
    sql = f"SELECT * FROM read_parquet('../{other_run.name}/rows/part-0000.parquet')"
    assert rejection(run_dir, sql) == f"{ONLY}; table function read_parquet is not allowed"


def test_a_schema_qualified_name_is_rejected(run_dir: Path) -> None:
    assert rejection(run_dir, "SELECT * FROM other.rows") == (
        f"{ONLY}; qualified name other.rows is not allowed; use a plain table name"
    )


def test_a_table_the_run_does_not_have_is_named_with_the_tables_it_has(run_dir: Path) -> None:
    assert rejection(run_dir, "SELECT * FROM answers") == (
        "query failed: answers is not a table of this run "
        "(its tables: rows, checks, folds, events, requests, plan)"
    )


# --- statements that are not reads ----------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("CREATE TABLE t AS SELECT * FROM rows", "CREATE"),
        ("create temp table t as select * from rows", "CREATE"),
        ("DROP TABLE rows", "DROP"),
        ("TRUNCATE TABLE rows", "TRUNCATE"),
        ("DELETE FROM rows WHERE arm = 'j'", "DELETE"),
        ("INSERT INTO rows SELECT * FROM rows", "INSERT"),
        ("WITH t AS (SELECT * FROM rows) INSERT INTO x SELECT * FROM t", "INSERT"),
        ("COPY rows TO '/tmp/out.csv'", "COPY"),
        ("ATTACH '/tmp/other.db' AS other", "ATTACH"),
        ("SET threads = 1", "SET"),
    ],
)
def test_statements_that_are_not_reads_are_rejected(run_dir: Path, sql: str, keyword: str) -> None:
    assert rejection(run_dir, sql) == (
        f"{ONLY}; {keyword} statements are not allowed; "
        "only SELECT, WITH ... SELECT, VALUES, EXPLAIN and SHOW TABLES are allowed"
    )


def test_a_second_statement_is_rejected(run_dir: Path) -> None:
    assert rejection(run_dir, "SELECT * FROM rows; DROP TABLE rows") == (
        f"{ONLY}; run one statement at a time (found more SQL after ';')"
    )


# --- the CLI ---------------------------------------------------------------------------------


def test_the_cli_prints_a_rejection_as_one_line_and_exits_2(
    run_dir: Path, files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    sql = f"select * from read_csv('{files['read_csv']}')"
    assert main(["query", str(run_dir), sql]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {ONLY}; table function read_csv is not allowed\n"
    assert MARKER not in captured.out + captured.err


# --- defence in depth: each check blocks on its own -----------------------------------------


class _ParserThatSeesNoTables:
    """Stands in for Polars' parser missing every relation, to exercise the textual check."""

    @staticmethod
    def table_identifiers(query: str, include_schema: bool, unique: bool) -> list[str]:
        return []


def test_the_textual_check_blocks_a_table_function_the_parser_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(query_guard, "PySQLContext", _ParserThatSeesNoTables)
    with pytest.raises(query_guard.QueryRejected, match="table function read_csv is not"):
        query_guard.check_read_only("SELECT * FROM rows, read_csv('/etc/passwd')", ["rows"])


def test_the_textual_check_blocks_a_path_literal_the_parser_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(query_guard, "PySQLContext", _ParserThatSeesNoTables)
    with pytest.raises(query_guard.QueryRejected, match="file path"):
        query_guard.check_read_only("SELECT * FROM '/etc/passwd'", ["rows"])


def test_the_parser_check_blocks_a_table_the_textual_check_cannot_place() -> None:
    # A string after a comma in a FROM list is not in table position for the textual check.
    with pytest.raises(query_guard.QueryRejected, match=r"file path \('/etc/passwd'\)"):
        query_guard.check_read_only("SELECT * FROM rows, '/etc/passwd'", ["rows"])


def test_the_tokenizer_keeps_literals_and_drops_comments() -> None:
    tokens = query_guard.tokenize("select 'a''b', $t$x'y$t$, \"q\"\"r\" /* c /* d */ e */ -- f\n;")
    kinds: Sequence[tuple[str, str]] = [(t.kind, t.text) for t in tokens]
    assert kinds == [
        ("word", "select"),
        ("string", "a'b"),
        ("punct", ","),
        ("string", "x'y"),
        ("punct", ","),
        ("quoted", 'q"r'),
        ("punct", ";"),
    ]


# --- legitimate queries still run -----------------------------------------------------------


def test_a_join_of_rows_and_checks_with_an_aggregate_runs(run_dir: Path) -> None:
    sql = (
        "SELECT r.arm, COUNT(*) AS n, AVG(r.recall) AS mean_recall FROM rows r "
        "JOIN checks c ON r.row_id = c.row_id GROUP BY r.arm ORDER BY r.arm"
    )
    result = run_query(run_dir, sql)
    assert result.rows() == [("j", 1, 0.5), ("q", 1, 1.0)]


def test_a_string_value_that_looks_like_a_table_function_still_matches(run_dir: Path) -> None:
    sql = "SELECT arm FROM rows WHERE answer_text = 'read_csv(''x'') is text'"
    assert column(run_dir, sql, "arm") == ["q"]


def test_a_like_pattern_with_a_path_still_matches(run_dir: Path) -> None:
    sql = "SELECT arm FROM rows WHERE answer_text LIKE '%/etc/passwd%'"
    assert column(run_dir, sql, "arm") == ["j"]


def test_a_dollar_quoted_value_with_a_table_function_still_runs(run_dir: Path) -> None:
    sql = "SELECT COUNT(*) AS n FROM rows WHERE answer_text <> $$read_csv('/etc/passwd')$$"
    assert column(run_dir, sql, "n") == [2]


def test_a_comment_mentioning_a_table_function_is_ignored(run_dir: Path) -> None:
    sql = "SELECT COUNT(*) AS n FROM rows -- not read_csv('/etc/passwd')\n/* nor read_ipc('x') */"
    assert column(run_dir, sql, "n") == [2]


def test_from_keywords_that_take_a_string_value_still_run(run_dir: Path) -> None:
    sql = (
        "SELECT TRIM(BOTH '/' FROM '/' || arm || '/') AS a FROM rows "
        "WHERE answer_text IS DISTINCT FROM '/etc/passwd' ORDER BY a"
    )
    assert column(run_dir, sql, "a") == ["j", "q"]


def test_ctes_and_subqueries_over_the_run_tables_run(run_dir: Path) -> None:
    sql = (
        "WITH passed(row_id) AS (SELECT row_id FROM checks WHERE passed), "
        "Mine AS (SELECT * FROM rows WHERE row_id IN (SELECT row_id FROM passed)) "
        "SELECT COUNT(*) AS n FROM mine "
        "WHERE arm IN (WITH a AS (SELECT arm FROM rows) SELECT arm FROM a)"
    )
    assert column(run_dir, sql, "n") == [2]


def test_table_names_in_any_case_and_a_trailing_semicolon_run(run_dir: Path) -> None:
    sql = 'SELECT COUNT(*) AS n FROM ROWS JOIN "checks" USING (row_id);'
    assert column(run_dir, sql, "n") == [2]


def test_show_tables_lists_only_the_run_tables(run_dir: Path) -> None:
    assert sorted(column(run_dir, "SHOW TABLES", "name")) == [
        "checks",
        "events",
        "folds",
        "plan",
        "requests",
        "rows",
    ]


def test_explain_of_a_run_query_runs(run_dir: Path) -> None:
    assert run_query(run_dir, "EXPLAIN SELECT arm FROM rows").height >= 1


def test_literal_row_generators_read_nothing_and_run(run_dir: Path) -> None:
    sql = "SELECT COUNT(*) AS n FROM rows CROSS JOIN generate_series(1, 3) AS g(i)"
    assert column(run_dir, sql, "n") == [6]
