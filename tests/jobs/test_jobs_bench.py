"""The benchmark script runs end to end at a tiny scale (the full run is documented)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_analysis.py"


@pytest.mark.slow
def test_bench_script_prints_each_step_against_the_baseline(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--configs",
            "2",
            "--repeats",
            "3",
            "--parts",
            "2",
            "--keep",
            str(tmp_path / "run"),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = result.stdout.splitlines()
    assert re.match(r"synthesized [\d,]+ rows and [\d,]+ check rows", lines[0])
    assert [line.split()[0] for line in lines[2:]] == ["baseline", "resume_keys", "analyze"]
    assert (tmp_path / "run" / "analysis" / "report.md").read_text().startswith("SIMULATED")
