"""What a reasoning-trace run says a user should do with stored reasoning (issue 34).

From the analysis outputs (template_classes, template_switch_classes, trace_scan,
compression_by_band, compression_pairs, compression_paired) and the run's
`chat_templates.json`. The rules (docs/traces.md "Decide"):
- per template (`options.template`, matched to the run's templates by its SHA-256, else by its
  file name; every template of the run when None): its visibility class says which stored
  reasoning the model really sees, in which field, and the switch settings that change it;
  `irregular` and `unrenderable` give no recommendation;
- beside it, the bloat from the scan: the traces' median and p99 length (nearest rank) and the
  reasoning per session; the share of the replayed context that is reasoning is not measured
  by this study (the scan reads reasoning, not the rest of the context) and says so;
- where reasoning reaches the model: the frontier arm per configuration and band
  (jobs/traces/frontier.py) at `options.retention`;
- where the chosen template drops it (`never`): "compression saves nothing here", and no
  frontier answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from jobs import io
from jobs.decided_run import study_decision
from jobs.traces.compression import ALL_BANDS
from jobs.traces.frontier import QUESTION as FRONTIER_QUESTION
from jobs.traces.frontier import frontier_answer, item_retentions, points
from jobs.traces.matrix import ENDPOINT
from jobs.traces.tables import final_units, load, read_template_entries
from pipeline.decision import Answer, DecisionOptions, Evidence, Number, StudyDecision, Where
from pipeline.store import Layout
from pipeline.traces.scan import nearest_rank
from pipeline.usererror import UserError

QUESTION = "reasoning: which stored reasoning does the model see?"
READ = (
    "template_classes",
    "template_switch_classes",
    "trace_scan",
    "compression_by_band",
    "compression_pairs",
    "compression_paired",
)
NOTHING_SAVED = "compression saves nothing here"
CLASSES = "analysis/template_classes.parquet"
SWITCHES = "analysis/template_switch_classes.parquet"
SCAN = "analysis/trace_scan.parquet"
SEES = {
    "never": (
        "no stored reasoning reaches the model",
        f"do not replay it: {NOTHING_SAVED}",
    ),
    "always": (
        "every stored reasoning reaches the model",
        "compress it (the summariser answers below)",
    ),
    "after_last_user": (
        "only reasoning after the last user turn reaches the model (an open tool loop's)",
        "compress the current loop's reasoning; the template drops the rest",
    ),
    "until_plain_reply": (
        "a tool-call turn's reasoning reaches the model until a plain assistant reply follows",
        "compress reasoning on tool-call turns; the template drops it after a plain reply",
    ),
}


class TemplateFileError(UserError):
    """`--template` names no readable file."""


def _template_row(row: dict[str, Any]) -> Where:
    where: Where = (("template", str(row["template"])),)
    if row["source"] == ENDPOINT:
        where += (("config_id", str(row["config_id"])), ("renderer", str(row["renderer"])))
    return where


def _subject(row: dict[str, Any]) -> str:
    if row["source"] == ENDPOINT:
        return f"{row['template']} ({row['config_id']}, {row['renderer']})"
    return str(row["template"])


def chosen_templates(
    classes: pl.DataFrame, entries: dict[str, dict[str, str]] | None, template: Path | None
) -> tuple[pl.DataFrame, list[str]]:
    """The template rows asked about, and what is missing when the file is not in the run."""
    if template is None:
        return classes, []
    if not template.is_file():
        raise TemplateFileError(f"--template {template} is not a file; give a chat template file")
    digest = hashlib.sha256(template.read_bytes()).hexdigest()
    by_digest = [
        name
        for name, entry in (entries or {}).items()
        if hashlib.sha256(entry["text"].encode()).hexdigest() == digest
    ]
    names = by_digest or [template.stem]
    found = classes.filter(pl.col("template").is_in(names))
    if found.height:
        return found, []
    have = ", ".join(sorted(set(classes["template"].to_list())))
    return found, [
        f"reasoning: template {template.name} is not in this run (its templates: {have}); add "
        f"it with study.templates=[{template}] or class it with `python -m pipeline traces "
        f"classify {template}`"
    ]


def bloat(scan: pl.DataFrame) -> tuple[Evidence, ...]:
    """The scan's lengths and reasoning per session; the context share, not measured."""
    if scan.height == 0:
        return (Evidence("stored reasoning", "not measured: the run recorded no trace scan", SCAN),)
    lengths = sorted(scan["chars"].to_list())
    per_session = sorted(scan.group_by("session").agg(pl.col("bytes").sum())["bytes"].to_list())
    chars = [f"{nearest_rank(lengths, q):,}" for q in (50, 99)] + [f"{len(lengths):,}"]
    sessions = [f"{nearest_rank(per_session, q):,}" for q in (50, 99)] + [f"{len(per_session):,}"]
    return (
        Evidence(
            "stored reasoning: trace length (characters)",
            f"median {chars[0]}, p99 {chars[1]} over {chars[2]} traces (nearest rank)",
            SCAN,
            numbers=tuple(
                Number(shown, "chars", rule)
                for shown, rule in zip(chars, ("median", "p99", "count"), strict=True)
            ),
        ),
        Evidence(
            "stored reasoning per session (UTF-8 bytes)",
            f"median {sessions[0]}, p99 {sessions[1]} over {sessions[2]} sessions",
            SCAN,
            numbers=tuple(
                Number(shown, "bytes", rule, group_sum="session")
                for shown, rule in zip(sessions, ("median", "p99", "count"), strict=True)
            ),
        ),
        Evidence(
            "share of the replayed context that is reasoning",
            "not measured: the scan reads the reasoning, not the rest of each session's context",
            SCAN,
        ),
    )


def _switches(switch_classes: pl.DataFrame, row: dict[str, Any]) -> list[str]:
    """The settings under which the template's class differs from its default one."""
    mine = switch_classes.filter(
        (pl.col("source") == row["source"])
        & (pl.col("template") == row["template"])
        & (pl.col("renderer") == row["renderer"])
        & (pl.col("config_id").eq_missing(row["config_id"]))
        & (pl.col("switches") != "")
        & (pl.col("visibility") != row["visibility"])
    )
    return [f"`{s}`: {v}" for s, v in mine.select("switches", "visibility").iter_rows()]


def visibility_answer(
    row: dict[str, Any], switch_classes: pl.DataFrame, scanned: Sequence[Evidence]
) -> Answer:
    """The answer for one template row (module docstring)."""
    cls = str(row["visibility"])
    where = (CLASSES, _template_row(row))
    dialects = row["dialects_read"] or ""
    evidence = [
        Evidence("visibility class (default switches)", cls, *where),
        Evidence("reasoning fields it reads", dialects or "none", *where),
        Evidence("drops tool calls", "yes" if row["tool_calls_dropped"] else "no", *where),
        Evidence("switches it tests", row["switches_read"] or "none", *where),
        *scanned,
    ]
    changes = _switches(switch_classes, row)
    would_change = tuple(f"the switch setting {c}" for c in changes)
    if changes:
        evidence.append(
            Evidence("class under other switch settings", "; ".join(changes), SWITCHES, where[1])
        )
    if cls not in SEES:
        reason = (
            f"no default render succeeded ({row['unrenderable_reason']})"
            if cls == "unrenderable"
            else "no single rule says which stored reasoning survives (irregular)"
        )
        return Answer(QUESTION, _subject(row), None, reason, tuple(evidence), None, would_change)
    sees, action = SEES[cls]
    field = f"; it reads reasoning from `{dialects}`: store it there" if dialects else ""
    return Answer(
        QUESTION,
        _subject(row),
        f"{sees}: {action}{field}",
        f"its visibility class under the default switches is `{cls}`",
        tuple(evidence),
        would_change=would_change,
    )


def frontier_answers(run_dir: Path, tables: dict[str, pl.DataFrame], goal: float) -> list[Answer]:
    """One answer per (configuration, band) the run summarised (jobs/traces/frontier.py)."""
    boot = io.manifest_analysis(run_dir).bootstrap
    by_band, paired = tables["compression_by_band"], tables["compression_paired"]
    retentions = item_retentions(tables["compression_pairs"])
    answers = []
    for config_id in sorted(set(by_band["config_id"].to_list())):
        cells = by_band.filter(pl.col("config_id") == config_id)
        mine = retentions.filter(pl.col("config_id") == config_id)
        if mine.height == 0:
            answers.append(
                Answer(
                    FRONTIER_QUESTION,
                    str(config_id),
                    None,
                    "no per-trace retention to put an interval on: the run has no `naive` "
                    "arm to pair on (compression_pairs is empty)",
                )
            )
            continue
        for band in dict.fromkeys(cells["band"].to_list()):  # shortest first, `all` last
            in_band = mine if band == ALL_BANDS else mine.filter(pl.col("band") == band)
            band_cells = cells.filter(pl.col("band") == band)
            found = points(in_band, band_cells, boot)
            row = band_cells.row(0, named=True) if band_cells.height else None  # n, synthetic
            answers.append(
                frontier_answer(
                    str(config_id), str(band), found, paired=paired, goal=goal, band_row=row
                )
            )
    return answers


def nothing_saved(templates: pl.DataFrame, asked: Path | None) -> list[Answer]:
    """The frontier's place when the template asked about drops stored reasoning."""
    if asked is None or templates.height == 0 or set(templates["visibility"]) != {"never"}:
        return []
    evidence = tuple(
        Evidence("visibility class", "never", CLASSES, _template_row(r))
        for r in templates.iter_rows(named=True)
    )
    reason = f"{NOTHING_SAVED}: the template drops every stored reasoning (class `never`)"
    return [Answer(FRONTIER_QUESTION, asked.name, None, reason, evidence)]


def decide(run_dir: Path, layout: Layout, options: DecisionOptions) -> StudyDecision:
    """The reasoning-trace run's decision (module docstring)."""
    out = io.require_outputs(run_dir, READ)
    tables = {name: pl.read_parquet(out / f"{name}.parquet") for name in READ}
    rows = final_units(load(run_dir, "rows", layout))
    templates, missing = chosen_templates(
        tables["template_classes"], read_template_entries(run_dir), options.template
    )
    scanned = bloat(tables["trace_scan"])
    answers = [
        visibility_answer(r, tables["template_switch_classes"], scanned)
        for r in templates.iter_rows(named=True)
    ]
    dropped = nothing_saved(templates, options.template)
    answers += dropped or frontier_answers(run_dir, tables, options.retention)
    return study_decision(
        run_dir,
        "traces",
        answers,
        rows_simulated=bool(rows["simulated"].fill_null(value=False).any()),
        missing=missing,
    )
