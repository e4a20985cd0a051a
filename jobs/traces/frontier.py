"""Where reasoning is kept: the summariser arm on the retention/compression frontier (issue 34).

Per configuration and length band (and `all`), from the analysis outputs: each arm's mean
share of the trace's facts kept, with its 95% percentile bootstrap interval over the band's
traces (the per-trace retentions of compression_pairs: each arm's, and naive's as its
baseline), and its median compression (compression_by_band). The rules (docs/traces.md
"Decide"):
- fewer than 5 traces with facts in the band (jobs/small_sample.py): no recommendation, the
  interval would rest on too few traces (the `all` row pools the bands);
- an arm qualifies when its interval's lower bound reaches the retention goal (0.9 by
  default): it keeps that share with confidence, not only on average;
- of those, the arm with the largest median compression is recommended, with its paired
  contrast against naive (compression_paired) and whether it dominates (no other arm keeps more
  and compresses more);
- none qualifies: no recommendation; the traces that would let the best mean m show it at this
  spread, n = (1.96 · sd / (m − goal))², or, when no arm keeps the goal on average, that none
  does;
- a more compressive arm that misses the goal is what would change the recommendation: the
  goal at which it would qualify.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from jobs.small_sample import MIN_SPREAD_N, small_spread
from jobs.stats import bootstrap_mean_interval
from jobs.traces.compression import ALL_BANDS
from jobs.traces.paired import BASELINE
from pipeline.config.schema import BootstrapConfig
from pipeline.decision import Answer, Effect, Evidence, Number, Where

QUESTION = "reasoning: which summariser keeps the facts at the least length?"
PAIRS = "analysis/compression_pairs.parquet"
BY_BAND = "analysis/compression_by_band.parquet"
PAIRED = "analysis/compression_paired.parquet"
Z = 1.959964  # z(0.975)


@dataclass(frozen=True)
class ArmPoint:
    """One arm in one band: its retention (mean, interval, spread, n) and median compression."""

    arm: str
    mean: float
    lo: float
    hi: float
    sd: float
    n: int
    compression: float | None

    def qualifies(self, goal: float) -> bool:
        return self.lo >= goal - 1e-12


def item_retentions(pairs: pl.DataFrame) -> pl.DataFrame:
    """(config_id, arm, item_id, band, retention) for every arm, naive's from its baseline."""
    columns = ["config_id", "arm", "item_id", "band", "retention"]
    base = pairs.select(
        "config_id",
        pl.lit(BASELINE).alias("arm"),
        "item_id",
        "band",
        pl.col("baseline_retention").alias("retention"),
    ).unique()
    return pl.concat([pairs.select(columns), base]).drop_nulls("retention")


def points(
    retentions: pl.DataFrame, by_band: pl.DataFrame, boot: BootstrapConfig
) -> list[ArmPoint]:
    """The arms of one (configuration, band): `retentions` and `by_band` already filtered."""
    found = []
    for (arm,), group in sorted(retentions.group_by(["arm"]), key=lambda g: str(g[0][0])):
        values = group["retention"].to_list()
        interval = bootstrap_mean_interval(values, seed=boot.seed, resamples=boot.resamples)
        if interval is None:
            continue
        row = by_band.filter(pl.col("arm") == arm)
        compression = row["median_compression_chars"][0] if row.height else None
        data = np.asarray(values, dtype=np.float64)
        sd = float(data.std(ddof=1)) if data.size > 1 else 0.0
        found.append(
            ArmPoint(
                str(arm),
                float(data.mean()),
                interval.lo,
                interval.hi,
                sd,
                len(values),
                compression,
            )
        )
    return found


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}×"


def _row(config_id: str, arm: str, band: str) -> Where:
    return (("config_id", config_id), ("arm", arm), ("band", band))


def _kept(p: ArmPoint) -> str:
    return f"{p.mean:.1%} (95% CI [{p.lo:.1%}, {p.hi:.1%}], n = {p.n})"


def kept_evidence(config_id: str, p: ArmPoint, band: str) -> Evidence:
    """The facts an arm keeps, from compression_pairs: its per-trace `retention` (the `all`
    band pools every band's rows). Naive's retention is the pairs' `baseline_retention`,
    repeated once per arm it is paired with, so it is shown and not recomputed."""
    label, text = f"facts kept by `{p.arm}`", _kept(p)
    if p.arm == BASELINE:
        return Evidence(label, text, PAIRS, (("config_id", config_id), ("band", band)))
    where: Where = (("config_id", config_id), ("arm", p.arm))
    where += () if band == ALL_BANDS else (("band", band),)
    shown = (f"{p.mean:.1%}", f"{p.lo:.1%}", f"{p.hi:.1%}")
    numbers = tuple(
        Number(value, "retention", rule, scale=100.0)
        for value, rule in zip(shown, ("mean", "boot_lo", "boot_hi"), strict=True)
    )
    return Evidence(label, text, PAIRS, where, (*numbers, Number(f"{p.n}", "retention", "count")))


def _contrast(paired: pl.DataFrame, config_id: str, p: ArmPoint, band: str) -> list[Evidence]:
    row = paired.filter(
        (pl.col("config_id") == config_id) & (pl.col("arm") == p.arm) & (pl.col("band") == band)
    )
    if p.arm == BASELINE or row.height == 0:
        return []
    r = row.row(0, named=True)
    if r["retention_ci_lo"] is None or r["log_ratio_ci_lo"] is None:
        return []
    shown = [f"{r[c]:+.1%}" for c in ("retention_diff_mean", "retention_ci_lo", "retention_ci_hi")]
    ratios = [_ratio(r["ratio_of_ratios"])] + [
        _ratio(math.exp(r[c])) for c in ("log_ratio_ci_lo", "log_ratio_ci_hi")
    ]
    return [
        Evidence(
            f"`{p.arm}` against `{BASELINE}` on the same traces",
            f"retention {shown[0]} (95% CI [{shown[1]}, {shown[2]}]); compression {ratios[0]} "
            f"naive's (geometric mean, 95% CI [{ratios[1]}, {ratios[2]}])",
            PAIRED,
            _row(config_id, p.arm, band),
            (
                Number(shown[0], "retention_diff_mean", scale=100.0),
                Number(shown[1], "retention_ci_lo", scale=100.0),
                Number(shown[2], "retention_ci_hi", scale=100.0),
                Number(ratios[0], "ratio_of_ratios"),
                Number(ratios[1], "log_ratio_ci_lo", "exp"),
                Number(ratios[2], "log_ratio_ci_hi", "exp"),
            ),
        )
    ]


def _dominates(best: ArmPoint, others: list[ArmPoint]) -> bool:
    return all(
        best.mean >= o.mean and (best.compression or 0.0) >= (o.compression or 0.0)
        for o in others
        if o is not best
    )


def _undecided(
    subject: str, where: tuple[str, str], found: list[ArmPoint], goal: float, note: str
) -> Answer:
    top = max(found, key=lambda p: (p.mean, p.arm))
    reason = f"no arm's 95% retention interval reaches {goal:.0%} here{note}"
    if top.mean > goal and top.sd > 0:
        needed = math.ceil((Z * top.sd / (top.mean - goal)) ** 2)
        would = (
            f"about {needed} traces in this band at this spread would show `{top.arm}`'s "
            f"{top.mean:.1%} above {goal:.0%} (n = (1.96 · sd / (mean − goal))², sd "
            f"{top.sd:.3f}; now {top.n})"
        )
    else:
        would = (
            f"no arm keeps {goal:.0%} of the facts on average (best `{top.arm}` "
            f"{top.mean:.1%}): a lower --retention, or an arm that keeps every fact by "
            "construction (extractive, hybrid)"
        )
    evidence = kept_evidence(where[0], top, where[1])
    return Answer(
        QUESTION,
        subject,
        None,
        reason,
        evidence=(evidence,),
        would_decide=would,
        effect=_effect(top, goal),
    )


def _effect(p: ArmPoint, goal: float) -> Effect:
    """An arm's share of facts kept with its bootstrap interval, against the goal."""
    return Effect(f"`{p.arm}` keeps", p.mean, p.lo, p.hi, "share of facts kept", goal)


def frontier_answer(
    config_id: str,
    band: str,
    found: list[ArmPoint],
    *,
    paired: pl.DataFrame,
    goal: float,
    band_row: dict[str, Any] | None,
) -> Answer:
    """The recommendation for one (configuration, band) (module docstring)."""
    subject = f"{config_id}, {'all bands' if band == ALL_BANDS else f'band {band}'}"
    note = ""
    if band_row and band_row["synthetic"]:
        note = f" ({band_row['synthetic']} of {band_row['n']} traces synthetic)"
    if not found:
        return Answer(QUESTION, subject, None, "no trace with facts was summarised here")
    most = max(p.n for p in found)
    if small_spread(most):
        return Answer(
            QUESTION,
            subject,
            None,
            f"small sample: {most} traces with facts here (fewer than {MIN_SPREAD_N}, "
            f"jobs/small_sample.py), too few for an interval{note}",
            would_decide=f"at least {MIN_SPREAD_N} traces in this band "
            "(study.compression.real_per_band, synthetic_per_band)",
        )
    qualified = [p for p in found if p.qualifies(goal)]
    if not qualified:
        return _undecided(subject, (config_id, band), found, goal, note)
    best = max(qualified, key=lambda p: (p.compression or 0.0, p.mean, p.arm))
    dominant = _dominates(best, found)
    evidence = [
        kept_evidence(config_id, best, band),
        Evidence(
            f"median compression of `{best.arm}`",
            _ratio(best.compression),
            BY_BAND,
            _row(config_id, best.arm, band),
            ()
            if best.compression is None
            else (Number(_ratio(best.compression), "median_compression_chars"),),
        ),
        *_contrast(paired, config_id, best, band),
    ]
    shorter = sorted(
        (p for p in found if (p.compression or 0.0) > (best.compression or 0.0)),
        key=lambda p: -(p.compression or 0.0),
    )
    would_change = tuple(
        f"`{p.arm}` compresses {_ratio(p.compression)} but keeps {_kept(p)}: it qualifies at "
        f"--retention {math.floor(p.lo * 1000) / 1000:g} or below"
        for p in shorter
    )
    how = "it dominates every other arm" if dominant else "the most compressive arm that does"
    return Answer(
        QUESTION,
        subject,
        f"summarise with `{best.arm}`: it keeps {best.mean:.1%} of the facts at "
        f"{_ratio(best.compression)} compression",
        f"its 95% retention interval reaches {goal:.0%}; {how}{note}",
        evidence=tuple(evidence),
        would_change=would_change,
        effect=_effect(best, goal),
    )
