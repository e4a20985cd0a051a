"""Markdown sections of report.md: pure functions of loaded analysis outputs.

Every table names its denominator. Wording is deliberately plain: effects are "paired
differences", not improvements, and a run whose recall is near zero says so up front, since
contrasts between floors carry little information.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import polars as pl

from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N, footnote, marked
from pipeline.carrier.validity import CATCH_UP

NEAR_ZERO_RECALL = 0.1
"""Cells whose mean recall is at or below this are called near zero in the report."""

CATCH_UP_MEANS = (
    f"`{CATCH_UP}`: a fold returned no usable carrier (empty or refused), so the next fold "
    "took the pending chunks together and the trajectory answers a different question; it is "
    "the arm's own behaviour, left out of every mean and never retried (docs/carrier.md, "
    '"The trajectory").'
)
"""Where a reader first meets `catch_up` (the report's sweep status), it is explained."""


def signed(value: object) -> str:
    return "—" if not isinstance(value, int | float) else f"{value:+.3f}"


def plain(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def interval(value: object) -> str:
    if not isinstance(value, list) or len(value) != 2:
        return "—"
    return f"[{signed(value[0])}, {signed(value[1])}]"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


TITLE = "foldsweep analysis"


def headline(summary: dict[str, Any]) -> list[str]:
    """The attempt counts under the provenance header (which carries the SIMULATED line)."""
    lines = [
        f"Attempts: {summary['attempts']}; final trajectories (highest attempt): "
        f"{summary['final_rows']}; valid final trajectories: {summary['valid_rows']}. "
        "Earlier infrastructure attempts are neither outcomes nor missing.",
    ]
    if summary.get("absent_tables"):
        lines.append(f"Absent inputs: {', '.join(summary['absent_tables'])}.")
    return [*lines, ""]


def run_status(manifest: dict[str, Any] | None) -> list[str]:
    """The sweep's own accounting: planned = valid + invalid + not run (manifest counts)."""
    counts = (manifest or {}).get("counts")
    if not isinstance(counts, dict):
        return []

    def by_reason(mapping: object) -> str:
        items = mapping.items() if isinstance(mapping, dict) else []
        return ", ".join(f"{k} {v}" for k, v in sorted(items)) or "none"

    invalid = counts.get("invalid")
    caught_up = isinstance(invalid, dict) and bool(invalid.get(CATCH_UP))
    return [
        f"Sweep status: {manifest.get('status') if manifest else '?'}. Planned trajectories "
        f"{counts.get('planned')}: valid {counts.get('valid')}; invalid by reason: "
        f"{by_reason(invalid)}; not run by reason: "
        f"{by_reason(counts.get('not_run'))}; pending {counts.get('pending')}."
        + (f" {CATCH_UP_MEANS}" if caught_up else ""),
        "",
    ]


_PARAMETERS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([MB])(?![a-z])", re.IGNORECASE)


def model_size(model: str) -> str | None:
    """The parameter count a model's name states (`SmolLM2-135M-Instruct` -> `135M`), else None.

    Decision: the name is the only size every panel records; a name without one says nothing.
    """
    found = _PARAMETERS.search(model)
    return None if found is None else found.group(1) + found.group(2).upper()


def _models_with_size(models: Sequence[str]) -> str:
    named = []
    for model in models:
        size = model_size(model)
        named.append(f"{model} ({size} parameters)" if size else model)
    return ", ".join(named)


def near_zero_note(recall: pl.DataFrame) -> list[str]:
    """The floor warning; the report puts it first, right under the title (issue 32)."""
    valid = recall.filter(pl.col("valid_rows") > 0)
    if valid.is_empty():
        return ["No configuration has a valid final row, so no recall can be reported.", ""]
    best = valid.get_column("mean_recall").max()
    if not (isinstance(best, float) and best <= NEAR_ZERO_RECALL):
        return []
    column = "model" if "model" in valid.columns else "config_id"
    models = sorted({str(m) for m in valid.get_column(column).to_list()})
    sizes = [model_size(m) for m in models]
    if all(size is not None and size.endswith("M") for size in sizes):  # under a billion
        who = f"These are tiny models: {_models_with_size(models)}. Models of this size recall"
    else:
        who = f"The models ({_models_with_size(models)}) recalled"
    return [
        f"**Recall is near zero everywhere** (best cell mean {best:.3f}). {who} almost none "
        "of the planted facts, so "
        "every contrast below compares floor results and says little about carrier "
        "representations. This is a measurement, not a failure of the run: see 'What the "
        "final carriers held' for whether the values were lost in the folds or at the answer "
        "turn.",
        "",
    ]


def recall_section(recall: pl.DataFrame) -> list[str]:
    reason_columns = [c for c in recall.columns if c.startswith("invalid_") and c != "invalid_rows"]
    rows = []
    for record in recall.iter_rows(named=True):
        reasons = ", ".join(
            f"{c.removeprefix('invalid_')} {record[c]}" for c in reason_columns if record[c]
        )
        rows.append(
            [
                str(record["config_id"]),
                str(record["arm"]),
                str(record["final_rows"]),
                marked(str(record["valid_rows"]), record.get("small_sample")),
                plain(record["mean_recall"]),
                str(record["rows_half"]),
                str(record["rows_full"]),
                str(record["parse_failure_rows"]),
                plain(record["mean_fill"]),
                plain(record["mean_headings"], 2),
                reasons or "—",
            ]
        )
    header = [
        "config",
        "arm",
        "final",
        "valid (n)",
        "mean recall",
        "≥0.5",
        "full",
        "parse-failure rows",
        "mean fill",
        "mean headings",
        "invalid by reason",
    ]
    return [
        "## Recall by configuration and arm",
        "",
        "Denominator: the valid final rows of each cell (`valid (n)`); invalid final rows are "
        "counted by reason and excluded from every mean. `≥0.5`, `full` and parse-failure rows "
        "are counts out of n.",
        "",
        *table(header, rows),
        "",
        *_footnote_if(recall, "a cell mean", MIN_CELL_N),
        "![recall by configuration and arm](recall_heatmap.png)",
        "",
    ]


def _footnote_if(frame: pl.DataFrame, what: str, threshold: int) -> list[str]:
    flagged = "small_sample" in frame.columns and bool(frame.get_column("small_sample").any())
    return [footnote(what, threshold), ""] if flagged else []


def contrast_section(
    name: str,
    *,
    paired: pl.DataFrame,
    panel: dict[str, Any],
    thresholds: pl.DataFrame,
    fill: dict[str, Any] | None,
    figures: Sequence[str],
) -> list[str]:
    b, a = name.split("_vs_")
    lines = [
        f"## Contrast {name}: recall {b} − recall {a}",
        "",
        f"Denominator: complete pairs (both arms valid in the same configuration, execution "
        f"group and repeat); each configuration weighted equally; n = "
        f"{marked(str(panel['configs']), panel.get('small_sample'))} configurations with at "
        "least one pair.",
        "",
    ]
    if panel.get("small_sample"):
        lines += [footnote("the panel's spread and intervals", MIN_SPREAD_N), ""]
    if not panel["configs"]:
        return [*lines, "No complete pair exists for this contrast; nothing is estimated.", ""]
    lines += floor_note(paired, a, b)
    lines += [
        f"- mean {signed(panel['mean'])}, median {signed(panel['median'])}, "
        f"IQR {interval(panel['iqr'])}, range {interval(panel['range'])}",
        f"- {panel['positive']} positive, {panel['negative']} negative, {panel['zero']} zero",
        f"- leave-one-configuration-out mean range {interval(panel['loo_range'])}; "
        "t interval (dispersion of this panel, not a population CI) "
        f"{interval(panel['t_interval'])}",
        f"- family mean {signed(panel['family_mean'])}; leave-one-family-out "
        f"{interval(panel['lofo_range'])}",
        f"- planned-repeat bounds {interval(panel['planned_bounds'])}; bootstrap (configurations) "
        f"{interval(panel['bootstrap_interval'])}",
        "",
        "Sensitivity (denominator: configurations in each population):",
        "",
        *table(
            ["population", "configs", "mean", "median"],
            [
                [p["population"], str(p["configs"]), signed(p["mean"]), signed(p["median"])]
                for p in panel["sensitivity"]
            ],
        ),
        "",
        *table(
            ["config", "pairs", f"valid {a}", f"valid {b}", f"mean {a}", f"mean {b}", "paired"],
            [
                [
                    str(r["config_id"]),
                    marked(str(r["pairs"]), r.get("small_sample")),
                    str(r["valid_rows_a"]),
                    str(r["valid_rows_b"]),
                    plain(r["mean_a"]),
                    plain(r["mean_b"]),
                    signed(r["paired_mean"]),
                ]
                for r in paired.iter_rows(named=True)
            ],
        ),
        "",
        *_footnote_if(paired, "a configuration's paired effect", MIN_CELL_N),
        "Thresholds (denominator: complete pairs; exact two-sided McNemar on "
        f"only-{a} vs only-{b}):",
        "",
        *table(
            ["config", "threshold", "both", f"only {a}", f"only {b}", "neither", "p"],
            [
                [
                    str(r["config_id"]),
                    r["threshold"],
                    str(r["both"]),
                    str(r["only_a"]),
                    str(r["only_b"]),
                    str(r["neither"]),
                    marked(plain(r["p_value"], 4), r.get("small_sample")),
                ]
                for r in thresholds.iter_rows(named=True)
            ],
        ),
        "",
        *_footnote_if(thresholds, "a McNemar test", MIN_SPREAD_N),
    ]
    if fill is not None:
        lines += [
            f"Fill of arm {a} against the effect (exploratory, post-treatment; n = "
            f"{marked(str(fill['configs']), fill.get('small_sample'))} configurations with a "
            f"recorded fill): Pearson {signed(fill['pearson'])}, Spearman "
            f"{signed(fill['spearman'])}.",
            "",
        ]
        if fill.get("small_sample"):
            lines += [footnote("a correlation", MIN_SPREAD_N), ""]
    lines += [f"![{figure}]({figure})" for figure in figures]
    return [*lines, ""]


def floor_note(paired: pl.DataFrame, a: str, b: str) -> list[str]:
    """Says so when both arms recall near zero in every configuration with pairs."""
    with_pairs = paired.filter(pl.col("pairs") >= 1)
    best = with_pairs.select(pl.max_horizontal(pl.col("mean_a").max(), pl.col("mean_b").max()))
    value = best.item() if with_pairs.height else None
    if isinstance(value, float) and value <= NEAR_ZERO_RECALL:
        return [
            f"Both {a} and {b} recall near zero in every configuration (best arm mean "
            f"{value:.3f}): the effects below are differences between floors.",
            "",
        ]
    return []


def skipped_section(skipped: Sequence[dict[str, str]]) -> list[str]:
    if not skipped:
        return []
    lines = ["## Skipped contrasts", ""]
    lines += [f"- {s['contrast']}: skipped ({s['reason']})." for s in skipped]
    return [*lines, ""]


def dependence_section(dependence: dict[str, Any]) -> list[str]:
    if not dependence.get("rows"):
        return ["## Within-row dependence", "", "No valid final row has checks.", ""]
    return [
        "## Within-row dependence",
        "",
        f"Denominator: {marked(str(dependence['rows']), dependence.get('small_sample'))} valid "
        f"final rows, {dependence['checks']} binary "
        f"checks (source: {dependence['source']}). ICC(1) {plain(dependence['icc'])}, design "
        f"effect {plain(dependence['design_effect'])}, so a row of "
        f"{plain(dependence['checks_per_row'], 1)} checks is worth about "
        f"{plain(dependence['effective_checks_per_row'], 2)} independent observations.",
        "",
        *([footnote("the ICC", MIN_SPREAD_N), ""] if dependence.get("small_sample") else []),
    ]


def headings_section(headings: dict[str, Any]) -> list[str]:
    lines = [
        "## Rendered headings and recall (exploratory association)",
        "",
        f"Within (config, arm, execution group) cells with heading variation: "
        f"{headings['cells']} cells, "
        f"{marked(str(headings['rows']), headings.get('small_sample'))} rows; slope "
        f"{signed(headings['slope'])} recall per heading, residual r "
        f"{signed(headings['residual_r'])}. Raw pooled r over {headings['pooled_rows']} rows: "
        f"{signed(headings['pooled_r'])}. Headings are post-treatment; this is not a mediation "
        "estimate.",
        "",
    ]
    by_arm = headings.get("by_arm") or {}
    if by_arm:
        lines += table(
            ["arm", "cells", "rows", "slope", "residual r"],
            [
                [
                    arm,
                    str(v["cells"]),
                    marked(str(v["rows"]), v.get("small_sample")),
                    signed(v["slope"]),
                    signed(v["residual_r"]),
                ]
                for arm, v in by_arm.items()
            ],
        )
        lines.append("")
    small = headings.get("small_sample") or any(v.get("small_sample") for v in by_arm.values())
    if small:
        lines += [footnote("a slope", MIN_SPREAD_N), ""]
    return lines


def retention_section(kept: pl.DataFrame) -> list[str]:
    if kept.is_empty():
        return []
    rows = [
        [
            str(r["config_id"]),
            str(r["arm"]),
            str(r["audited_rows"]),
            plain(r["mean_retention"]),
            plain(r["mean_recall"]),
        ]
        for r in kept.iter_rows(named=True)
    ]
    return [
        "## What the final carriers held",
        "",
        "Denominator: audited rows (valid final rows whose every check records carrier "
        "presence). Retention is the share of graded values present as whole tokens in the "
        "final carrier; where it exceeds recall, the answer turn lost values the carrier still "
        "held (paper §4.10).",
        "",
        *table(["config", "arm", "audited rows", "mean retention", "mean recall"], rows),
        "",
    ]


def audit_section(audit: pl.DataFrame) -> list[str]:
    if audit.is_empty() or not audit.get_column("audited_rows").sum():
        return ["## Carrier audit", "", "No audited rows (checks without carrier presence).", ""]
    rows = [
        [
            str(r["arm"]),
            str(r["audited_rows"]),
            str(r["rows_counts_agree"]),
            _share(r["rows_carrier_held_answer_missed"], r["audited_rows"]),
            _share(r["rows_answered_absent_from_carrier"], r["audited_rows"]),
        ]
        for r in audit.iter_rows(named=True)
    ]
    return [
        "## Carrier audit",
        "",
        "Denominator: audited rows (valid final rows whose every check records carrier presence).",
        "",
        *table(
            [
                "arm",
                "audited rows",
                "counts agree",
                "carrier held, answer missed",
                "answered, absent from carrier",
            ],
            rows,
        ),
        "",
    ]


def answers_section(answers: pl.DataFrame) -> list[str]:
    if answers.is_empty():
        return ["## Failing answers", "", "No valid final rows.", ""]
    rows = [
        [
            str(r["arm"]),
            str(r["valid_rows"]),
            str(r["failing_rows"]),
            str(r["fabricating"]),
            str(r["abstaining"]),
            str(r["missing"]),
            str(r["unclassified"]),
            str(r["stock_signature_rows"]),
        ]
        for r in answers.iter_rows(named=True)
    ]
    return [
        "## Failing answers (recall < 0.5)",
        "",
        "Denominator: failing rows of each arm (out of its valid final rows). Abstaining wins "
        "over fabricating; `missing` leaves the labels unanswered; `unclassified` lacks "
        "check-level outcomes.",
        "",
        *table(
            [
                "arm",
                "valid rows",
                "failing rows",
                "fabricating",
                "abstaining",
                "missing",
                "unclassified",
                "stock-signature rows",
            ],
            rows,
        ),
        "",
    ]


def _share(count: int, total: int) -> str:
    return f"{count} ({100.0 * count / total:.1f}%)" if total else str(count)
