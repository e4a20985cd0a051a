"""Part 2 of the reasoning-trace report: the items, the per-band table per arm, the paired
intervals against `naive`, the frontier figure and the decoding checks."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl

from jobs.figures_common import save_figure
from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N
from jobs.traces.compression import ALL_BANDS
from jobs.traces.figures import frontier
from jobs.traces.markdown import mark_small, pct, ratio, signed, small_footnote, table
from jobs.traces.paired import BASELINE
from pipeline.traces.compression.facts import KINDS

MODEL_FREE = ("extractive", "hybrid")  # the arms whose facts code, not the model, writes


def _items(items: tuple[pl.DataFrame, pl.DataFrame] | None) -> list[str]:
    lines = ["### The traces", ""]
    if items is None:
        return [*lines, "The run directory has no trace_items.json.", ""]
    frame, counts = items
    per_band = (
        frame.group_by("band", "source", "synthetic")
        .agg(
            pl.len().alias("items"),
            pl.col("chars").min().alias("shortest"),
            pl.col("chars").max().alias("longest"),
        )
        .sort("shortest")
    )
    lines += table(
        per_band,
        [
            ("band", "band", None),
            ("source", "source", None),
            ("synthetic", "synthetic", lambda v: "**yes**" if v else "no"),
            ("items", "items", None),
            ("shortest chars", "shortest", None),
            ("longest chars", "longest", None),
        ],
    )
    lines += ["", "Real traces available per band before sampling, and how many were taken:", ""]
    lines += table(
        counts, [("band", "band", None), ("available", "available", None), ("taken", "taken", None)]
    )
    lines += _empty_bands(frame, counts)
    synthetic = frame.filter(pl.col("synthetic"))
    if synthetic.height:
        lines += [
            "",
            f"**Synthetic items** ({synthetic.height}, generated with planted paths, "
            "line numbers, identifiers and numbers; not real reasoning):",
            "",
        ]
        lines += [
            f"- `{r['id']}` ({r['band']}, {r['chars']} chars): {r['provenance']}"
            for r in synthetic.iter_rows(named=True)
        ]
    else:
        lines += ["", "No item is synthetic: every trace is real."]
    return [*lines, ""]


def _empty_bands(frame: pl.DataFrame, counts: pl.DataFrame) -> list[str]:
    """Bands without a real trace: say what stands there (synthetic traces, or nothing)."""
    empty = counts.filter(pl.col("available") == 0)["band"].to_list()
    with_synthetic = set(frame.filter(pl.col("synthetic"))["band"].to_list())
    covered = [b for b in empty if b in with_synthetic]
    bare = [b for b in empty if b not in with_synthetic]
    lines = []
    if covered:
        lines += [
            "",
            f"No real trace falls in {', '.join(covered)}: only synthetic traces stand there.",
        ]
    if bare:
        lines += [
            "",
            f"No real trace falls in {', '.join(bare)}, and no synthetic trace was generated "
            "for it (study.compression.synthetic_per_band): that band is empty in this run.",
        ]
    return lines


def _bands(table_: pl.DataFrame) -> list[str]:
    lines = [
        "### Per band and arm",
        "",
        "Medians over the traces of the cell (nulls skipped: an empty summary has no "
        "ratio, a trace without facts of a kind no retention of it); `all` pools the bands.",
        "",
    ]
    kinds = [(f"retention {k}", f"median_retention_{k}", pct) for k in KINDS]
    lines += table(
        mark_small(table_, "n"),
        [
            ("configuration", "config_id", None),
            ("arm", "arm", None),
            ("band", "band", None),
            ("n", "n", None),
            ("median ratio", "median_compression_chars", ratio),
            ("median token ratio", "median_compression_tokens", ratio),
            ("median retention", "median_retention", pct),
            *kinds,
            ("median precision", "median_precision", pct),
            ("invented facts", "invented", None),
            ("empty summaries", "empty_summaries", None),
        ],
    )
    return [*lines, *small_footnote(table_, "a band's medians", MIN_CELL_N), ""]


def _interval(lo: object, hi: object, exp: bool = False) -> str:
    if not isinstance(lo, float) or not isinstance(hi, float):
        return "–"
    if exp:
        return f"[{math.exp(lo):.2f}×, {math.exp(hi):.2f}×]"
    return f"[{lo:+.2f}, {hi:+.2f}]"


def _paired(paired: pl.DataFrame) -> list[str]:
    lines = [f"### Paired against `{BASELINE}` on identical traces", ""]
    if paired.height == 0:
        return [*lines, f"No arm pairs with `{BASELINE}` in this run.", ""]
    shown = paired.with_columns(
        pl.Series(
            "retention_ci",
            [
                _interval(a, b)
                for a, b in paired.select("retention_ci_lo", "retention_ci_hi").iter_rows()
            ],
        ),
        pl.Series(
            "ratio_ci",
            [
                _interval(a, b, exp=True)
                for a, b in paired.select("log_ratio_ci_lo", "log_ratio_ci_hi").iter_rows()
            ],
        ),
    )
    lines += [
        "Arm minus naive per trace; 95% percentile bootstrap intervals of the mean over "
        "pairs (analysis.bootstrap). Retention difference: positive = the arm kept more "
        "facts. Ratio of ratios: exp(mean log difference of compression ratios), above 1× "
        "= the arm's summaries are shorter.",
        "",
    ]
    lines += table(
        mark_small(shown, "retention_pairs"),
        [
            ("configuration", "config_id", None),
            ("arm", "arm", None),
            ("band", "band", None),
            ("pairs", "retention_pairs", None),
            ("retention diff (mean)", "retention_diff_mean", signed),
            ("95% CI", "retention_ci", None),
            ("ratio of ratios", "ratio_of_ratios", ratio),
            ("95% CI ", "ratio_ci", None),
        ],
    )
    return [*lines, *small_footnote(paired, "a paired interval", MIN_SPREAD_N), ""]


def _decoding(decoding: pl.DataFrame) -> list[str]:
    lines = ["### Greedy decoding with thinking off: checked on the wire and in behaviour", ""]
    if decoding.height == 0:
        return [*lines, "No compression unit ran.", ""]
    lines += [
        "Read from the request bodies as sent (after every default was merged): the seed "
        "found a harness whose defaults overwrote temperature 0. The repeat check "
        "summarises the first traces twice and compares the summaries' SHA-256.",
        "",
    ]
    shown = decoding.with_columns(
        pl.format("{}/{}", "greedy_ok", "greedy_checked").alias("greedy"),
        pl.format("{}/{}", "repeat_identical", "repeat_checked").alias("repeat"),
    )
    lines += table(
        shown,
        [
            ("configuration", "config_id", None),
            ("arm", "arm", None),
            ("greedy + thinking off / sent", "greedy", None),
            ("sent temperature", "sent_temperature", None),
            ("sent top_p", "sent_top_p", None),
            ("sent seed", "sent_seed", None),
            ("sent enable_thinking", "sent_enable_thinking", None),
            ("thinking state", "thinking_state", None),
            ("problems", "decoding_problem", None),
            ("identical repeats / repeated", "repeat", None),
        ],
    )
    return [*lines, ""]


def _token_note(decoding: pl.DataFrame) -> list[str]:
    """Where token ratios were counted, and why they are null elsewhere."""
    if decoding.height == 0 or "token_counter" not in decoding.columns:
        return []
    per_config = (
        decoding.group_by("config_id")
        .agg(
            pl.col("token_counter").filter(pl.col("token_counter") != "").first(),
            pl.col("token_null_reason").filter(pl.col("token_null_reason") != "").first(),
        )
        .sort("config_id")
    )
    lines = ["### Token ratios", ""]
    for row in per_config.iter_rows(named=True):
        if row["token_counter"]:
            lines.append(f"- {row['config_id']}: counted with {row['token_counter']} (the "
                         "served model's own vocabulary).")  # fmt: skip
        else:
            lines.append(f"- {row['config_id']}: null, because {row['token_null_reason']}.")
    return [*lines, ""]


def _tiny_models_note(table_: pl.DataFrame) -> list[str]:
    overall = table_.filter(pl.col("band") == ALL_BANDS)
    if overall.height == 0:
        return []
    model = overall.filter(~pl.col("arm").is_in(MODEL_FREE))
    free = overall.filter(pl.col("arm").is_in(MODEL_FREE))
    model_best = model["median_retention"].max() if model.height else None
    free_best = free["median_retention"].max() if free.height else None
    free_text = ", ".join(
        f"`{r['arm']}` {pct(r['median_retention'])} ({r['config_id']})"
        for r in free.iter_rows(named=True)
    )
    text = (
        f"The best median retention of a model-only arm is {pct(model_best)}; the arms whose "
        "facts code writes, extractive (no model) and hybrid (the model's summary plus a "
        f"code-written ledger of the facts it dropped), reach {free_text or 'nothing: not run'}."
    )
    if isinstance(model_best, float) and isinstance(free_best, float) and model_best < free_best:
        text = (
            "**Tiny models summarise poorly.** The embedded local models are small and their "
            "summaries lose facts: a true result about them, not a fault of the prompts. "
            f"{text} Those two arms carry the contrast."
        )
    return [text, ""]


def part2(
    out: Path, items: tuple[pl.DataFrame, pl.DataFrame] | None, *, simulated: bool
) -> list[str]:
    bands = pl.read_parquet(out / "compression_by_band.parquet")
    lines = ["## Part 2: compressing reasoning traces without losing facts", ""]
    lines += _items(items)
    if bands.height == 0:
        return [*lines, "No compression unit ran.", ""]
    lines += _bands(bands)
    lines += _paired(pl.read_parquet(out / "compression_paired.parquet"))
    save_figure(frontier(bands), out / "frontier.png", simulated=simulated)
    lines += ["### The fidelity–compression frontier", "", "![frontier](frontier.png)", ""]
    decoding = pl.read_parquet(out / "compression_decoding.parquet")
    lines += _decoding(decoding)
    lines += _token_note(decoding)
    lines += _tiny_models_note(bands)
    return lines


__all__ = ["part2"]
