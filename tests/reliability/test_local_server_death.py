"""A local server that dies with SIGILL stops the sweep with one line (issue 9).

The embedded panel's servers are replaced by a stand-in `llama-server` that kills itself with
SIGILL on its first completion, as a build with AMX instructions does on a CPU that traps
them. The sweep must say so (signal, meaning, fix) after a bounded number of restarts, exit
non-zero, and never turn it into `unreachable` probe verdicts or an empty analysis.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pipeline.endpoints.local_pool import MAX_RESTARTS
from tests.endpoints.standin_llama import standin_env
from tests.reliability.harness import PROJECT, SweepHarness

pytestmark = pytest.mark.slow


def test_sigill_on_first_request_stops_the_sweep_with_the_signal_meaning_and_fix(
    tmp_path: Path,
) -> None:
    env = standin_env(tmp_path, "sigill_on_completion")
    harness = SweepHarness(extra_env=env)
    try:
        proc = subprocess.run(
            harness.command([f"out_dir={tmp_path / 'runs'}"]),
            cwd=PROJECT,
            env=harness.env,
            capture_output=True,
            timeout=120,
            start_new_session=True,
            check=False,
        )
    finally:
        harness.close()
    stderr = proc.stderr.decode(errors="replace")
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 4, stderr  # failed: a server could not start (summary.py)
    assert len(errors) == 1, stderr
    assert "died with SIGILL" in errors[0]
    assert "CPU instructions this machine cannot run" in errors[0]
    assert "make llama-server-rebuild" in errors[0]
    assert "Traceback" not in stderr
    assert "unreachable" not in stderr and "nothing to analyze" not in stderr
    launches = [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    per_port = Counter(a["argv"][a["argv"].index("--port") + 1] for a in launches)
    # the server that gave up was launched once and restarted MAX_RESTARTS times, no more;
    # its sibling is cancelled then, wherever its own restarts had got to
    assert max(per_port.values()) == 1 + MAX_RESTARTS
    assert all(n <= 1 + MAX_RESTARTS for n in per_port.values())
    keys = {a["key"] for a in launches}
    assert len(keys) == 1 and None not in keys  # one per-run key, through the environment
    (run_dir,) = (tmp_path / "runs").iterdir()
    for log in (run_dir / "logs").glob("*.log"):
        assert next(iter(keys)) not in log.read_text()
