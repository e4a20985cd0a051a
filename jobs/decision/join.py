"""The rules every study's decision shares, applied once: the joined page as values.

Decisions (docs/engine.md "Decide"):
- Answers are joined by subject: the subject's name before any " (" or ", " (a cache model's
  "anthropic (anthropic:c)" and a family's "anthropic" are one subject), case-insensitive.
  `EVERY` ("panel") is an answer about all of a run's models: it gets its own paragraph and
  is never "missing" from another study.
- A simulated (or replayed) run never recommends: its paragraphs are kept apart
  (`Page.simulated`) and say "would recommend".
- Runs of one study whose inputs differ are never pooled: each answer names its run, and the
  page says which runs rest on other inputs (`Page.side_by_side`).
- What is missing: a study with a decision that no run here is of, a subject one study answers
  and another present study does not, and each run's own notes (small samples). What would
  change this: each answer's `would_change`, and `would_decide` of those that cannot decide.
Pure: values in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.decision import Answer, Evidence, StudyDecision

EVERY = "panel"
SIMULATED_BANNER = "SIMULATED: what this page would say if these rows were real"
_SUBJECT_END = re.compile(r" \(|, ")


@dataclass(frozen=True)
class Said:
    """One study's answer in a paragraph: who says it, what (`head`: the recommendation or
    "no decision: why"), and the numbers it rests on, each naming its table (`evidence`)."""

    study: str
    run_name: str
    subject: str
    head: str
    evidence: str


@dataclass(frozen=True)
class Paragraph:
    """One subject's joined answers: `text` (markdown), the recommendations it carries (for a
    simulated paragraph, what it would recommend) and its answers one by one (`said`)."""

    subject: str
    text: str
    recommendations: tuple[str, ...]
    simulated: bool
    said: tuple[Said, ...] = ()


@dataclass(frozen=True)
class Page:
    paragraphs: tuple[Paragraph, ...]  # real runs: what to do
    simulated: tuple[Paragraph, ...]  # simulated or replayed runs: what it would say
    side_by_side: tuple[str, ...]
    missing: tuple[str, ...]
    would_change: tuple[str, ...]


def subject_key(subject: str) -> str:
    return _SUBJECT_END.split(subject, maxsplit=1)[0].strip().lower()


def cite(evidence: Evidence) -> str:
    """One number with the table (and row) it comes from."""
    row = f", {evidence.row}" if evidence.row else ""
    return f"{evidence.label} {evidence.value} [{evidence.source}{row}]"


def _said(decision: StudyDecision, answer: Answer) -> Said:
    said = answer.recommendation
    if said is None:
        head = f"no decision: {answer.reason}"
    else:
        head = f"would recommend: {said}" if decision.simulated else f"{said} ({answer.reason})"
    numbers = "; ".join(cite(e) for e in answer.evidence)
    return Said(decision.study, decision.run_name, answer.subject, head, numbers)


def _sentence(said: Said) -> str:
    return f"**{said.study}** ({said.run_name}, {said.subject}): {said.head}" + (
        f". Evidence: {said.evidence}." if said.evidence else "."
    )


def _paragraphs(decisions: Sequence[StudyDecision], simulated: bool) -> tuple[Paragraph, ...]:
    joined: dict[str, list[tuple[StudyDecision, Answer]]] = {}
    for decision in decisions:
        if decision.simulated != simulated:
            continue
        for answer in decision.answers:
            joined.setdefault(subject_key(answer.subject), []).append((decision, answer))
    paragraphs = []
    for key in sorted(joined, key=lambda k: (k != EVERY, k)):
        said = tuple(_said(d, a) for d, a in joined[key])
        paragraphs.append(
            Paragraph(
                subject=key,
                text=" ".join(_sentence(s) for s in said),
                recommendations=tuple(
                    f"{d.study} ({d.run_name}): {a.recommendation}"
                    for d, a in joined[key]
                    if a.recommendation is not None
                ),
                simulated=simulated,
                said=said,
            )
        )
    return tuple(paragraphs)


def _side_by_side(decisions: Sequence[StudyDecision]) -> tuple[str, ...]:
    notes = []
    for study in sorted({d.study for d in decisions}):
        runs = [d for d in decisions if d.study == study]
        if len({d.inputs for d in runs}) > 1:
            listed = ", ".join(
                f"{d.run_name} (inputs {(d.inputs or 'unknown')[:12]})" for d in runs
            )
            notes.append(
                f"{study}: runs {listed} rest on different inputs; their answers are listed "
                "side by side, never pooled"
            )
    return tuple(notes)


def _missing(decisions: Sequence[StudyDecision], expected: Sequence[str]) -> tuple[str, ...]:
    present = sorted({d.study for d in decisions})
    notes = [
        f"{study}: no run of this study is on this page; its question is unanswered"
        for study in expected
        if study not in present
    ]
    answered: dict[str, set[str]] = {}
    for decision in decisions:
        for answer in decision.answers:
            answered.setdefault(subject_key(answer.subject), set()).add(decision.study)
    for key, studies in sorted(answered.items()):
        absent = [s for s in present if s not in studies]
        if key != EVERY and absent and len(present) > 1:
            notes.append(
                f"{key}: answered by {', '.join(sorted(studies))}, not by {', '.join(absent)}"
            )
    notes += [f"{d.study} ({d.run_name}): {note}" for d in decisions for note in d.missing]
    return tuple(notes)


def _would_change(decisions: Sequence[StudyDecision]) -> tuple[str, ...]:
    lines = []
    for decision in decisions:
        tag = "SIMULATED " if decision.simulated else ""
        for answer in decision.answers:
            where = f"{tag}{decision.study} ({decision.run_name}, {answer.subject})"
            if answer.recommendation is None and answer.would_decide:
                lines.append(f"{where}: would decide: {answer.would_decide}")
            lines += [f"{where}: {change}" for change in answer.would_change]
    return tuple(lines)


def join(decisions: Sequence[StudyDecision], expected: Sequence[str]) -> Page:
    """The page's values; `expected` names every study that has a decision."""
    return Page(
        paragraphs=_paragraphs(decisions, simulated=False),
        simulated=_paragraphs(decisions, simulated=True),
        side_by_side=_side_by_side(decisions),
        missing=_missing(decisions, expected),
        would_change=_would_change(decisions),
    )
