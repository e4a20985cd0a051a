"""What a study's run says a user should do: the values `decide` joins across studies.

Each seed ends with a decision, not a table. A study that can answer its question gives its
definition an optional `decide(run_dir, layout, options) -> StudyDecision` (read with
`getattr`, like `pages`), built from its analysis outputs alone. The joiner (`python -m
pipeline decide`) knows no study: it gathers these values, applies the rules every study shares
(a simulated or replayed run never recommends; runs of one study whose inputs differ are shown
side by side, never pooled) and writes the page. Pure: values only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class DecisionOptions:
    """What the user asks about: a provider's cache model, a chat template, a retention goal."""

    provider: str | None = None  # a cache model / provider name; None: each one in the run
    template: Path | None = None  # a chat template file; None: each one in the run
    retention: float = 0.9  # the share of facts a reasoning summary must keep


Where = tuple[tuple[str, str], ...]
"""Rows of a table: (column, value) pairs that must all hold; `a|b` in a value means either."""

RULES = (
    "value",  # the one row's cell
    "exp",  # e to the one row's cell (a ratio kept as its logarithm)
    "mean",
    "count",  # rows with a value in the column
    "sum",
    "min",
    "max",
    "median",  # nearest rank, as the scans report it
    "p99",  # nearest rank
    "positive",  # rows whose value is above 0
    "positive_pct",  # the same, as a percentage of the rows
    "negative",  # rows whose value is below 0 (a contrast read the other way round)
    "negative_pct",
    "sd",  # sample standard deviation
    "t_lo",  # the 95% t interval over the rows (jobs/stats.py)
    "t_hi",
    "loo_lo",  # the leave-one-out range of the mean
    "loo_hi",
    "mde",  # 2.80 · sd / √n
    "boot_lo",  # the 95% percentile bootstrap interval of the mean, at the run's seed
    "boot_hi",
)


@dataclass(frozen=True)
class Number:
    """One number as an Evidence value shows it, and how it follows from the cited table.

    The rows are the Evidence's `where` with this number's own pairs put over it; `rule`
    (RULES) reduces `column` over them. `versus` (more pairs over the Evidence's `where`)
    makes the values per-`config_id` differences: this row's value minus the versus row's.
    `group_sum` first sums the column within each value of that column (reasoning per
    session). `over` divides by the same rule over another column. `scale` multiplies the
    result before it is shown (a share as a percentage).
    Anyone can recompute the number from the table (jobs/decision/recompute.py), and the
    page's test does."""

    shown: str
    column: str
    rule: str = "value"
    where: Where = ()
    versus: Where = ()
    group_sum: str | None = None
    scale: float = 1.0
    over: str | None = None  # divide by the same rule over this column (a ratio of cells)


@dataclass(frozen=True)
class Evidence:
    """One fact a decision rests on, and where it comes from.

    `source` names the table, relative to the run directory (`analysis/savings.parquet`), and
    `where` its rows (`config_id=A, policy=p`), so the page can link or name it; `numbers`
    say how each number in `value` follows from those rows."""

    label: str
    value: str
    source: str
    where: Where = ()
    numbers: tuple[Number, ...] = ()

    def __post_init__(self) -> None:
        for number in self.numbers:
            if number.shown not in self.value:
                raise ValueError(f"{self.label}: {number.shown!r} is not in {self.value!r}")
            if number.rule not in RULES:
                raise ValueError(f"{self.label}: unknown rule {number.rule!r}")

    @property
    def row(self) -> str:
        """The rows, as the page names them (`config_id=A, policy=p`)."""
        return ", ".join(f"{column}={value}" for column, value in self.where)


@dataclass(frozen=True)
class Effect:
    """An answer's headline estimate with its 95% interval, drawn in the decision's figure
    against `reference` (0 for a difference; the retention goal for facts kept)."""

    label: str  # what is estimated: "q − j", "`deterministic` saving", "`extractive` keeps"
    estimate: float
    lo: float
    hi: float
    unit: str  # "recall", "USD per session", "share of facts kept"
    reference: float = 0.0


@dataclass(frozen=True)
class Answer:
    """One question answered (or not) for one subject: the panel, a model family, a provider's
    cache model, a chat template.

    `recommendation` is None when the run cannot decide; `reason` then says why and
    `would_decide` what would (e.g. "24 configurations at this spread")."""

    question: str
    subject: str
    recommendation: str | None
    reason: str
    evidence: tuple[Evidence, ...] = ()
    would_decide: str | None = None
    would_change: tuple[str, ...] = ()  # what would flip the recommendation, as numbers
    effect: Effect | None = None  # the headline estimate, for the figure


@dataclass(frozen=True)
class StudyDecision:
    """A run's answers. `inputs` identifies what the answers rest on (the run's input digest:
    fixture, corpus, templates), so two runs of one study with other inputs are never pooled.
    `simulated` (simulated or replayed rows) turns every recommendation into "what this page
    would say if these rows were real"."""

    study: str
    run_dir: str
    run_name: str
    inputs: str | None
    simulated: bool
    answers: tuple[Answer, ...]
    missing: tuple[str, ...] = field(default_factory=tuple)
