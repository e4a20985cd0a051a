"""A cell as the units table shows it, in Python (`as_text`) and as a polars column (`cell_text`).

Both say the same, so a filter compares what the eye sees, and the export's data (the text of
each cell, `units_data`) is what the served viewer filters on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import polars as pl

EMPTY = "—"
NUMBER_TEXT = r"^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"  # text that filters read as a number


def as_text(value: object) -> str:
    """A cell as the table shows it (and as a filter compares it)."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def cell_text(column: str, dtype: pl.DataType) -> pl.Expr:
    """`as_text` of every cell of `column`, as a polars expression (never null)."""
    expr = pl.col(column)
    if dtype == pl.Boolean:
        text = pl.when(expr).then(pl.lit("true")).otherwise(pl.lit("false"))
    elif dtype == pl.String:
        text = expr
    elif dtype.is_integer():
        text = expr.cast(pl.String)
    else:  # floats to 4 significant digits, times as Python prints them
        text = expr.map_elements(as_text, return_dtype=pl.String)
    return text.fill_null(EMPTY)


def units_data(frame: pl.DataFrame, element_id: str = "units-data") -> Iterator[str]:
    """The export's `<script id="units-data">`, which its filter script reads, in pieces (one
    unit at a time: the export is streamed). JSON of the scalar columns' names, the text ones
    (what a search reads), the numeric ones, and per unit `[texts, numbers]`: each cell's text
    and each numeric cell's number (null: empty, NaN or inf)."""
    scalar = {name: dtype for name, dtype in frame.schema.items() if not dtype.is_nested()}
    numeric = [name for name, dtype in scalar.items() if dtype.is_numeric()]
    head = {
        "columns": list(scalar),
        "strings": [name for name, dtype in scalar.items() if dtype == pl.String],
        "numeric": numeric,
    }
    opening = f'<script type="application/json" id="{element_id}">'
    yield opening + _json(head)[:-1] + ',"rows":['
    texts = frame.select(cell_text(name, dtype).alias(name) for name, dtype in scalar.items())
    numbers = frame.select(pl.col(name).cast(pl.Float64) for name in numeric)
    for n, (text, number) in enumerate(zip(texts.iter_rows(), numbers.iter_rows(), strict=True)):
        yield ("," if n else "") + _json([text, [_finite(v) for v in number]])
    yield "]}</script>"


def _json(value: object) -> str:
    """JSON safe inside a <script> element."""
    raw = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None  # as filters read it
