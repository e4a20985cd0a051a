"""The guard's textual layer lexes dollar quotes as Polars does (issue 19 item 11).

Polars (sqlparser's generic dialect) reads `$tag$...$tag$` with any alphanumeric or `_` tag,
digits first included: `$1$'$1$` is the string `'`. The guard required a letter, so it read
`'` as the start of a string and hid what followed from its textual layer.
"""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.commands import query_guard
from pipeline.commands.query_guard import Token, tokenize

HIDDEN = "select $1$'$1$ as x, * from read_csv('/etc/passwd') -- '"


class _ParserThatSeesNoTables:
    @staticmethod
    def table_identifiers(query: str, include_schema: bool, unique: bool) -> list[str]:
        return []


@pytest.mark.parametrize(
    ("sql", "value"),
    [
        ("select $1$'$1$ as x", "'"),
        ("select $9a$ x $9a$ as x", " x "),
        ("select $_$'$_$ as x", "'"),
        ("select $$a $ b$$ as x", "a $ b"),
        ("select $t$ $1$ $t$ as x", " $1$ "),
    ],
)
def test_dollar_quotes_lex_as_polars_reads_them(sql: str, value: str) -> None:
    assert pl.SQLContext(register_globals=False).execute(sql, eager=True)["x"][0] == value
    assert Token("string", value) in tokenize(sql)


def test_a_digit_tag_cannot_hide_a_table_function_from_the_textual_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(query_guard, "PySQLContext", _ParserThatSeesNoTables)
    with pytest.raises(query_guard.QueryRejected, match="table function read_csv is not"):
        query_guard.check_read_only(HIDDEN, ["rows"])
