"""Recomputes a decision's number from the table it cites (pipeline.decision.Number).

Why: a page that tells users what to do must show numbers they can check. Every number a
study's decision shows names its table, its rows and its rule; this module applies them to
the table alone, with code of its own (polars filters and jobs/stats.py), so the decision
page's tests and `decide`'s own check compare what the page says with what the table holds.
Pure: a frame in, a number out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import polars as pl

from jobs import stats
from pipeline.decision import Number, Where

_MDE_Z = 2.80
_NUMBER = re.compile(r"[-+−]?\$?-?[\d,]*\.?\d+")


def _nearest_rank(values: Sequence[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(percent / 100 * len(ordered)), 1) - 1]


def _interval_end(find: Callable[[Sequence[float]], stats.Interval | None], hi: bool) -> Rule:
    def rule(values: Sequence[float]) -> float | None:
        found = find(values)
        return None if found is None else (found.hi if hi else found.lo)

    return rule


Rule = Callable[[Sequence[float]], float | None]


def _mde(values: Sequence[float]) -> float | None:
    sd = stats.sample_sd(values)
    return None if sd is None else _MDE_Z * sd / math.sqrt(len(values))


def _positive_pct(values: Sequence[float]) -> float | None:
    return 100 * stats.sign_counts(values).positive / len(values) if values else None


def _negative_pct(values: Sequence[float]) -> float | None:
    return 100 * stats.sign_counts(values).negative / len(values) if values else None


RULES: dict[str, Rule] = {
    "value": lambda v: v[0] if len(v) == 1 else None,
    "exp": lambda v: math.exp(v[0]) if len(v) == 1 else None,
    "mean": stats.mean,
    "count": lambda v: float(len(v)),  # the rows with a value
    "sum": math.fsum,
    "min": lambda v: min(v) if v else None,
    "max": lambda v: max(v) if v else None,
    "median": lambda v: _nearest_rank(v, 50) if v else None,
    "p99": lambda v: _nearest_rank(v, 99) if v else None,
    "positive": lambda v: float(stats.sign_counts(v).positive),
    "positive_pct": _positive_pct,
    "negative": lambda v: float(stats.sign_counts(v).negative),
    "negative_pct": _negative_pct,
    "sd": stats.sample_sd,
    "t_lo": _interval_end(stats.t_interval, hi=False),
    "t_hi": _interval_end(stats.t_interval, hi=True),
    "loo_lo": _interval_end(stats.leave_one_out_range, hi=False),
    "loo_hi": _interval_end(stats.leave_one_out_range, hi=True),
    "mde": _mde,
}


def merged(base: Where, over: Where) -> Where:
    """`base` with `over`'s pairs put over it (a column named twice keeps `over`'s value)."""
    kept = dict(base)
    kept.update(dict(over))
    return tuple(kept.items())


def rows(table: pl.DataFrame, where: Where) -> pl.DataFrame:
    """The rows of `table` where every pair holds (`a|b`: either), compared as text."""
    found = table
    for column, value in where:
        found = found.filter(pl.col(column).cast(pl.Utf8).is_in(value.split("|")))
    return found


def _values(table: pl.DataFrame, where: Where, number: Number) -> list[float]:
    chosen = rows(table, merged(where, number.where))
    if number.group_sum is not None:
        chosen = chosen.group_by(number.group_sum).agg(pl.col(number.column).sum())
    if not number.versus:
        return [float(v) for v in chosen[number.column].drop_nulls().to_list()]
    other = rows(table, merged(where, number.versus)).select(
        "config_id", pl.col(number.column).alias("__versus")
    )
    joined = chosen.select("config_id", number.column).join(other, on="config_id")
    return [
        float(a) - float(b)
        for a, b in joined.select(number.column, "__versus").drop_nulls().iter_rows()
    ]


def recompute(
    table: pl.DataFrame,
    where: Where,
    number: Number,
    boot: tuple[int, int] | None = None,
) -> float | None:
    """The number from the table alone; `boot` (seed, resamples) for the bootstrap rules."""
    values = _values(table, where, number)
    if number.rule in ("boot_lo", "boot_hi"):
        if boot is None:
            return None
        found = stats.bootstrap_mean_interval(values, seed=boot[0], resamples=boot[1])
        result = None if found is None else (found.hi if number.rule == "boot_hi" else found.lo)
    else:
        result = RULES[number.rule](values)
    if result is not None and number.over is not None:
        below = RULES[number.rule](_values(table, where, replace(number, column=number.over)))
        result = None if not below else result / below
    return None if result is None else result * number.scale


def parse_shown(shown: str) -> tuple[float, float]:
    """(the value as shown, half its last digit's unit): `$0.001809` → (0.001809, 5e-7)."""
    text = shown.replace("−", "-").replace(",", "").replace("$", "").replace("%", "")
    text = text.replace("×", "").strip()
    value = float(text)
    digits = text.split(".", 1)[1] if "." in text else ""
    exponent = 0
    if "e" in digits.lower():
        digits, exp = re.split("[eE]", digits)
        exponent = int(exp)
    return value, 0.5 * 10.0 ** (exponent - len(digits))


def agrees(shown: str, recomputed: float | None) -> bool:
    """Whether a number as shown is the recomputed one, rounded as it is shown."""
    if recomputed is None:
        return False
    value, half = parse_shown(shown)
    if not (math.isfinite(value) and math.isfinite(recomputed)):
        return value == recomputed or (math.isnan(value) and math.isnan(recomputed))
    return abs(value - recomputed) <= half * (1 + 1e-9) + 1e-12


def numbers_in(text: str) -> list[str]:
    """Every number written in `text` (the page's test: none outside a cited Number)."""
    return [m.group(0) for m in _NUMBER.finditer(text)]
