"""The tool-output study's unit page (seed 000): one transcript replayed request by request
under a policy.

A unit is (priced configuration, policy) over the whole corpus, so the page lists the unit's
transcripts (`sessions`) and shows one of them (`?transcript=`, default the first):
- per request (`turns`): its time since the transcript's first request and the gap before
  it, with the TTL misses marked (`miss_ttl_expiry_tokens`); the prefix-cache map as a bar of
  cached / written / missed tokens, the missed tokens by cause (`miss_<cause>_tokens`,
  docs/tables.md), and its priced cost;
- per request, the policy's decisions on each tool output (`decisions`): the mode shown
  (exact, deterministic, keyword, model, cleared, elided, masked, truncated), why, the
  evidence, and the sizes. The tables keep sizes and decisions, not the shown text itself:
  the text the policy left, beside the original with a line diff, is recomputed from the
  run's corpus and checked against the recorded sizes (`toolout_shown.py`);
- the cost per request under every cache model: the same policy's units on the other
  configurations replay the same transcript, so their `turns.cost_usd` sit side by side;
- the gate's decisions with their hindsight regret (`gate_*` columns);
- on a live unit, the endpoint's reported prompt and cached tokens beside the predicted ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.study import UnitPage
from pipeline.study_pages import BuiltInPages
from pipeline.study_pages.toolout_shown import MAX_CHARS, MAX_OUTPUTS, ShownTexts, shown_texts
from pipeline.study_pages.toolout_times import shown_seconds, timings
from pipeline.view.runs import Run

CAUSES = ("cold_start", "rewrite", "ttl_expiry", "below_minimum", "granularity")


def _cost_by_model(
    run: Run, arm: str, transcript: str
) -> tuple[list[str], dict[int, dict[str, float]]]:
    units = run.final.filter(pl.col("arm") == arm).select("row_id", "cache_model", "config_id")
    turns = (
        run.scan("turns")
        .filter(pl.col("transcript_id") == transcript)
        .select("row_id", "request_index", "cost_usd")
        .collect()
        .join(units, on="row_id", how="inner")
    )
    models = sorted(
        {
            f"{r['cache_model']} ({r['config_id']})"
            for r in units.to_dicts()
            if r["row_id"] in set(turns["row_id"].to_list())
        }
    )
    table: dict[int, dict[str, float]] = {}
    for r in turns.to_dicts():
        table.setdefault(int(r["request_index"]), {})[f"{r['cache_model']} ({r['config_id']})"] = r[
            "cost_usd"
        ]
    return models, table


def _default_transcript(run: Run, row_id: str, sessions: pl.DataFrame) -> str | None:
    """The first transcript the gate was asked on, else the one with most outputs compacted."""
    if not sessions.height:
        return None
    gated = (
        run.scan("decisions")
        .filter((pl.col("row_id") == row_id) & pl.col("gate_approved").is_not_null())
        .select("transcript_id")
        .collect()
    )
    if gated.height:
        return str(gated.sort("transcript_id").item(0, 0))
    ranked = sessions.sort(["outputs_compacted", "transcript_id"], descending=[True, False])
    return str(ranked.item(0, "transcript_id"))


def toolout_unit(run: Run, row: Mapping[str, Any], transcript: str | None) -> dict[str, Any]:
    row_id = row["row_id"]
    sessions = run.rows_for("sessions", row_id).sort("transcript_id")
    ids = sessions["transcript_id"].to_list()
    chosen = transcript if transcript in ids else _default_transcript(run, row_id, sessions)
    requests: list[dict[str, Any]] = []
    gate: list[dict[str, Any]] = []
    shown = ShownTexts()
    models: list[str] = []
    costs: dict[int, dict[str, float]] = {}
    if chosen is not None:
        turns = (
            run.scan("turns")
            .filter((pl.col("row_id") == row_id) & (pl.col("transcript_id") == chosen))
            .collect()
            .sort("request_index")
        )
        decisions = (
            run.scan("decisions")
            .filter((pl.col("row_id") == row_id) & (pl.col("transcript_id") == chosen))
            .collect()
            .sort("request_index", "output_index")
        )
        by_request: dict[int, list[dict[str, Any]]] = {}
        for d in decisions.to_dicts():
            by_request.setdefault(int(d["request_index"]), []).append(d)
        rows = turns.to_dicts()
        for t, when in zip(rows, timings([r.get("time_s") for r in rows]), strict=True):
            total = max(1, int(t["input_tokens"] or 0))
            misses = {c: int(t.get(f"miss_{c}_tokens") or 0) for c in CAUSES}
            bar = [
                ("cached", int(t["cached_tokens"] or 0)),
                ("written", int(t["written_tokens"] or 0)),
            ]
            bar += [(f"miss-{c}", n) for c, n in misses.items() if n]
            requests.append(
                {
                    **t,
                    "bar": [(css, n, 100.0 * n / total) for css, n in bar if n],
                    "misses": {c: n for c, n in misses.items() if n},
                    "decisions": by_request.get(int(t["request_index"]), []),
                    "since_first": shown_seconds(when.since_first_s, sign="+"),
                    "gap": None if when.gap_s is None else shown_seconds(when.gap_s),
                    "ttl_missed": misses["ttl_expiry"],
                }
            )
        gate = [d for d in decisions.to_dicts() if d.get("gate_approved") is not None]
        shown = shown_texts(run, str(row["arm"]), chosen, decisions.to_dicts())
        models, costs = _cost_by_model(run, str(row["arm"]), chosen)
    return {
        "sessions": sessions.to_dicts(),
        "transcript": chosen,
        "requests": requests,
        "gate": gate,
        "models": models,
        "costs": costs,
        "live": bool(row.get("live")),
        "causes": CAUSES,
        "shown": shown,
        "shown_caps": {"outputs": MAX_OUTPUTS, "chars": MAX_CHARS},
    }


class ToolOutPages(BuiltInPages):
    """The unit page (`pipeline.study.StudyPages`), one transcript at a time."""

    preload: tuple[str, ...] = ("sessions",)  # turns and decisions: one transcript, scanned

    def unit(self, run: Run, row: Mapping[str, Any], params: Mapping[str, str]) -> UnitPage:
        return UnitPage("unit_toolout.html", toolout_unit(run, row, params.get("transcript")))


PAGES = ToolOutPages()
