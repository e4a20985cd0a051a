"""Writes decision.md and decision.json into the output directory.

decision.json holds the same content as the page, machine-readable: the options asked, the
runs, the joined paragraphs (`recommendations`: real runs only), the notes, and every run's
decision (`dataclasses.asdict`). A simulated run's paragraphs go under `simulated_runs`, with
`"simulated": true`, and in its decision each answer's `recommendation` is renamed
`would_recommend`: nothing a simulated run says can be read as a recommendation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobs import io
from jobs.decision.figure import write_figures
from jobs.decision.join import SIMULATED_BANNER, Page, Paragraph, join
from jobs.decision.render import render
from pipeline.decision import DecisionOptions, StudyDecision

MARKDOWN = "decision.md"
JSON = "decision.json"


def _decision(decision: StudyDecision) -> dict[str, Any]:
    payload = dataclasses.asdict(decision)
    if decision.simulated:
        for answer in payload["answers"]:
            answer["would_recommend"] = answer.pop("recommendation")
            answer["simulated"] = True
    return payload


def _paragraph(paragraph: Paragraph) -> dict[str, Any]:
    said = "would_recommend" if paragraph.simulated else "recommendations"
    return {
        "subject": paragraph.subject,
        "text": paragraph.text,
        said: list(paragraph.recommendations),
        "simulated": paragraph.simulated,
    }


def payload(
    decisions: Sequence[StudyDecision], options: DecisionOptions, page: Page
) -> dict[str, Any]:
    """decision.json's content (module docstring)."""
    return {
        "options": {
            "provider": options.provider,
            "template": None if options.template is None else str(options.template),
            "retention": options.retention,
        },
        "runs": [
            {k: getattr(d, k) for k in ("study", "run_name", "run_dir", "inputs", "simulated")}
            for d in decisions
        ],
        "recommendations": [_paragraph(p) for p in page.paragraphs],
        "side_by_side": list(page.side_by_side),
        "missing": list(page.missing),
        "would_change": list(page.would_change),
        "simulated_runs": {
            "banner": SIMULATED_BANNER,
            "paragraphs": [_paragraph(p) for p in page.simulated],
        },
        "decisions": [_decision(d) for d in decisions],
    }


def write_decision(
    decisions: Sequence[StudyDecision],
    options: DecisionOptions,
    out: Path,
    expected: Sequence[str],
) -> tuple[Path, ...]:
    """decision.md, decision.json and the figures (jobs/decision/figure.py) in `out`
    (created); `expected` names every study that has a decision, so a study with no run here
    is named as missing."""
    page = join(decisions, expected)
    out.mkdir(parents=True, exist_ok=True)
    figures = write_figures(decisions, out)
    text = render(page, decisions, options, [f.name for f in figures])
    markdown = io.write_text(text, out / MARKDOWN)
    data = io.write_json(payload(decisions, options, page), out / JSON)
    return (markdown, data, *figures)
