"""End to end on the embedded default: real llama.cpp servers, real tiny models, real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.local_model, pytest.mark.ray, pytest.mark.slow]


def _pipeline(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m pipeline ARGS` from the checkout; asserts exit 0, naming stderr's tail."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_default_local_panel_sweep_writes_real_valid_rows_for_both_models(tmp_path: Path) -> None:
    done = _pipeline(
        "sweep", "arms=[j,x]", "repeats=1", f"out_dir={tmp_path}", "progress=false", timeout=1200
    )
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["counts"]["planned"] == 4
    rows = pq.read_table(run_dir / "rows").to_pylist()
    assert {r["config_id"] for r in rows if r["valid"]} == {
        "local-smollm2-135m-q4_1",
        "local-gemma3-270m-base-q4_k_m",
    }
    assert not any(r["simulated"] for r in rows)
    assert all(r["folds"] == 3 and r["answer_text"] is not None for r in rows)
    ledger = [r for r in rows if r["arm"] == "x"]
    assert ledger and all("## Ledger" in r["final_carrier"] for r in ledger)
    # issue 9: schemas go out as the arms declare them, and the prefix cache is reported
    assert not any(r["schema_adapted"] for r in rows if r["arm"] == "j")
    assert sum(r["cached_tokens"] for r in rows) > 0
    servers = manifest["extra"]["local_servers"]
    assert set(servers) == {r["config_id"] for r in rows}
    for described in servers.values():
        assert described["server"] == "llama-server"
        assert described["props"]["total_slots"] == 2
        assert described["differs_from_hosted"]
        assert "LLAMA_API_KEY" not in json.dumps(described["argv"])
    report = (run_dir / "analysis" / "report.md").read_text()
    assert not report.startswith("SIMULATED")
    _the_floor_gives_no_decision_with_the_retention_fallback(run_dir, tmp_path / "decision")


def _the_floor_gives_no_decision_with_the_retention_fallback(run_dir: Path, out: Path) -> None:
    """Issue 34's floor case: tiny models recall almost nothing, so `decide` recommends no
    carrier and falls back on the carrier retention contrast, saying so."""
    _pipeline("decide", str(run_dir), "--out", str(out), timeout=300)
    decision = json.loads((out / "decision.json").read_text())
    (carrier,) = decision["decisions"]
    assert carrier["simulated"] is False
    answers = {(a["question"], a["subject"]): a for a in carrier["answers"]}
    recall = answers[
        ("carrier: which representation should the compaction summariser write?", "panel")
    ]
    assert recall["recommendation"] is None
    assert recall["reason"].startswith("recall is at the floor")
    assert "falling back on the carrier retention contrast" in recall["reason"]
    assert any(q.startswith("carrier (fallback, recall undecided)") for q, _ in answers)
    assert all(not p["recommendations"] for p in decision["recommendations"])
