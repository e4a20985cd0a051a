"""What a carrier run says a compaction summariser should write (issue 34; docs/carrier.md
"Decide").

From the analysis outputs alone (recall_by_config_arm.parquet, the paired_<b>_vs_<a>.parquet
of a configured contrast, carrier_retention.parquet, summary.json), for the panel and, when
the panel has more than one, each model family (jobs/carrier/contest.py):
- the arm with the best mean recall (each configuration weighted equally) and the runner-up;
- the leader's paired effect against it per configuration: the contrast's `paired_mean`
  (complete pairs) when `analyze` computed that contrast, else the difference of the two
  arms' cell means; its 95% t interval over configurations (the report's) and its
  leave-one-configuration-out range;
- the share of configurations it wins, and the MDE at this panel's size, 2.80 · sd / √n.

"No decision" when the best mean recall is below FLOOR (the tiny local models: the arms are
compared at the floor), when fewer than MIN_CELL_N configurations ran both arms, or when the
interval includes 0; the answer then names what would decide (the configurations that would
detect the observed effect at this spread, n = ⌈(2.80 · sd / effect)²⌉) and, where
carrier_retention.parquet holds audited rows (the retention was measured, not assumed), adds
the same contest on carrier retention as a fallback answer that says it is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from jobs import io
from jobs.carrier.contest import MDE_Z, Contest, contest
from jobs.carrier.report_sections import signed
from jobs.carrier.run_all import SUMMARY_FILE
from jobs.decided_run import study_decision
from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N
from pipeline.decision import (
    Answer,
    DecisionOptions,
    Effect,
    Evidence,
    Number,
    StudyDecision,
    Where,
)
from pipeline.store import Layout

QUESTION = "carrier: which representation should the compaction summariser write?"
FALLBACK_QUESTION = (
    "carrier (fallback, recall undecided): which representation keeps the most planted values "
    "in the final carrier?"
)
FLOOR = 0.05
"""A best mean recall below this is the floor: the models recall almost nothing, so a
contrast between arms compares floors (the report's near-zero warning, at a stricter bound)."""
PANEL = "panel"
RECALL = "analysis/recall_by_config_arm.parquet"
RETENTION = "analysis/carrier_retention.parquet"
NO_DECISION = "no decision"


class Subject:
    """The configurations one answer is about: the panel, or one model family."""

    def __init__(self, name: str, configs: Sequence[str], family: str | None) -> None:
        self.name = name
        self.configs = tuple(sorted(configs))
        self.family = family

    def where(self, arm: str | None = None, source: str = RECALL) -> Where:
        """Its rows of a per-(configuration, arm) table: the family's (by its configurations
        where the table has no `family` column: carrier retention), or every one."""
        found: Where = (("family", self.family),) if self.family and source == RECALL else ()
        found += () if source == RECALL else self.configs_where()
        return found + ((("arm", arm),) if arm else ())

    def configs_where(self) -> Where:
        """Its rows of a per-configuration table (a contrast's): its configurations."""
        return (("config_id", "|".join(self.configs)),) if self.family else ()


def subjects(recall: pl.DataFrame) -> list[Subject]:
    """The panel, then each family when there is more than one (one family is the panel)."""
    labels = recall.select("config_id", "family").unique()
    families = sorted({str(f) for f in labels["family"].drop_nulls().to_list()})
    found = [Subject(PANEL, [str(c) for c in labels["config_id"].to_list()], None)]
    if len(families) > 1:
        for family in families:
            configs = labels.filter(pl.col("family") == family)["config_id"].to_list()
            found.append(Subject(family, [str(c) for c in configs], family))
    return found


_MIRRORED = {
    "t_lo": "t_hi",
    "t_hi": "t_lo",
    "loo_lo": "loo_hi",
    "loo_hi": "loo_lo",
    "positive": "negative",
    "positive_pct": "negative_pct",
}
_SIGNED = ("mean", "t_lo", "t_hi", "loo_lo", "loo_hi")


@dataclass(frozen=True)
class Effects:
    """Where the leader's per-configuration effects are read: a contrast's table (its
    `paired_mean`, negated when the contrast runs the other way), else the differences of
    the two arms' cells in the recall or retention table."""

    source: str
    column: str
    sign: float = 1.0
    arms: tuple[str, str] | None = None  # (leader, runner-up) of a cell-means table

    def number(self, shown: str, rule: str, s: Subject) -> Number:
        """One statistic of the effects, as the table gives it back (a negated contrast
        mirrors the rule: its interval's ends swap, its wins are the table's losses)."""
        if self.arms is not None:
            leader, other = self.arms
            at = (s.where(leader, self.source), s.where(other, self.source))
            return Number(shown, self.column, rule, *at)
        if self.sign < 0:
            scale = -1.0 if rule in _SIGNED else 1.0
            return Number(shown, self.column, _MIRRORED.get(rule, rule), scale=scale)
        return Number(shown, self.column, rule)


def _paired(out: Path, best: str, other: str, subject: Subject) -> tuple[dict[str, float], Effects]:
    """The contrast's per-configuration paired effects (best − other) and where they are
    read; empty when `analyze` did not compute that contrast in either direction."""
    for name, sign in ((f"{best}_vs_{other}", 1.0), (f"{other}_vs_{best}", -1.0)):
        table = io.read_parquet(out / f"paired_{name}.parquet")
        if table is not None:
            rows = table.filter(pl.col("config_id").is_in(subject.configs) & (pl.col("pairs") >= 1))
            effects = {
                str(c): sign * float(e)
                for c, e in rows.select("config_id", "paired_mean").iter_rows()
            }
            return effects, Effects(f"analysis/paired_{name}.parquet", "paired_mean", sign)
    return {}, Effects(RECALL, "mean_recall", arms=(best, other))


def _means(found: Contest, measure: str, source: str, column: str, s: Subject) -> list[Evidence]:
    return [
        Evidence(
            f"mean {measure} of `{arm}` ({'leader' if arm == found.best else 'runner-up'})",
            f"{found.means[arm]:.3f} over {_configurations(found.configs[arm])}",
            source,
            s.where(arm, source),
            (
                Number(f"{found.means[arm]:.3f}", column, "mean"),
                Number(f"{found.configs[arm]}", column, "count"),
            ),
        )
        for arm in (found.best, found.runner_up)
        if arm is not None
    ]


def _evidence(found: Contest, measure: str, source: str, e: Effects, s: Subject) -> list[Evidence]:
    """The numbers one answer rests on, each naming its table and rows."""
    column = "mean_retention" if source == RETENTION else "mean_recall"
    evidence = _means(found, measure, source, column, s)
    if found.runner_up is None or not found.n or found.effect is None:
        return evidence
    pair = f"{found.best} − {found.runner_up}"
    where = s.configs_where() if e.arms is None else s.where(source=e.source)
    effect = signed(found.effect)
    n = f"n = {_configurations(found.n)}"
    interval, loo, mde = found.interval, found.loo, found.mde
    numbers = [e.number(effect, "mean", s)]
    ci = "—"
    if interval is not None:
        lo, hi = signed(interval.lo), signed(interval.hi)
        ci = f"[{lo}, {hi}]"
        numbers += [e.number(lo, "t_lo", s), e.number(hi, "t_hi", s)]
    evidence.append(
        Evidence(
            f"paired effect {pair} (mean over configurations)",
            f"{effect}, 95% t interval {ci}, {n}",
            e.source,
            where,
            (*numbers, e.number(f"{found.n}", "count", s)),
        )
    )
    loo_numbers: tuple[Number, ...] = ()
    loo_text = "—"
    if loo is not None:
        lo, hi = signed(loo.lo), signed(loo.hi)
        loo_text = f"[{lo}, {hi}]"
        loo_numbers = (e.number(lo, "loo_lo", s), e.number(hi, "loo_hi", s))
    evidence.append(
        Evidence(
            "leave-one-configuration-out range of that effect",
            loo_text,
            e.source,
            where,
            loo_numbers,
        )
    )
    wins, share = f"{found.wins}", f"{100 * found.wins / found.n:.0f}%"
    evidence.append(
        Evidence(
            f"configurations where `{found.best}` wins",
            f"{wins} of {found.n} ({share})",
            e.source,
            where,
            (
                e.number(wins, "positive", s),
                e.number(f"{found.n}", "count", s),
                e.number(share, "positive_pct", s),
            ),
        )
    )
    mde_numbers: tuple[Number, ...] = ()
    mde_text = "—"
    if mde is not None and found.sd is not None:
        shown_mde, sd = f"{mde:.3f}", f"{found.sd:.3f}"
        mde_text = f"{shown_mde} (sd {sd})"
        mde_numbers = (e.number(shown_mde, "mde", s), e.number(sd, "sd", s))
    evidence.append(
        Evidence(
            f"minimum detectable effect at n = {found.n} ({MDE_Z:.2f} · sd / √n)",
            mde_text,
            e.source,
            where,
            mde_numbers,
        )
    )
    return evidence


def _configurations(n: int) -> str:
    return f"{n} configuration" + ("" if n == 1 else "s")


def _why_not(found: Contest, measure: str) -> tuple[str | None, str | None]:
    """(why no decision, what would decide), or (None, None) when the contest decides."""
    best = found.means[found.best]
    if best < FLOOR:
        return (
            f"{measure} is at the floor (best arm mean {best:.3f} < {FLOOR}): the arms are "
            "compared where the models recall almost nothing",
            f"models that recall more than {FLOOR} of the planted values (a larger model or a "
            "shorter session)",
        )
    if found.runner_up is None:
        return f"only arm `{found.best}` has a {measure}: nothing to compare", "a second arm"
    interval = found.interval
    needed = None if found.effect is None else found.configs_to_detect(found.effect)
    if needed is not None:
        at_spread = (
            f"{needed} configurations at this spread of the {measure} effect (n = "
            f"⌈({MDE_Z:.2f} · sd / effect)²⌉, sd {found.sd:.3f}, effect {signed(found.effect)})"
        )
    elif found.n < MIN_CELL_N:  # too few configurations for a spread to mean anything
        at_spread = f"at least {MIN_CELL_N} configurations that run both arms ({measure})"
    else:  # no spread or no effect: more configurations like these cannot separate the arms
        at_spread = (
            f"arms that differ: `{found.best}` and `{found.runner_up}` give the same "
            f"{measure} on average, so no number of configurations like these would separate them"
        )
    if found.n < MIN_CELL_N:
        return (
            f"only {_configurations(found.n)} ran both `{found.best}` and `{found.runner_up}` "
            f"(a decision needs {MIN_CELL_N})",
            at_spread,
        )
    if interval is None or interval.lo <= 0.0 <= interval.hi:
        return f"no difference detected: the interval includes 0 (n = {found.n})", at_spread
    return None, None


def answer(
    question: str, measure: str, found: Contest, sources: tuple[str, Effects], s: Subject
) -> Answer:
    """One subject's answer on one measure (module docstring)."""
    evidence = tuple(_evidence(found, measure, *sources, s))
    why, would = _why_not(found, measure)
    effect = _effect(found, measure)
    if why is not None:
        return Answer(question, s.name, None, why, evidence, would, effect=effect)
    interval = found.interval
    assert interval is not None and found.runner_up is not None and found.effect is not None
    return Answer(
        question,
        s.name,
        f"write the `{found.best}` carrier: its {measure} leads `{found.runner_up}` by "
        f"{signed(found.effect)}",
        f"the 95% t interval over {found.n} configurations, [{signed(interval.lo)}, "
        f"{signed(interval.hi)}], excludes 0; `{found.best}` wins {found.wins} of {found.n}",
        evidence,
        would_change=(
            f"a lead {interval.lo:.3f} smaller (the interval's lower end) puts 0 inside the "
            "interval: no decision",
            f"another arm whose mean {measure} exceeds {found.means[found.best]:.3f}",
        ),
        effect=effect,
    )


def _effect(found: Contest, measure: str) -> Effect | None:
    """The leader's paired effect against the runner-up with its t interval, when it has one."""
    interval = found.interval
    if found.runner_up is None or found.effect is None or interval is None:
        return None
    label = f"`{found.best}` − `{found.runner_up}`"
    return Effect(label, found.effect, interval.lo, interval.hi, measure)


def _cells(table: pl.DataFrame, value: str, s: Subject) -> pl.DataFrame:
    return table.filter(pl.col("config_id").is_in(s.configs)).select("config_id", "arm", value)


def recall_answer(out: Path, recall: pl.DataFrame, s: Subject) -> Answer:
    cells = _cells(recall.filter(pl.col("valid_rows") > 0), "mean_recall", s)
    if cells.is_empty():
        return Answer(QUESTION, s.name, None, "no valid final row: no recall to compare")
    ranked = contest(cells, "mean_recall")
    if ranked.runner_up is None:
        return answer(QUESTION, "recall", ranked, (RECALL, Effects(RECALL, "mean_recall")), s)
    effects, where = _paired(out, ranked.best, ranked.runner_up, s)
    if where.arms is None:
        ranked = contest(cells, "mean_recall", effects)
    return answer(QUESTION, "recall", ranked, (RECALL, where), s)


def retention_answer(retention: pl.DataFrame | None, s: Subject) -> Answer | None:
    """The fallback on carrier retention, where it was measured (audited rows) for 2 arms."""
    if retention is None:
        return None
    cells = _cells(retention.filter(pl.col("audited_rows") > 0), "mean_retention", s)
    if cells["arm"].n_unique() < 2:
        return None
    found = contest(cells, "mean_retention")
    arms = None if found.runner_up is None else (found.best, found.runner_up)
    effects = Effects(RETENTION, "mean_retention", arms=arms)
    return answer(FALLBACK_QUESTION, "carrier retention", found, (RETENTION, effects), s)


def _with_fallback(decided: Answer, fallback: Answer | None) -> Answer:
    note = (
        "falling back on the carrier retention contrast (the fallback answer), which measures the "
        "values held in the final carrier, not recall"
        if fallback is not None
        else "no carrier retention was measured here to fall back on"
    )
    return Answer(
        decided.question,
        decided.subject,
        None,
        f"{decided.reason}; {note}",
        decided.evidence,
        decided.would_decide,
        decided.would_change,
        decided.effect,
    )


def decide(run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
    """The carrier run's decision (module docstring); `options` ask nothing of the carrier."""
    out = io.require_outputs(run_dir, ["recall_by_config_arm"])
    recall = pl.read_parquet(out / "recall_by_config_arm.parquet")
    retention = io.read_parquet(out / "carrier_retention.parquet")
    summary = io.read_json(out / SUMMARY_FILE) or {}
    answers: list[Answer] = []
    for s in subjects(recall):
        decided = recall_answer(out, recall, s)
        if decided.recommendation is not None:
            answers.append(decided)
            continue
        fallback = retention_answer(retention, s)
        answers.append(_with_fallback(decided, fallback))
        answers += [fallback] if fallback is not None else []
    configs = recall["config_id"].n_unique()
    missing = (
        [f"{configs} configurations (fewer than {MIN_SPREAD_N}: a small sample)"]
        if configs < MIN_SPREAD_N
        else []
    )
    return study_decision(
        run_dir,
        "carrier",
        answers,
        rows_simulated=bool(summary.get("simulated")),
        missing=missing,
    )
