"""Keeps `python -m pipeline query` read-only over the run's own registered tables.

Polars SQL can read data that was never registered: its table functions `read_csv`,
`read_parquet`, `read_ipc`, `read_json` and `read_ndjson` open any local path, glob or URL
(so also another run's parquet parts), in FROM or JOIN, in a CTE or in any subquery. Polars
has no switch that turns them off, so `check_read_only` rejects a query before it runs, with
two independent checks and a statement allow-list:

1. Allow-list over Polars' own parser (`table_identifiers`): every relation the query names must
   be a registered table, a CTE the query itself defines, or a generator of literal rows
   (`generate_series`, `range`); table functions, file paths used as tables (quoted paths,
   globs) and schema-qualified names are rejected by name.
2. A textual check over a comment- and literal-aware token stream, independent of that parser:
   no `read_*`/`scan_*` call (any case, any whitespace or comment before the parenthesis), and
   no string literal in table position (after FROM or JOIN).
3. One statement, and only a read: SELECT, WITH ... SELECT, FROM-first, VALUES, a parenthesised
   query, EXPLAIN of one, or SHOW TABLES (it lists only the registered names). CREATE TABLE AS,
   DROP, TRUNCATE, DELETE, INSERT, COPY, ATTACH, SET and the rest are rejected.

String literals used as values (`where arm = 'read_csv(x)'`, `like '%/etc/passwd%'`) are
tokens of their own, so they never trip the textual check.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Literal, NamedTuple

from polars._plr import PySQLContext

from pipeline.usererror import UserError


class QueryRejected(UserError):
    """The query could reach data other than the run's tables; the message says what and how."""


TokenKind = Literal["word", "quoted", "string", "punct"]


class Token(NamedTuple):
    kind: TokenKind
    text: str  # a quoted identifier or string literal without its quotes


# Polars' table functions that read files or URLs (polars 2.1: read_csv, read_parquet, read_ipc,
# read_json, read_ndjson). Every `read_*`/`scan_*` name is refused, so one Polars adds later is
# refused too.
_READER_NAME = re.compile(r"(read|scan)_\w*", re.IGNORECASE)
# Table functions that produce rows from their literal arguments only; they read nothing.
LITERAL_GENERATORS = frozenset({"generate_series", "range"})
# Statements that only read; anything else (CREATE, DROP, COPY, ...) is refused.
_QUERY_STARTS = frozenset({"select", "values", "from"})
# Functions whose argument syntax has a FROM that is not a table FROM: TRIM(BOTH 'x' FROM s).
_FROM_IN_ARGUMENTS = frozenset({"trim", "extract", "substring", "overlay"})
_PATH_CHARACTERS = frozenset("/\\*?~:")
_FILE_SUFFIX = re.compile(
    r"\.(parquet|csv|tsv|ipc|arrow|feather|json|ndjson|jsonl|avro|txt)$", re.I
)

_WORD = re.compile(r"[\w$@#]+")
# sqlparser (Polars' lexer, generic dialect): `$`, any run of alphanumerics or `_` (a digit
# may come first: `$1$'$1$` is the string `'`), `$`; a `$1` not closed by `$` is a placeholder
_DOLLAR_TAG = re.compile(r"\$\w*\$")


def check_read_only(sql: str, tables: Sequence[str]) -> None:
    """Raises QueryRejected unless `sql` reads only `tables` (the run's registered names).

    A query Polars cannot parse raises its PolarsError here, before anything is checked or run.
    """
    identifiers = PySQLContext.table_identifiers(sql, include_schema=True, unique=True)
    tokens = tokenize(sql)
    _check_statement(tokens, tables)
    _check_tokens(tokens, tables)
    _check_identifiers(identifiers, tables, cte_names(tokens))


def _rejected(tables: Sequence[str], reason: str) -> QueryRejected:
    return QueryRejected(f"query may read only this run's tables ({', '.join(tables)}); {reason}")


# --- tokens ---------------------------------------------------------------------------------


def tokenize(sql: str) -> list[Token]:
    """SQL as words, quoted identifiers, string literals and punctuation, without comments.

    Follows Polars' SQL lexer where it matters: `--` and nested `/* */` comments, '' inside
    '...', backslash escapes only in E'...', dollar-quoted $tag$...$tag$ strings, "..." and
    `...` identifiers. An unterminated literal or comment runs to the end (Polars' parser has
    already refused such a query).
    """
    tokens: list[Token] = []
    i, end = 0, len(sql)
    while i < end:
        char = sql[i]
        if char.isspace():
            i += 1
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            i = end if newline < 0 else newline + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif char == "'":
            text, i = _quoted(sql, i + 1, "'")
            tokens.append(Token("string", text))
        elif char in "eE" and sql.startswith("'", i + 1):
            text, i = _escaped_string(sql, i + 2)
            tokens.append(Token("string", text))
        elif char in '"`':
            text, i = _quoted(sql, i + 1, char)
            tokens.append(Token("quoted", text))
        elif char == "$" and (tag := _DOLLAR_TAG.match(sql, i)):
            close = sql.find(tag.group(), tag.end())
            stop = end if close < 0 else close
            tokens.append(Token("string", sql[tag.end() : stop]))
            i = end if close < 0 else close + len(tag.group())
        elif word := _WORD.match(sql, i):
            tokens.append(Token("word", word.group()))
            i = word.end()
        else:
            tokens.append(Token("punct", char))
            i += 1
    return tokens


def _skip_block_comment(sql: str, start: int) -> int:
    """The index after the comment opened at `start`; comments nest, as in Polars."""
    depth, i = 0, start
    while i < len(sql):
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return i


def _quoted(sql: str, start: int, quote: str) -> tuple[str, int]:
    """The text up to the closing `quote` (doubled means literal) and the index after it."""
    parts: list[str] = []
    i = start
    while True:
        close = sql.find(quote, i)
        if close < 0:
            parts.append(sql[i:])
            return "".join(parts), len(sql)
        parts.append(sql[i:close])
        if not sql.startswith(quote, close + 1):
            return "".join(parts), close + 1
        parts.append(quote)
        i = close + 2


def _escaped_string(sql: str, start: int) -> tuple[str, int]:
    """An E'...' literal: a backslash escapes the next character, '' is a quote."""
    parts: list[str] = []
    i = start
    while i < len(sql):
        char = sql[i]
        if char == "\\" and i + 1 < len(sql):
            parts.append(sql[i + 1])
            i += 2
        elif char == "'" and sql.startswith("'", i + 1):
            parts.append("'")
            i += 2
        elif char == "'":
            return "".join(parts), i + 1
        else:
            parts.append(char)
            i += 1
    return "".join(parts), i


def _is_word(tokens: Sequence[Token], index: int, *words: str) -> bool:
    return (
        0 <= index < len(tokens)
        and tokens[index].kind == "word"
        and tokens[index].text.lower() in words
    )


def _is_punct(tokens: Sequence[Token], index: int, char: str) -> bool:
    return 0 <= index < len(tokens) and tokens[index] == Token("punct", char)


def _is_name(tokens: Sequence[Token], index: int) -> bool:
    return 0 <= index < len(tokens) and tokens[index].kind in ("word", "quoted")


def _after_group(tokens: Sequence[Token], start: int) -> int:
    """The index after the parenthesis that closes the one at `start`."""
    depth = 0
    for index in range(start, len(tokens)):
        if _is_punct(tokens, index, "("):
            depth += 1
        elif _is_punct(tokens, index, ")"):
            depth -= 1
            if depth == 0:
                return index + 1
    return len(tokens)


# --- CTEs and statements --------------------------------------------------------------------


def _parse_ctes(tokens: Sequence[Token], start: int) -> tuple[list[str], int] | None:
    """For WITH at `start`: the CTE names and the index after the list; None if not a CTE list
    (WITH also opens `WITH ORDINALITY` and the like)."""
    index = start + 1
    if _is_word(tokens, index, "recursive"):
        index += 1
    names: list[str] = []
    while _is_name(tokens, index):
        name = tokens[index].text
        index += 1
        if _is_punct(tokens, index, "("):  # column list: WITH t(a, b) AS (...)
            index = _after_group(tokens, index)
        if not (_is_word(tokens, index, "as") and _is_punct(tokens, index + 1, "(")):
            return None
        names.append(name)
        index = _after_group(tokens, index + 1)
        if not _is_punct(tokens, index, ","):
            return names, index
        index += 1
    return None


def cte_names(tokens: Sequence[Token]) -> set[str]:
    """Lower-cased names of every CTE the query defines, at any depth."""
    names: set[str] = set()
    for index in range(len(tokens)):
        if _is_word(tokens, index, "with") and (parsed := _parse_ctes(tokens, index)):
            names.update(name.lower() for name in parsed[0])
    return names


def _check_statement(tokens: Sequence[Token], tables: Sequence[str]) -> None:
    """One statement, and one that only reads (an empty query is left to Polars to refuse)."""
    semicolons = [index for index, token in enumerate(tokens) if token == Token("punct", ";")]
    if semicolons and any(token != Token("punct", ";") for token in tokens[semicolons[0] :]):
        raise _rejected(tables, "run one statement at a time (found more SQL after ';')")
    if tokens:
        _check_read_statement(tokens, 0, tables)


def _check_read_statement(tokens: Sequence[Token], start: int, tables: Sequence[str]) -> None:
    allowed = "only SELECT, WITH ... SELECT, VALUES, EXPLAIN and SHOW TABLES are allowed"
    index = start
    if _is_word(tokens, index, "explain"):
        index += 1
        while _is_word(tokens, index, "analyze", "verbose"):
            index += 1
        _check_read_statement(tokens, index, tables)
        return
    if _is_word(tokens, index, "show") and _is_word(tokens, index + 1, "tables"):
        return
    if _is_word(tokens, index, "with"):
        parsed = _parse_ctes(tokens, index)
        if parsed is None:
            raise _rejected(tables, f"could not read the WITH clause; {allowed}")
        index = parsed[1]
    if _is_punct(tokens, index, "(") or _is_word(tokens, index, *_QUERY_STARTS):
        return
    if index >= len(tokens):
        raise _rejected(tables, f"the WITH clause has no query after it; {allowed}")
    raise _rejected(tables, f"{tokens[index].text.upper()} statements are not allowed; {allowed}")


# --- the textual check ----------------------------------------------------------------------


def _check_tokens(tokens: Sequence[Token], tables: Sequence[str]) -> None:
    """No reader call and no string literal as a table, whatever Polars' parser reported."""
    openers: list[str] = []  # per open parenthesis: the word before it, lower-cased
    for index, token in enumerate(tokens):
        called = token.kind in ("word", "quoted") and _is_punct(tokens, index + 1, "(")
        if called and _READER_NAME.fullmatch(token.text):
            raise _rejected(tables, f"table function {token.text} is not allowed")
        if token == Token("punct", "("):
            before = tokens[index - 1] if index > 0 else None
            openers.append(before.text.lower() if before and before.kind == "word" else "")
        elif token == Token("punct", ")") and openers:
            openers.pop()
        elif token.kind == "string" and _in_table_position(tokens, index, openers):
            raise _rejected(tables, f"a file path ('{token.text}') cannot be used as a table")


def _in_table_position(tokens: Sequence[Token], index: int, openers: Sequence[str]) -> bool:
    if _is_word(tokens, index - 1, "join"):
        return True
    if not _is_word(tokens, index - 1, "from"):
        return False
    if _is_word(tokens, index - 2, "distinct"):  # IS [NOT] DISTINCT FROM 'x'
        return False
    return not (openers and openers[-1] in _FROM_IN_ARGUMENTS)


# --- the allow-list over Polars' parser -----------------------------------------------------


def _check_identifiers(
    identifiers: Sequence[str], tables: Sequence[str], ctes: Collection[str]
) -> None:
    """Every relation is a registered table, one of the query's CTEs or a literal generator."""
    allowed = {name.lower() for name in tables} | set(ctes) | LITERAL_GENERATORS
    for name in identifiers:
        if _READER_NAME.fullmatch(name):
            raise _rejected(tables, f"table function {name} is not allowed")
        if _looks_like_path(name):
            raise _rejected(tables, f"a file path ('{name}') cannot be used as a table")
        if "." in name:
            raise _rejected(tables, f"qualified name {name} is not allowed; use a plain table name")
        if name.lower() not in allowed:
            raise QueryRejected(
                f"query failed: {name} is not a table of this run (its tables: {', '.join(tables)})"
            )


def _looks_like_path(name: str) -> bool:
    """A quoted path, glob or URL used as a table: `"/runs/other/rows/*.parquet"`."""
    return bool(_PATH_CHARACTERS.intersection(name) or _FILE_SUFFIX.search(name))
