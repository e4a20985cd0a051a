"""The bloat scan of the run's real traces (seed 002; issue 21): tables, figures, report lines.

The sweep scans every real trace before sampling (the shipped corpus, or the user's
`study.compression.user_jsonl`) and records the per-trace records, without text, in the run's
`trace_scan.json`; this job rebuilds `pipeline.traces.scan.ScanResult` from them, so the report
is a function of the run's recorded inputs. Outputs: `trace_scan.parquet` (one row per trace)
and `trace_scan_bands.parquet` (one row per band), `trace_lengths.png`, `trace_quality.png`.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from jobs.figures_common import save_figure
from jobs.traces.scan_figures import SCAN_SCHEMA, length_histogram, quality_by_band
from pipeline.store import RunDirError
from pipeline.traces.compression.bands import labels
from pipeline.traces.scan import QUALITIES, ScanResult, TraceRecord
from pipeline.traces.study import SCAN_FILE

BAND_SCHEMA = {
    "band": pl.String,
    "traces": pl.Int64,
    "share": pl.Float64,
    "self_correction": pl.Float64,
    "hedging": pl.Float64,
    "repetition": pl.Float64,
}


def read_scan(run_dir: Path) -> ScanResult | None:
    """The run's scan; None for a run recorded before the scan existed."""
    path = run_dir / SCAN_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        records = tuple(TraceRecord(**r) for r in data["records"])
        return ScanResult(records, int(data["duplicates_removed"]), tuple(data["edges"]))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise RunDirError(f"{path} is not a trace scan ({exc}); the run dir was altered") from exc


def scan_tables(result: ScanResult | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    if result is None:
        return pl.DataFrame([], schema=SCAN_SCHEMA), pl.DataFrame([], schema=BAND_SCHEMA)
    records = pl.DataFrame([vars(r) for r in result.records], schema=SCAN_SCHEMA)
    bands = pl.DataFrame([vars(b) for b in result.by_band()], schema=BAND_SCHEMA)
    return records, bands


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def scan_section(out: Path, result: ScanResult | None, *, simulated: bool) -> list[str]:
    lines = ["## The traces themselves: length and quality (the seed's bloat scan)", ""]
    if result is None:
        return [*lines, "This run recorded no trace_scan.json (it predates the scan).", ""]
    if result.count == 0:
        return [*lines, "No real trace was read: nothing to scan.", ""]
    s = result.summary()
    per = s["bytes_per_session"]
    assert isinstance(per, dict)
    sources = ", ".join(f"{k} {v}" for k, v in dict(s["sources"]).items())  # type: ignore[call-overload]
    lines += [
        f"Every real trace of this run before sampling ({sources}): **{result.count} traces** "
        f"in {s['sessions']} sessions ({result.duplicates_removed} repeated texts removed "
        f"first). Length in characters: median **{s['median_chars']}**, p90 {s['p90_chars']}, "
        f"p99 **{s['p99_chars']}**, max {s['max_chars']}; {s['chars_total']} characters in all. "
        "At or above each band edge: "
        + ", ".join(f"{e:,} chars {_pct(result.share_at_least(e))}" for e in result.edges)
        + f". Reasoning per session (UTF-8 bytes): median {per['median']:,.0f}, mean "
        f"{per['mean']:,.0f}, max {per['max']:,}. (The seed's own history: 227,499 traces, "
        "median 775, p99 17,282.)",
        "",
        "Trace quality, by **pattern heuristics** (pipeline/traces/scan/quality.py; "
        'docs/traces.md, "Reasoning traces: the scan"), not a judgement of quality: '
        + ", ".join(f"{q.replace('_', '-')} {_pct(result.quality_share(q))}" for q in QUALITIES)
        + " of traces. (The seed: about half self-correct, a third hedge, little repetition.)",
        "",
        "| band | traces | share | self-correction | hedging | repetition |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {b.band} | {b.traces} | {_pct(b.share)} | {_pct(b.self_correction)} | "
        f"{_pct(b.hedging)} | {_pct(b.repetition)} |"
        for b in result.by_band()
    ]
    records, _ = scan_tables(result)
    save_figure(
        length_histogram(records, result.edges), out / "trace_lengths.png", simulated=simulated
    )
    save_figure(
        quality_by_band(records, labels(result.edges)),
        out / "trace_quality.png",
        simulated=simulated,
    )
    lines += ["", "![trace lengths](trace_lengths.png) ![trace quality](trace_quality.png)", ""]
    return lines
