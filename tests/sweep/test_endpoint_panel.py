"""`+panel=endpoint` against a standalone `serve sim` process: any OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_sweep_against_a_user_endpoint_marks_simulator_rows(tmp_path: Path) -> None:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    server = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "sim", "--scenario", "small", "--seed", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        base_url, model = server.stdout.readline().split()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline",
                "sweep",
                "+panel=endpoint",
                f"endpoint.base_url={base_url}",
                f"endpoint.model={model}",
                "endpoint.response_format=json_schema",
                "arms=[j,q]",
                "repeats=1",
                f"out_dir={tmp_path}",
                "progress=false",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["counts"] == {
        "planned": 2,
        "valid": 2,
        "invalid": {},
        "not_run": {},
        "pending": 0,
    }
    rows = pq.read_table(run_dir / "rows").to_pylist()
    assert all(r["simulated"] for r in rows)  # the simulator says so in every reply
    assert (run_dir / "analysis" / "report.md").read_text().startswith("SIMULATED")
