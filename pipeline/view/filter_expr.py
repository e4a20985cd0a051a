"""The units table's filter language, parsed by hand (no eval) and compiled to a polars expression.

The export runs the same grammar in the browser (`assets/filter_expr.js`, the same messages);
tests/view/filter_cases.py holds the cases both must agree on.

    expr    := term ("or" term)*
    term    := factor ("and" factor)*
    factor  := "(" expr ")" | COLUMN OP VALUE
    OP      := = | != | < | <= | > | >= | contains
    VALUE   := a number (-1, 0.5, 2e3) | "text" | 'text'

`and`, `or` and `contains` are case-insensitive words; a column is a name of the units table.
What a condition means for one unit (the decision the issue left open):
- against a number, the cell is read as a number: a numeric column's value, or a text cell that
  reads as one; an empty cell, NaN or inf, or text that is no number never matches (`!=` included);
- against a string, the cell is compared as the table shows it (`cells.as_text`: `true` and
  `false`, floats to 4 significant digits, `—` when empty), so `recall = "0.3571"` matches
  what the eye sees; `<`, `>` order text;
- `contains` always compares text, ignoring case (`final_answer contains 23857`).
A bad expression raises FilterError naming the 1-based character where it went wrong.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import polars as pl

from pipeline.usererror import UserError
from pipeline.view.cells import NUMBER_TEXT, cell_text

OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "contains")
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z0-9_.]))
    | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<string>"[^"]*"|'[^']*')
    | (?P<op><=|>=|!=|=|<|>)
    | (?P<paren>[()])
    )""",
    re.VERBOSE,
)


class FilterError(UserError):
    """A filter expression that does not parse, or names no column of the table."""


@dataclass(frozen=True)
class Token:
    kind: str  # number | word | string | op | paren | end
    text: str
    at: int  # 1-based character


@dataclass(frozen=True)
class Compare:
    column: str
    op: str
    value: str | float
    literal: str  # the value as written (what `contains` looks for)


@dataclass(frozen=True)
class Join:
    op: str  # and | or
    left: Node
    right: Node


Node = Compare | Join


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    at = 0
    while text[at:].strip():
        found = _TOKEN.match(text, at)
        if found is None or found.lastgroup is None:
            start = len(text) - len(text[at:].lstrip())
            if text[start] in "\"'":
                raise FilterError(f"filter: unterminated string at {start + 1}")
            raise FilterError(f'filter: unexpected "{text[start]}" at {start + 1}')
        kind = found.lastgroup
        out.append(Token(kind, found.group(kind), found.start(kind) + 1))
        at = found.end()
    out.append(Token("end", "", len(text) + 1))
    return out


def parse(text: str, columns: Collection[str]) -> Node | None:
    """The expression's tree (None when it is empty); FilterError on a bad one."""
    if not text.strip():
        return None
    parser = _Parser(tokens(text), columns)
    node = parser.expr()
    parser.expect_end()
    return node


class _Parser:
    def __init__(self, found: list[Token], columns: Collection[str]) -> None:
        self.found, self.next, self.columns = found, 0, columns

    def peek(self) -> Token:
        return self.found[self.next]

    def take(self) -> Token:
        token = self.found[self.next]
        self.next += 1
        return token

    def is_word(self, word: str) -> bool:
        token = self.peek()
        return token.kind == "word" and token.text.lower() == word

    def expr(self) -> Node:
        node = self.term()
        while self.is_word("or"):
            self.take()
            node = Join("or", node, self.term())
        return node

    def term(self) -> Node:
        node = self.factor()
        while self.is_word("and"):
            self.take()
            node = Join("and", node, self.factor())
        return node

    def factor(self) -> Node:
        token = self.take()
        if token.kind == "paren" and token.text == "(":
            node = self.expr()
            closing = self.take()
            if closing.text != ")" or closing.kind != "paren":
                raise _expected('")"', closing)
            return node
        if token.kind != "word" or token.text.lower() in ("and", "or", "contains"):
            raise _expected("a column name", token)
        if token.text not in self.columns:
            raise FilterError(f'filter: no column "{token.text}" at {token.at}')
        op = self.take()
        if not (op.kind == "op" or (op.kind == "word" and op.text.lower() == "contains")):
            raise _expected("an operator (" + " ".join(OPERATORS) + ")", op)
        value = self.take()
        if value.kind == "number":
            number = float(value.text)
            return Compare(token.text, op.text.lower(), number, value.text)
        if value.kind == "string":
            return Compare(token.text, op.text.lower(), value.text[1:-1], value.text[1:-1])
        raise _expected("a value (a number or a quoted string)", value)

    def expect_end(self) -> None:
        token = self.peek()
        if token.kind != "end":
            raise FilterError(
                f'filter: expected "and", "or" or the end at {token.at}, found "{token.text}"'
            )


def _expected(what: str, token: Token) -> FilterError:
    found = "the end" if token.kind == "end" else f'"{token.text}"'
    return FilterError(f"filter: expected {what} at {token.at}, found {found}")


def to_polars(node: Node, schema: Mapping[str, pl.DataType]) -> pl.Expr:
    """The expression as a polars filter over a frame of `schema` (true, false; never null)."""
    if isinstance(node, Join):
        left, right = to_polars(node.left, schema), to_polars(node.right, schema)
        return left & right if node.op == "and" else left | right
    dtype = schema[node.column]
    if node.op == "contains":
        text = cell_text(node.column, dtype).str.to_lowercase()
        return text.str.contains(node.literal.lower(), literal=True)
    if isinstance(node.value, float):
        if dtype.is_numeric():
            number = pl.col(node.column).cast(pl.Float64)
            cell = pl.when(number.is_finite()).then(number)  # NaN and inf: no number
        else:
            text = cell_text(node.column, dtype)
            number = text.cast(pl.Float64, strict=False)
            cell = pl.when(text.str.contains(NUMBER_TEXT)).then(number)
        return _compare(cell, node.op, node.value).fill_null(False)
    return _compare(cell_text(node.column, dtype), node.op, node.value)


def _compare(cell: pl.Expr, op: str, value: str | float) -> pl.Expr:
    match op:
        case "=":
            return cell == value
        case "!=":
            return cell != value
        case "<":
            return cell < value
        case "<=":
            return cell <= value
        case ">":
            return cell > value
        case _:
            return cell >= value
