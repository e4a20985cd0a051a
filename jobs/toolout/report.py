"""report.md of a tool-output run, from the outputs in RUN_DIR/analysis/.

It opens with the shared provenance header (jobs/provenance_header.py: run, study, panel,
corpus and its SHA-256, policies, git sha, versions, probe verdicts, simulated or not) and
the legend of its policies (jobs/arm_legend.py), describes the corpus (and says where it is
a near no-op) and, for a user corpus, every file it skipped with the reason, then gives per
provider x policy the paired savings against control (the mean and its bootstrap interval
first, the median in a secondary column: on a mostly no-op corpus the median's interval is
[0, 0]; issue 32 §17) and the minimum detectable effect, the cache behaviour with a cause
for every missed token, the economic gate's decisions and regret, and the break-even table
and curves. Values resting on a small sample (jobs/small_sample.py) are
marked, and every figure goes through jobs.figures_common.save_figure (SIMULATED when the run is).
It never analyses: a missing output is one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from jobs import io
from jobs.arm_legend import legend_section
from jobs.figures_common import save_figure
from jobs.provenance_header import plan_arms, provenance_header
from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N, footnote, marked
from jobs.toolout.figures import breakeven_curves, live_hits_plot, savings_plot
from jobs.toolout.inputs import load_cache_models
from jobs.toolout.live import sent_turns
from jobs.toolout.tables import final_units, load, scan_lazy
from pipeline.store import Layout
from pipeline.toolout.records import CAUSES

REPORT_FILE = "report.md"
READ = ("savings", "cache", "gate", "breakeven", "corpus")  # the outputs it always reads


def _money(value: Any) -> str:
    return "–" if value is None else f"{value:+.6f}"


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _table(frame: pl.DataFrame, columns: list[tuple[str, str, Any]]) -> list[str]:
    lines = ["| " + " | ".join(title for title, _, _ in columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    for row in frame.iter_rows(named=True):
        cells = [fmt(row[name]) if fmt else str(row[name]) for _, name, fmt in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _small(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """`column` as text with the small-sample mark where the row's `small_sample` is true."""
    if "small_sample" not in frame.columns:
        return frame
    texts = [
        marked(str(value), small)
        for value, small in frame.select(column, "small_sample").iter_rows()
    ]
    return frame.with_columns(pl.Series(column, texts, dtype=pl.String))


def _footnote_if(frame: pl.DataFrame, what: str, threshold: int) -> list[str]:
    flagged = "small_sample" in frame.columns and bool(frame["small_sample"].any())
    return ["", footnote(what, threshold)] if flagged else []


def _rows_simulated(run_dir: Path, layout: Layout) -> bool:
    rows = load(run_dir, "rows", layout)
    return bool(rows.height) and bool(rows["simulated"].fill_null(value=False).any())


SEED_ARMS = {
    "deterministic": "deterministic configuration",
    "model": "model-gated configuration",
}


def _seed_no_ops(cache: pl.DataFrame) -> list[str]:
    """The first lines: which of the seed's own arms transform nothing on this corpus."""
    if cache.height == 0:
        return []
    applied = cache.group_by("policy").agg(
        (pl.col("applications_new") + pl.col("applications_reused")).sum().alias("applications")
    )
    idle = sorted(p for p, n in applied.iter_rows() if n == 0 and p in SEED_ARMS)
    return [
        f"**The seed's own {SEED_ARMS[p]} (policy `{p}`) transforms nothing on this corpus: "
        "0 applications under every configuration**, so its savings below are zero by "
        "construction, not a measured effect."
        for p in idle
    ] + ([""] if idle else [])


def _corpus(out: Path) -> list[str]:
    corpus = pl.read_parquet(out / "corpus.parquet")
    lines = ["## Corpus", ""]
    lines += _table(
        corpus,
        [
            ("corpus", "corpus", None),
            ("transcripts", "transcripts", None),
            ("requests", "requests", None),
            ("tool outputs", "tool_outputs", None),
            ("≥ 2,000 B", "large_outputs", None),
            ("tool-output share of bytes", "tool_output_share", _pct),
            ("near no-op", "near_no_op", lambda v: "**yes**" if v else "no"),
        ],
    )
    quiet = corpus.filter(pl.col("near_no_op"))["corpus"].to_list()
    if quiet:
        lines += [
            "",
            f"{', '.join(quiet)}: fewer than 5% of tool outputs reach the 2,000-byte floor, so "
            "these are near no-op corpora: no policy can change much there, and their pairs "
            "mostly show zero saving.",
        ]
    return [*lines, ""]


MAX_SKIPPED_SHOWN = 200  # the rest are in RUN_DIR/corpus.json


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _skipped(run_dir: Path) -> list[str]:
    """A user corpus (`study.transcripts_dir`): every file or record left out, with why
    (the manifest's `extra.inputs.skipped`, as the sweep printed them before it started)."""
    manifest = io.read_manifest(run_dir) or {}
    where = ((manifest.get("config") or {}).get("study") or {}).get("transcripts_dir")
    if not where:
        return []
    skipped = ((manifest.get("extra") or {}).get("inputs") or {}).get("skipped") or []
    lines = ["## Skipped transcript files", ""]
    if not skipped:
        return [*lines, f"No file of `{where}` was skipped.", ""]
    lines += [
        f"{len(skipped)} files or records of `{where}` were skipped; the other transcripts "
        "ran. None of them is in any table of this report.",
        "",
        "| file or record | reason |",
        "|---|---|",
    ]
    lines += [
        f"| `{_cell(str(s.get('source')))}` | {_cell(str(s.get('reason')))} |"
        for s in skipped[:MAX_SKIPPED_SHOWN]
    ]
    if len(skipped) > MAX_SKIPPED_SHOWN:
        lines += ["", f"… and {len(skipped) - MAX_SKIPPED_SHOWN} more: RUN_DIR/corpus.json."]
    return [*lines, ""]


def _live(run_dir: Path, layout: Layout, out: Path, simulated: bool) -> list[str]:
    """The live section: predicted against reported hits; nothing for an offline run."""
    path = out / "live.parquet"
    table = pl.read_parquet(path) if path.is_file() else pl.DataFrame()
    if table.height == 0:
        return []
    rows = final_units(load(run_dir, "rows", layout))
    sent = sent_turns(scan_lazy(run_dir, "turns", layout), rows)
    lines = ["## Live replay: predicted against reported cache hits", ""]
    lines += [
        "Each request within the live budget (study.live) was sent with max_tokens=1; the "
        "endpoint's reported cached tokens stand beside the cache model's prediction for the "
        "same requests. Shares are over each side's own prompt tokens. Estimator error = "
        "estimated input tokens / reported prompt tokens − 1 (reported counts include the "
        "chat template). Under a cache model with zero prices (llama-server) the USD "
        "sections below are all zero: read this section's tokens instead.",
        "",
    ]
    shown = table.with_columns(
        pl.format("{} / {}", "predicted_cached_tokens", "reported_cached_tokens").alias("tokens")
    )
    lines += _table(
        _small(shown, "requests"),
        [
            ("configuration", "config_id", None),
            ("policy", "policy", None),
            ("requests", "requests", None),
            ("predicted hit share", "predicted_hit_share", _pct),
            ("reported hit share", "reported_hit_share", _pct),
            ("predicted / reported cached tokens", "tokens", None),
            ("mean |share gap| per request", "mean_share_gap", _pct),
            ("median estimator error", "median_estimator_error", _pct),
        ],
    )
    lines += _footnote_if(table, "a share over requests", MIN_CELL_N)
    save_figure(live_hits_plot(sent), out / "live_hits.png", simulated=simulated)
    return [*lines, "", "![live hits](live_hits.png)", ""]


def render_report(
    run_dir: Path, layout: Layout, descriptions: Mapping[str, str] | None = None
) -> Path:
    """Writes analysis/report.md (and its figures) from the analysis outputs; its path.
    `descriptions` (policy -> what it is, from the study's `describe`) give the legend."""
    out = io.require_outputs(run_dir, READ)
    savings = pl.read_parquet(out / "savings.parquet")
    cache = pl.read_parquet(out / "cache.parquet")
    gate = pl.read_parquet(out / "gate.parquet")
    breakeven = pl.read_parquet(out / "breakeven.parquet")
    simulated = _rows_simulated(run_dir, layout)
    lines = provenance_header(
        run_dir,
        title="Tool-output compaction under prompt caching (replay)",
        rows_simulated=simulated,
    )
    lines += legend_section("Policies", "policy", plan_arms(run_dir), descriptions)
    lines += _seed_no_ops(cache)
    lines += _corpus(out)
    lines += _skipped(run_dir)
    lines += _live(run_dir, layout, out, simulated)
    lines += ["## Paired savings against control (USD per transcript, positive = cheaper)", ""]
    lines += [
        "Pairs are transcripts. The headline is the mean saving per transcript and its 95% "
        "percentile bootstrap interval (analysis.bootstrap): most transcripts of a corpus are "
        "near no-op, so the median pair saves exactly zero and its interval is [0, 0] even "
        "where the mean's is not; the median stays in the last column (its interval is in "
        "savings.parquet). MDE is the mean saving a paired test could detect (α 0.05, "
        "power 0.8) with this many transcripts.",
        "",
    ]
    shown = _small(savings, "pairs").with_columns(
        pl.Series(
            "mean_ci",
            [
                f"[{lo:+.6f}, {hi:+.6f}]"
                for lo, hi in savings.select("mean_ci_lo", "mean_ci_hi").iter_rows()
            ],
            dtype=pl.String,
        ),
        pl.format("{} / {}", "cheaper", "dearer").alias("cheaper_dearer"),
    )
    lines += _table(
        shown,
        [
            ("configuration", "config_id", None),
            ("policy", "policy", None),
            ("n", "pairs", None),
            ("mean", "mean_saving_usd", _money),
            ("mean 95% CI", "mean_ci", None),
            ("% of control", "saving_pct_of_control", lambda v: "–" if v is None else f"{v:+.2f}%"),
            ("cheaper / dearer", "cheaper_dearer", None),
            ("MDE (mean)", "mde_mean_usd", _money),
            ("median", "median_saving_usd", _money),
        ],
    )
    lines += _footnote_if(savings, "an interval or MDE over pairs", MIN_SPREAD_N)
    lines += ["", "![savings](savings.png)", ""]
    save_figure(savings_plot(savings), out / "savings.png", simulated=simulated)
    lines += ["## Cache behaviour and the cause of every missed token", ""]
    miss_cols = [(f"missed: {c}", f"miss_{c}_tokens", None) for c in CAUSES]
    lines += _table(
        cache.with_columns(
            pl.format("{} / {}", "applications_new", "applications_reused").alias("new_reused")
        ),
        [
            ("configuration", "config_id", None),
            ("policy", "policy", None),
            ("cache-hit share", "cache_hit_share", _pct),
            *miss_cols,
            ("bytes removed", "bytes_removed", None),
            ("new / reused", "new_reused", None),
            ("sessions transformed", "sessions_transformed", None),
        ],
    )
    lines += ["", "## The economic gate (model policy)", ""]
    if gate.height:
        lines += _table(
            _small(gate, "asked"),
            [
                ("configuration", "config_id", None),
                ("policy", "policy", None),
                ("asked", "asked", None),
                ("approved", "approved", None),
                ("usual reason", "usual_reason", None),
                ("N assumed", "assumed_requests", None),
                ("median later requests", "median_later_requests", None),
                ("would flip", "would_flip", None),
                ("regret USD", "regret_usd", lambda v: f"{v:.6f}"),
            ],
        )
        lines += _footnote_if(gate, "a gate summary", MIN_CELL_N)
        lines += [
            "",
            "Offline there is no summariser endpoint, so an approved candidate stays exact "
            "(`no_summariser`): these rows measure the gate, as the seed's run did.",
        ]
    else:
        lines += [
            "No policy of this run asked the gate: no output its model rules match (the seed's "
            "`grep*`) reached the 2,000-byte floor after an exact exposure in this corpus."
        ]
    lines += ["", "## Break-even N* per provider and policy", ""]
    lines += _table(
        _small(breakeven, "transformations"),
        [
            ("configuration", "config_id", None),
            ("policy", "policy", None),
            ("new transformations", "transformations", None),
            ("(W−C)/C", "premium_ratio", lambda v: "–" if v is None else f"{v:.3g}"),
            ("median D/R", "median_d_over_r", lambda v: "–" if v is None else f"{v:.3g}"),
            ("median N*", "median_n_star", lambda v: "–" if v is None else f"{v:.3g}"),
            ("median later requests", "median_later_requests", None),
            ("share repaid", "share_repaid", _pct),
        ],
    )
    lines += _footnote_if(breakeven, "a median over transformations", MIN_CELL_N)
    rates = pl.DataFrame(
        [
            {"config_id": c, "premium_ratio": r}
            for c, r in breakeven.select("config_id", "premium_ratio").unique().iter_rows()
        ],
        schema={"config_id": pl.String, "premium_ratio": pl.Float64},
    )
    if rates.height == 0:
        from jobs.toolout.breakeven import rates as unit_rates

        rates = unit_rates(final_units(load(run_dir, "rows", layout)), load_cache_models())
    save_figure(breakeven_curves(rates, breakeven), out / "breakeven.png", simulated=simulated)
    lines += ["", "![break-even curves](breakeven.png)", ""]
    return io.write_text("\n".join(lines) + "\n", out / REPORT_FILE)
