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


@dataclass(frozen=True)
class Evidence:
    """One number a decision rests on, and where it comes from.

    `source` names the table, relative to the run directory (`analysis/savings.parquet`), and
    `row` the row of it (`config=A, arm=q`), so the page can link or name it."""

    label: str
    value: str
    source: str
    row: str = ""


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
