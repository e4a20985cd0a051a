"""Part 1 of the reasoning-trace report: the class of every template, the heatmap, where the two
renderers disagree, and the recital verdicts. Every plain statement is read off the analysis
tables (a template missing from the run gets a sentence saying so, not a claim)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from jobs.figures_common import save_figure
from jobs.small_sample import MIN_CELL_N
from jobs.traces.figures import visibility_heatmap
from jobs.traces.markdown import cell, mark_small, pct, small_footnote, table
from jobs.traces.matrix import SHIPPED, USER

QWEN3, KIMI = "Qwen3", "Kimi-K2"
RECITES_ALMOST_NOTHING = 0.2  # recited share of the secrets in the prompt: "almost nothing"
CLASS_LEGEND = [
    "Classes (`pipeline/traces/visibility/classify.py`, default switches, the dialects a "
    "template reads): `never` — no stored reasoning reaches the prompt; `always` — all of it "
    "does; `after_last_user` — reasoning survives only on assistant turns after the last user "
    "turn (a tool loop keeps it while open); `until_plain_reply` — a tool-call turn's reasoning "
    "survives until a plain assistant reply follows, across user turns; `irregular` — no rule "
    "fits; `unrenderable` — no default render succeeded.",
]


def _share(cells: pl.DataFrame, template: str, structure: str) -> str:
    row = cells.filter(
        (pl.col("source") == SHIPPED)
        & (pl.col("template") == template)
        & (pl.col("structure") == structure)
    )
    return pct(row["share"][0]) if row.height else "–"


def _shipped(classes: pl.DataFrame, needle: str) -> dict[str, object] | None:
    rows = classes.filter((pl.col("source") == SHIPPED) & pl.col("template").str.contains(needle))
    return rows.row(0, named=True) if rows.height else None


def _plain_statements(classes: pl.DataFrame, cells: pl.DataFrame) -> list[str]:
    qwen, kimi = _shipped(classes, QWEN3), _shipped(classes, KIMI)
    lines = []
    if qwen and kimi:
        q, k = str(qwen["template"]), str(kimi["template"])
        lines.append(
            f"- **Qwen3 against Kimi-K2.** `{q}` is `{qwen['visibility']}`: a tool-call turn's "
            f"reasoning reaches the prompt while the loop is open ({_share(cells, q, 'tool1_open')}"
            f" of secrets, one tool round) and is dropped once a new user question arrives "
            f"({_share(cells, q, 'tool1_user')}). `{k}` is `{kimi['visibility']}`: it keeps that "
            f"reasoning across the user turn ({_share(cells, k, 'tool1_user')}) and drops it once "
            f"a plain reply follows ({_share(cells, k, 'tool_plain_user')} in `tool_plain_user`)."
        )
    else:
        missing = [n for n, r in ((QWEN3, qwen), (KIMI, kimi)) if r is None]
        lines.append(f"- No shipped {' or '.join(missing)} template in this run's inputs.")
    dropped = classes.filter(pl.col("tool_calls_dropped"))
    for row in dropped.iter_rows(named=True):
        where = (
            str(row["source"])
            if row["source"] in (SHIPPED, USER)
            else f"{row['config_id']} [{row['renderer']}]"
        )
        lines.append(
            f"- **`{row['template']}` ({where}) drops tool calls altogether**: no tool call's "
            f"argument reached any rendered prompt, while its reasoning class is "
            f"`{row['visibility']}`."
        )
    crashed = classes.filter(pl.col("shapes_crashed") > 0)
    by_failure: dict[tuple[str, int, int, str], list[str]] = {}
    for row in crashed.iter_rows(named=True):
        where = (
            str(row["source"])
            if row["source"] in (SHIPPED, USER)
            else f"{row['config_id']} [{row['renderer']}]"
        )
        total = int(row["shapes_rendered"]) + int(row["shapes_crashed"])
        key = (str(row["template"]), int(row["shapes_crashed"]), total, str(row["crash_errors"]))
        by_failure.setdefault(key, []).append(where)
    for (template, failed, total, errors), wheres in by_failure.items():
        lines.append(
            f"- `{template}` ({', '.join(wheres)}) fails on {failed} of {total} shapes (a "
            f"recorded outcome, not a test failure): {cell(errors)[:240]}"
        )
    return lines


def disagreement_kinds(disagreements: pl.DataFrame) -> list[str]:
    """Per configuration, the disagreements by kind: which renderer failed, or which kept it."""
    kinds = disagreements.with_columns(
        pl.when(~pl.col("baseline_rendered") & pl.col("rendered"))
        .then(pl.lit("the offline renderer failed where the server rendered"))
        .when(pl.col("baseline_rendered") & ~pl.col("rendered"))
        .then(pl.lit("the server failed where the offline renderer rendered"))
        .when(pl.col("in_rendered"))
        .then(pl.lit("only the server's prompt kept the secret"))
        .otherwise(pl.lit("only the offline prompt kept the secret"))
        .alias("kind")
    )
    counted = kinds.group_by("config_id", "kind").agg(
        pl.len().alias("secrets"), pl.col("shape").n_unique().alias("shapes")
    )
    return [
        f"- {row['config_id']}: {row['kind']} on {row['shapes']} shapes ({row['secrets']} secrets)."
        for row in counted.sort("config_id", "kind").iter_rows(named=True)
    ]


def _renderers(disagreements: pl.DataFrame, agreement: pl.DataFrame) -> list[str]:
    lines = ["### Offline (Jinja2, Hugging Face contract) against the server's own renderer", ""]
    if agreement.height == 0:
        return [
            *lines,
            "No configuration's server rendered a template (a hosted endpoint, or a "
            "server without an apply-template endpoint): there is nothing to compare.",
            "",
        ]
    counted = agreement.join(
        disagreements.group_by("config_id", "renderer").len("disagreements"),
        on=["config_id", "renderer"],
        how="left",
    ).with_columns(pl.col("disagreements").fill_null(0))
    lines += table(
        counted,
        [
            ("configuration", "config_id", None),
            ("renderer", "renderer", None),
            ("template", "template", None),
            ("renders", "renders", None),
            ("byte-identical prompts", "identical", None),
            ("secret disagreements", "disagreements", None),
        ],
    )
    if disagreements.height == 0:
        lines += [
            "",
            "The two renderers agree on every secret of every shape (where prompts differ "
            "byte-wise, they still keep and drop the same reasoning).",
        ]
    else:
        lines += ["", *disagreement_kinds(disagreements)]
        lines += ["", f"Where they disagree ({disagreements.height} secrets; first 20):", ""]
        lines += table(
            disagreements.head(20),
            [
                ("configuration", "config_id", None),
                ("shape", "shape", None),
                ("secret", "secret", None),
                ("offline rendered", "baseline_rendered", None),
                ("offline kept", "baseline_in_rendered", None),
                ("live rendered", "rendered", None),
                ("live kept", "in_rendered", None),
                ("live error", "error", None),
            ],
        )
    return [*lines, ""]


def _recitals(verdicts: pl.DataFrame) -> list[str]:
    lines = ["### Live recital: can the model recite what its prompt held?", ""]
    if verdicts.height == 0:
        return [*lines, "No visibility unit ran: no recital verdicts.", ""]
    shown = mark_small(
        verdicts.with_columns(pl.format("{}/{}", "recited", "graded").alias("r")), "r"
    )
    lines += table(
        shown,
        [
            ("configuration", "config_id", None),
            ("shape", "shape", None),
            ("question in", "question_in", None),
            ("secrets", "secrets", None),
            ("in rendered prompt (live)", "in_rendered_live", None),
            ("in rendered prompt (offline)", "in_rendered_offline", None),
            ("recited / graded", "r", None),
            ("verdict", "verdict", None),
            ("recited but not in prompt", "recited_not_in_prompt", None),
        ],
    )
    lines += small_footnote(verdicts, "a recital verdict", MIN_CELL_N)
    return [*lines, "", recital_summary(verdicts), ""]


def recital_summary(verdicts: pl.DataFrame) -> str:
    """The plain reading of the recital verdicts, claims only where the counts bear them."""
    graded, recited = int(verdicts["graded"].sum()), int(verdicts["recited"].sum())
    in_prompt, secrets = int(verdicts["in_prompt"].sum()), int(verdicts["secrets"].sum())
    seen_recited = recited - int(verdicts["recited_not_in_prompt"].sum())
    text = (
        f"Over every endpoint and shape the models recited {recited} of {graded} graded secrets, "
        f"while {in_prompt} of {secrets} were in the rendered prompt."
    )
    if in_prompt == 0:
        text += (
            " No secret reached a rendered prompt, so no model could recite one: here the "
            "recital reads the template, not the model."
        )
    elif seen_recited <= RECITES_ALMOST_NOTHING * in_prompt:
        text += (
            f" Of the {in_prompt} secrets in front of them the models recited {seen_recited}: "
            "these small local models recite almost nothing, and that is a true result about "
            "the models, not a fault of the probe."
        )
    text += (
        " The rendered-prompt columns are the real reading of which reasoning the template "
        "shows; the recital says what a model does with it."
    )
    return text


def part1(out: Path, *, simulated: bool) -> list[str]:
    classes = pl.read_parquet(out / "template_classes.parquet")
    cells = pl.read_parquet(out / "template_cells.parquet")
    lines = [
        "## Part 1: which stored reasoning the chat template shows the model",
        "",
        *CLASS_LEGEND,
        "",
    ]
    if classes.height == 0:
        lines += [
            "No template was rendered: the run recorded no chat_templates.json and no "
            "visibility unit ran.",
            "",
        ]
    lines += table(
        classes,
        [
            ("source", "source", None),
            ("configuration", "config_id", None),
            ("renderer", "renderer", None),
            ("template", "template", None),
            ("template source", "template_source", None),
            ("class", "visibility", lambda v: f"`{v}`"),
            ("unrenderable because", "unrenderable_reason", None),
            ("dialects read", "dialects_read", None),
            ("switches read", "switches_read", None),
            ("tool calls dropped", "tool_calls_dropped", lambda v: "**yes**" if v else "no"),
            ("switches that matter", "switch_effects", None),
            ("shapes rendered", "shapes_rendered", None),
            ("shapes crashed", "shapes_crashed", None),
        ],
    )
    lines += ["", *_plain_statements(classes, cells), ""]
    save_figure(visibility_heatmap(cells), out / "visibility.png", simulated=simulated)
    lines += ["![visibility matrix](visibility.png)", ""]
    lines += _renderers(
        pl.read_parquet(out / "render_disagreements.parquet"),
        pl.read_parquet(out / "render_agreement.parquet"),
    )
    lines += _recitals(pl.read_parquet(out / "recital_verdicts.parquet"))
    return lines


def switch_section(out: Path) -> list[str]:
    """The class of every template under every switch setting it tests (issue 21)."""
    path = out / "template_switch_classes.parquet"
    lines = ["### The class per thinking-switch setting", ""]
    if not path.is_file():
        return [*lines, "No switch table in this analysis.", ""]
    rows = pl.read_parquet(path).with_columns(
        pl.len().over("source", "config_id", "renderer", "template").alias("settings")
    )  # `over` groups nulls together (a shipped row has no config_id), a join would not
    switched = rows.filter(pl.col("settings") > 1)
    many = set(switched["template"].to_list())
    plain = sorted(set(rows["template"].to_list()) - many)
    lines += [
        "Switches are read from each template's syntax tree (`enable_thinking`, "
        "`preserve_thinking`, `thinking`, `clear_thinking`, `reasoning_effort`, `keep_cot`, and "
        "any other `{% if X %}` over a kwarg; pipeline/traces/visibility/reads.py); every setting "
        "(unset included) is rendered offline. `(default)` passes nothing.",
        "",
    ]
    if switched.height:
        lines += table(
            switched.with_columns(
                pl.when(pl.col("switches") == "")
                .then(pl.lit("(default)"))
                .otherwise(pl.col("switches"))
                .alias("setting")
            ),
            [
                ("source", "source", None),
                ("configuration", "config_id", None),
                ("renderer", "renderer", None),
                ("template", "template", None),
                ("switch setting", "setting", None),
                ("class", "visibility", lambda v: f"`{v}`"),
                ("unrenderable because", "unrenderable_reason", None),
            ],
        )
    if plain:
        lines += [
            "",
            "Templates that test no switch (one setting): "
            + ", ".join(f"`{t}`" for t in plain)
            + ".",
        ]
    return [*lines, ""]


__all__ = ["part1", "recital_summary", "switch_section"]
