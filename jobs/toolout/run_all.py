"""Every tool-output job: the study definition's `analyze` (its `render` draws the report)."""

from __future__ import annotations

from pathlib import Path

from jobs import io
from jobs.toolout import breakeven, cache, corpus, gate, live, savings
from jobs.toolout.inputs import load_cache_models
from jobs.toolout.tables import final_units, load, scan_lazy
from pipeline.config.schema import AnalysisConfig
from pipeline.store import Layout

OUTPUTS = ("savings", "cache", "breakeven", "gate", "corpus", "live")


def analyze(run_dir: Path, analysis: AnalysisConfig, layout: Layout) -> None:
    """Writes analysis/<job>.parquet for every job (and the paired sessions)."""
    run_dir = io.require_run_dir(run_dir)
    rows = final_units(load(run_dir, "rows", layout))
    sessions = load(run_dir, "sessions", layout).join(rows.select("row_id"), on="row_id")
    # per request: scanned lazily and only aggregated (joined to the final rows), never held
    final = rows.select("row_id").lazy()
    turns = scan_lazy(run_dir, "turns", layout).join(final, on="row_id")
    decisions = scan_lazy(run_dir, "decisions", layout).join(final, on="row_id")
    out = io.analysis_dir(run_dir)
    boot = analysis.bootstrap
    pairs = savings.paired(sessions, rows)
    tables = {
        "savings": savings.savings_table(pairs, seed=boot.seed, resamples=boot.resamples),
        "cache": cache.cache_table(turns, sessions, rows),
        "breakeven": breakeven.breakeven_table(
            decisions, rows, breakeven.rates(rows, load_cache_models())
        ),
        "gate": gate.gate_table(decisions, rows),
        "corpus": corpus.corpus_table(sessions, rows),
        "live": live.live_table(turns, rows),
    }
    for name, frame in tables.items():
        io.write_parquet(frame, out / f"{name}.parquet")
    io.write_parquet(pairs, out / "paired_sessions.parquet")
