"""decision.md from the joined page: what to do first, then what is missing, what would change
it, the simulated runs under their banner, and each run's detail. Pure: text out.

Every number is followed by the table it comes from, relative to its run directory, and the
row (`[analysis/savings.parquet, config_id=c, policy=p]`), so a reader can check it.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobs.decision.figure import FIGURE, SIMULATED_FIGURE
from jobs.decision.join import SIMULATED_BANNER, Page, Paragraph
from pipeline.decision import Answer, DecisionOptions, StudyDecision

TITLE = "# Decision: how to compact this agent's context"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _runs(decisions: Sequence[StudyDecision]) -> list[str]:
    lines = ["| study | run | inputs | simulated | directory |", "|---|---|---|---|---|"]
    lines += [
        f"| {d.study} | {d.run_name} | {(d.inputs or 'unknown')[:12]} | "
        f"{'yes' if d.simulated else 'no'} | {_cell(d.run_dir)} |"
        for d in decisions
    ]
    return lines


def _asked(options: DecisionOptions) -> str:
    provider = options.provider or "each one in the runs"
    template = str(options.template) if options.template else "each one in the runs"
    return (
        f"Asked for: provider {provider}; template {template}; retention goal "
        f"{options.retention:g} of facts kept."
    )


def _paragraphs(paragraphs: Sequence[Paragraph]) -> list[str]:
    lines: list[str] = []
    for paragraph in paragraphs:
        lines += [f"### {paragraph.subject}", "", paragraph.text, ""]
    return lines


def _bullets(items: Sequence[str], empty: str) -> list[str]:
    return [f"- {item}" for item in items] or [empty]


def _answer(answer: Answer, simulated: bool) -> list[str]:
    said = answer.recommendation
    if said is None:
        head = f"**No decision**: {answer.reason}."
    else:
        verb = "Would recommend (simulated)" if simulated else "Recommendation"
        head = f"**{verb}**: {said}. Because {answer.reason}."
    lines = [f"#### {answer.question} ({answer.subject})", "", head, ""]
    if answer.evidence:
        lines += ["| evidence | value | table | row |", "|---|---|---|---|"]
        lines += [
            f"| {_cell(e.label)} | {_cell(e.value)} | {_cell(e.source)} | {_cell(e.row)} |"
            for e in answer.evidence
        ]
        lines.append("")
    if said is None and answer.would_decide:
        lines += [f"What would decide: {answer.would_decide}.", ""]
    lines += [f"- would change it: {change}" for change in answer.would_change]
    return [*lines, ""] if answer.would_change else lines


def _detail(decision: StudyDecision) -> list[str]:
    mark = " — SIMULATED" if decision.simulated else ""
    lines = [
        f"### {decision.study}: {decision.run_name}{mark}",
        "",
        f"Run directory `{decision.run_dir}`; inputs {decision.inputs or 'unknown'}.",
        "",
    ]
    for answer in decision.answers:
        lines += _answer(answer, decision.simulated)
    return lines


def render(
    page: Page,
    decisions: Sequence[StudyDecision],
    options: DecisionOptions,
    figures: Sequence[str] = (),
) -> str:
    """The whole decision.md; `figures` the file names of its figures (the real runs' after
    the lead, the simulated runs' under their banner)."""
    lines = [TITLE, "", _asked(options), "", *_runs(decisions), ""]
    lines += [f"**Not pooled.** {note}." for note in page.side_by_side]
    lines += [""] if page.side_by_side else []
    lines += ["## What to do", ""]
    lines += _paragraphs(page.paragraphs) or [
        "No real run is on this page, so nothing is recommended"
        + (" (the simulated runs are below, under their banner)." if page.simulated else "."),
        "",
    ]
    lines += [f"![Each answer's estimate with its 95% interval]({FIGURE})", ""] * (
        FIGURE in figures
    )
    lines += ["## What is missing", "", *_bullets(page.missing, "Nothing."), ""]
    lines += ["## What would change this", "", *_bullets(page.would_change, "Nothing."), ""]
    if page.simulated:
        lines += [f"## {SIMULATED_BANNER}", "", *_paragraphs(page.simulated)]
        lines += [f"![Simulated answers' estimates]({SIMULATED_FIGURE})", ""] * (
            SIMULATED_FIGURE in figures
        )
    lines += ["## Detail by run", ""]
    for decision in decisions:
        lines += _detail(decision)
    return "\n".join(lines).rstrip() + "\n"
