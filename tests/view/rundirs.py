"""Small run directories of each study for the viewer's tests.

- `traces_run`: the jobs' hand-written traces run (tests/jobs/traces_rundir.py) with the
  manifest and plan a sweep would add, analyzed and reported. Fast: no sweep.
- `sweep_run`: a real `python -m pipeline sweep` (carrier on the sim panel, toolout offline on
  one corpus), for the browser tests; a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config.schema import AnalysisConfig, BootstrapConfig
from pipeline.store import (
    Manifest,
    outcome_counts,
    provenance_lock,
    read_table,
    write_manifest,
    write_plan,
)
from tests.jobs import traces_rundir

ROOT = Path(__file__).resolve().parents[2]


def _plan_from_rows(run_dir: Path, study: str) -> None:
    from pipeline import studies

    layout = studies.layout(studies.definition(study))
    rows = pl.from_arrow(read_table(run_dir, "rows", layout))
    assert isinstance(rows, pl.DataFrame)
    plan = rows.select(
        "run_id",
        "config_id",
        "model",
        "family",
        "arm",
        "execution_group",
        "repeat",
        "schedule_position",
        pl.lit("done").alias("status"),
        pl.lit(None, dtype=pl.String).alias("not_run_reason"),
    )
    write_plan(run_dir, plan.to_arrow())


def traces_run(run_dir: Path, *, simulated: bool = True) -> Path:
    """A traces run dir with manifest, plan and report; `simulated` marks its rows so."""
    from pipeline import studies
    from pipeline.studies.traces import DEFINITION

    traces_rundir.write_run(run_dir, simulated=simulated)
    _plan_from_rows(run_dir, "traces")
    layout = studies.layout(DEFINITION)
    manifest = Manifest(
        run_id=traces_rundir.RUN_ID,
        config={"repeats": 1, "study": {"name": "traces"}},
        config_fingerprint="0" * 64,
        started_at="2026-12-02T00:00:00Z",
        study="traces",
        status="completed",
        provenance=provenance_lock(
            [run_dir / "chat_templates.json", run_dir / "trace_items.json"], root=run_dir
        ),
    )
    from pipeline.store.reader import read_plan

    plan = read_plan(run_dir)
    assert plan is not None
    counts = outcome_counts(plan, read_table(run_dir, "rows", layout))
    write_manifest(run_dir, manifest.finish("completed", counts))
    analysis = AnalysisConfig(bootstrap=BootstrapConfig(resamples=50))
    studies.analyze_and_report(DEFINITION, run_dir, analysis)
    return run_dir


def sweep_run(out_dir: Path, overrides: list[str]) -> Path:
    """Runs a sweep into `out_dir`; returns the run directory it printed."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "sweep",
            *overrides,
            f"out_dir={out_dir}",
            "progress=false",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = Path(result.stdout.strip().splitlines()[-1])
    assert (run_dir / "manifest.json").is_file(), result.stdout[-2000:]
    return run_dir


def manifest(run_dir: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run_dir / "manifest.json").read_text())
    return data


CARRIER = ["+panel=sim", "sim.configs=2", "arms=[j,q]", "repeats=1", "scenario=small"]
TOOLOUT = ["study=toolout", "study.corpora=[openhands]"]


CARRIER_ROW = "cfg-a/j/g0/r0/a0"
FIXTURE = {
    "chunks": [
        {"index": 0, "messages": [{"role": "user", "content": "the ingress port is 23857"}]},
        {"index": 1, "messages": [{"role": "user", "content": "state path /srv/x.lock"}]},
        {"index": 2, "messages": [{"role": "user", "content": "unrelated chatter"}]},
    ],
    "planted": [
        {"label": "ingress port", "value": "23857", "graded": True, "chunk": 0},
        {"label": "noise id", "value": "TN-1", "graded": False, "chunk": 2},
    ],
}


def finish_run(run_dir: Path, run_id: str, study: str) -> None:
    """The plan (every unit done) and the completed manifest of a run whose rows are written."""
    from pipeline import studies
    from pipeline.store.reader import read_plan

    _plan_from_rows(run_dir, study)
    plan = read_plan(run_dir)
    assert plan is not None
    manifest = Manifest(
        run_id=run_id,
        config={"repeats": 1},
        config_fingerprint="0" * 64,
        started_at="2026-12-02T00:00:00Z",
        study=study,
        status="completed",
    )
    layout = studies.layout(studies.definition(study))
    counts = outcome_counts(plan, read_table(run_dir, "rows", layout))
    write_manifest(run_dir, manifest.finish("completed", counts))


def full(layout: Any, table: str, records: list[dict[str, object]]) -> list[dict[str, object]]:
    """Records with every column of the table (null where a test does not care)."""
    return [{**dict.fromkeys(layout.schema(table).names), **r} for r in records]


def study_row(study: str, **values: object) -> dict[str, object]:
    """A rows-table record of `study` with every column (null where a test does not care): a
    valid, non-simulated first attempt (seed 1, no request) in group 0, repeat 0, slot 0 unless
    `values` say otherwise; its row_id is `config_id/arm/gG/rR/aA` unless given."""
    from pipeline import studies
    from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME

    columns = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)]
    columns += [c.name for c in studies.definition(study).row_columns]
    unit: dict[str, object] = {"execution_group": 0, "repeat": 0, "attempt": 0}
    unit |= {"schedule_position": 0, "seed": 1, "simulated": False, "requests": 0}
    record = {**dict.fromkeys(columns), **unit, "valid": True, "retryable": False, **values}
    if "row_id" not in values:
        g, r, a = (record[k] for k in ("execution_group", "repeat", "attempt"))
        record["row_id"] = f"{record['config_id']}/{record['arm']}/g{g}/r{r}/a{a}"
    return record


def carrier_run(run_dir: Path) -> Path:
    """A one-unit carrier run written through the store: a catch-up fold (chunks 1,2) and a
    clipped one, two checks (one passed), a fixture, a manifest and a plan."""
    from pipeline import studies
    from pipeline.store import write_batch
    from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME

    definition = studies.definition("carrier")
    layout = studies.layout(definition)
    names = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in definition.row_columns]
    row: dict[str, object] = dict.fromkeys(names)
    row.update(
        run_id="run-c",
        row_id=CARRIER_ROW,
        config_id="cfg-a",
        model="m",
        arm="j",
        execution_group=0,
        repeat=0,
        attempt=0,
        schedule_position=0,
        seed=1,
        simulated=True,
        valid=True,
        retryable=False,
        requests=3,
        recall=0.5,
        checks_passed=1,
        checks_total=2,
        final_carrier="## Facts\ningress port: 23857\nTN-1",
        answer_text="ingress port: 23857\nstate path: unknown",
    )
    fold = {"run_id": "run-c", "row_id": CARRIER_ROW, "finish_reason": "stop"}
    folds = [
        {
            **fold,
            "fold_index": 0,
            "chunks": "0",
            "carried_text": "ingress port: 23857",
            "clipped": False,
            "usable": True,
        },
        {
            **fold,
            "fold_index": 1,
            "chunks": "1,2",
            "clipped": True,
            "usable": True,
            "carried_text": "## Facts\ningress port: 23857\nTN-1",
        },
    ]
    check = {"run_id": "run-c", "row_id": CARRIER_ROW}
    checks = [
        {
            **check,
            "label": "ingress port",
            "kind": "port",
            "expected": "23857",
            "answered": "23857",
            "passed": True,
            "present_in_carrier": True,
            "outcome": "passed",
        },
        {
            **check,
            "label": "state path",
            "kind": "path",
            "expected": "/srv/x.lock",
            "answered": "unknown",
            "passed": False,
            "present_in_carrier": False,
            "outcome": "abstention",
        },
    ]
    run_dir.mkdir(parents=True, exist_ok=True)
    write_batch(
        run_dir,
        part_name="p0",
        rows=[row],
        children={"folds": full(layout, "folds", folds), "checks": full(layout, "checks", checks)},
        layout=layout,
    )
    (run_dir / "fixture.json").write_text(json.dumps(FIXTURE), encoding="utf-8")
    finish_run(run_dir, "run-c", "carrier")
    return run_dir


def toolout_run(run_dir: Path) -> Path:
    """A toolout run written through the store: policy `model` on two cache models, one
    transcript of two requests; request 1 has a rewrite miss and a gate decision."""
    from pipeline import studies
    from pipeline.store import write_batch
    from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME

    definition = studies.definition("toolout")
    layout = studies.layout(definition)
    names = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in definition.row_columns]
    for n, (config, model, costs) in enumerate(
        [("anthropic:c", "anthropic", (0.01, 0.02)), ("openai:g", "openai", (0.03, 0.04))]
    ):
        row_id = f"{config}/model/g0/r0/a0"
        row: dict[str, object] = dict.fromkeys(names)
        row.update(
            run_id="run-t",
            row_id=row_id,
            config_id=config,
            model="m",
            arm="model",
            execution_group=0,
            repeat=0,
            attempt=0,
            schedule_position=0,
            seed=1,
            simulated=False,
            valid=True,
            retryable=False,
            requests=0,
            cache_model=model,
            live=False,
            transcripts=1,
            replayed_requests=2,
        )
        head = {"run_id": "run-t", "row_id": row_id, "transcript_id": "swe-agent/demo"}
        turn = {**head, "corpus": "swe-agent", "time_assumed": False, "output_tokens": 5}
        turns = [
            {
                **turn,
                "request_index": 0,
                "time_s": 1_746_000_000.0,  # epoch seconds, as a recorded transcript has
                "input_tokens": 100,
                "cached_tokens": 0,
                "written_tokens": 0,
                "uncached_tokens": 100,
                "miss_cold_start_tokens": 100,
                "cost_usd": costs[0],
            },
            {
                **turn,
                "request_index": 1,
                "time_s": 1_746_000_330.0,  # after a 5-minute TTL: part of its prefix expired
                "input_tokens": 200,
                "cached_tokens": 60,
                "written_tokens": 0,
                "uncached_tokens": 140,
                "miss_rewrite_tokens": 40,
                "miss_cold_start_tokens": 100,
                "miss_ttl_expiry_tokens": 20,
                "cost_usd": costs[1],
            },
        ]
        decisions = [
            {
                **head,
                "output_index": 0,
                "request_index": 1,
                "tool_name": "bash",
                "mode": "keyword",
                "reason": "transformed",
                "detail": "rules[0] *",
                "original_bytes": 900,
                "shown_bytes": 120,
                "gate_approved": True,
                "gate_reason": "approved",
                "gate_assumed_requests": 6.0,
                "later_requests": 0,
                "gate_net_usd": 0.5,
                "gate_would_flip": True,
                "gate_regret_usd": 0.25,
            },
        ]
        sessions = [
            {
                **head,
                "corpus": "swe-agent",
                "requests": 2,
                "tool_outputs": 1,
                "input_tokens": 300,
                "cached_tokens": 60,
                "cost_usd": sum(costs),
                "bytes_removed": 780,
                "outputs_compacted": 1,
            }
        ]
        children = {
            "turns": full(layout, "turns", turns),
            "decisions": full(layout, "decisions", decisions),
            "sessions": full(layout, "sessions", sessions),
        }
        write_batch(run_dir, part_name=f"p{n}", rows=[row], children=children, layout=layout)
    finish_run(run_dir, "run-t", "toolout")
    return run_dir
