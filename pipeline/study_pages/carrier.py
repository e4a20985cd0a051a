"""The carrier study's pages (seed 001): a unit's fold chain, final carrier, graded answer and
verdict, and the fixture's chunks once per run (`run_sections`, the export's `#chunks`).

From the run's tables: the unit's rows row, its `folds` (one per fold request, with the carried
text) and its `checks`; from the run's `fixture.json` (an input the sweep wrote): each chunk's
messages and the planted values. A fold's "before" is the previous fold's carried text (empty
for the first). Catch-up is a fold that folded several chunks in one request (`chunks` lists
more than one), or one whose carrier was unusable; clipping is the carry cap's `clipped`.
Planted values are marked wherever they appear: graded ones `graded`, the others `planted`.
A `fixture.json` the guard refuses (a symlink out of the run) leaves the chunks unshown and
nothing marked; the page says it was refused and shows everything the tables hold.
Every request of the unit, its messages as sent and its reply, comes from `carrier_exchanges`
(its own template, `unit_carrier_exchanges.html`). The fact lineage (each graded value through
the folds, `carrier_lineage`) is drawn by `unit_carrier_lineage.html`; a fold that first lost
values carries a `lost N` flag naming them. The run overview's "Facts most often lost" is
`carrier_lost` (`overview_sections`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from pipeline.carrier.lineage import Lineage, lost_at
from pipeline.study import RunSection, UnitPage
from pipeline.study_pages import BuiltInPages
from pipeline.study_pages.carrier_exchanges import tool_call_parts, unit_exchanges
from pipeline.study_pages.carrier_lineage import MARKERS, first_lost_text, lost_title, unit_lineage
from pipeline.study_pages.carrier_lost import facts_most_often_lost
from pipeline.view.highlight import mark
from pipeline.view.runs import Run


@dataclass(frozen=True)
class Fold:
    index: int
    chunks: str
    input_html: Markup
    before: Markup
    after: Markup
    marks: list[str]
    facts: dict[str, Any]
    lost: list[Lineage]  # the graded values this fold first lost


def _chunk_text(chunk: dict[str, Any]) -> str:
    lines = []
    for message in chunk.get("messages") or []:
        text = message.get("content") or ""
        for call in message.get("tool_calls") or []:
            name, arguments = tool_call_parts(call)
            text += f"\n[tool call {name}] {arguments}"
        lines.append(f"{message.get('role')}: {text}")
    return "\n".join(lines)


def planted_marks(fixture: dict[str, Any] | None) -> dict[str, str]:
    marks: dict[str, str] = {}
    for fact in (fixture or {}).get("planted") or []:
        value = str(fact.get("value") or "")
        if value:
            marks[value] = "graded" if fact.get("graded") else "planted"
    return marks


def fixture_chunks(run: Run) -> tuple[list[tuple[int, Markup]], str | None]:
    """Every chunk of the run's fixture, planted values marked (the export shows them once),
    and the guard's refusal of the fixture, if any."""
    fixture, refused = run.json_input("fixture.json")
    marks = planted_marks(fixture)
    chunks = sorted((int(c["index"]), c) for c in (fixture or {}).get("chunks") or [])
    return [(index, mark(_chunk_text(chunk), marks)) for index, chunk in chunks], refused


def carrier_unit(run: Run, row: Mapping[str, Any]) -> dict[str, Any]:
    row_id = row["row_id"]
    fixture, refused = run.json_input("fixture.json")
    marks = planted_marks(fixture)
    chunks = {int(c["index"]): c for c in (fixture or {}).get("chunks") or []}
    folds = run.rows_for("folds", row_id).sort("fold_index").to_dicts()
    checks = run.rows_for("checks", row_id).sort("label").to_dicts()
    lineages = unit_lineage(checks, folds, fixture)
    lost = lost_at(lineages)
    chain, before = [], ""
    for fold in folds:
        indices = [int(i) for i in str(fold.get("chunks") or "").split(",") if i.strip().isdigit()]
        text = "\n\n".join(_chunk_text(chunks[i]) for i in indices if i in chunks)
        flags = []
        if len(indices) > 1:
            flags.append("catch-up")
        if fold.get("clipped"):
            flags.append("clipped")
        if fold.get("parse_failed"):
            flags.append("parse failed")
        if fold.get("usable") is False:
            flags.append("unusable")
        if fold.get("finish_reason") == "length":
            flags.append("length stop")
        after = fold.get("carried_text") or ""
        facts = {
            k: fold.get(k)
            for k in (
                "finish_reason",
                "prompt_tokens",
                "completion_tokens",
                "reply_chars",
                "carried_chars",
                "headings_carried",
            )
        }
        chain.append(
            Fold(
                int(fold["fold_index"]),
                str(fold.get("chunks")),
                mark(text, marks) if text else Markup("<em>chunk not in fixture</em>"),
                mark(before, marks),
                mark(after, marks),
                flags,
                facts,
                lost.get(int(fold["fold_index"]), []),
            )
        )
        before = after
    exchanges = unit_exchanges(
        run.manifest, row, folds, fixture=fixture, refused=refused, marks=marks
    )
    return {
        "folds": chain,
        "exchanges": exchanges,
        "final_carrier": mark(row.get("final_carrier"), marks),
        "answer": mark(row.get("answer_text"), marks),
        "checks": checks,
        "lineage": lineages,
        "lineage_markers": MARKERS,
        "first_lost_text": first_lost_text,
        "lost_title": lost_title,
        "chunks_known": bool(fixture and fixture.get("planted")),
        "fixture_missing": fixture is None and refused is None,
        "fixture_refused": refused,
        "planted": len(marks),
        "escape": escape,
    }


class CarrierPages(BuiltInPages):
    """The unit page and, once per run, the fixture's chunks (`pipeline.study.StudyPages`)."""

    preload: tuple[str, ...] = ("folds", "checks")

    def unit(self, run: Run, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        return UnitPage("unit_carrier.html", carrier_unit(run, row))

    def run_sections(self, run: Run, links: Any) -> Sequence[RunSection]:
        found, refused = fixture_chunks(run)
        context = {"chunks": found, "refused": refused}
        return (RunSection("chunks", "fixture", "fixture_chunks.html", context),)

    def overview_sections(self, run: Run, links: Any) -> Sequence[RunSection]:
        context = {"lost": facts_most_often_lost(run)}
        return (RunSection("facts-lost", "facts most often lost", "run_facts_lost.html", context),)


PAGES = CarrierPages()
