"""`python -m pipeline sweep` ends by its outcome: exit code, one line or a summary, a report.

Each test runs real sweeps (Ray, sim servers or a dead port) as marked subprocesses through
the reliability harness, so whatever they start is found and reaped by marker.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.harness import (
    PROJECT,
    RUN_DIR_PREFIX,
    SweepHarness,
)

pytestmark = [pytest.mark.slow, pytest.mark.ray]

TIMEOUT_S = 240.0
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
SLOW_SIM = ("+panel=sim", "sim.configs=2", "arms=[j,q]", "repeats=4", "sim.latency_s=0.3")
FATAL_LINE = (
    "local server sim-00 died from SIGILL: the build uses CPU instructions this machine cannot run"
)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def manifest_of(run_dir: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((run_dir / "manifest.json").read_text())
    return loaded


def test_a_sweep_where_no_trajectory_can_run_exits_3_naming_the_cause_and_writes_a_report(
    harness: SweepHarness, tmp_path: Path
) -> None:
    result = harness.run(
        [
            "+panel=endpoint",
            f"endpoint.base_url={DEAD_URL}",
            "endpoint.model=x",
            "retry.request_attempts=2",  # a refused port is retried; two tries say it
            f"out_dir={tmp_path}",
        ],
        timeout_s=TIMEOUT_S,
    )
    assert result.returncode == 3, result.stderr[-3000:]
    assert "nothing to analyze" not in result.stderr
    assert error_lines(result.stderr) == [
        f"error: 1 of 1 configuration unreachable: connection refused at {DEAD_URL}"
    ]
    run_dir = result.run_dir
    assert run_dir is not None
    assert result.stdout.strip() == str(run_dir)  # stdout holds only the run directory
    assert (run_dir / "plan.parquet").is_file()
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "nothing_ran"
    counts = manifest["counts"]
    assert isinstance(counts, dict) and counts["valid"] == 0
    assert counts["not_run"] == {"probe:unreachable": counts["planned"]}
    report = run_dir / "analysis" / "report.md"
    assert f"report: {report}" in result.stderr
    first = report.read_text(encoding="utf-8").splitlines()[0]
    assert (
        first == f"Nothing ran: 1 of 1 configuration unreachable: connection refused at {DEAD_URL}."
    )
    assert f"| unreachable | connection refused at {DEAD_URL} (" in report.read_text()


@pytest.mark.parametrize("study", ["toolout", "traces"])
def test_every_study_where_nothing_can_run_exits_3_with_a_report_that_opens_with_why(
    harness: SweepHarness, tmp_path: Path, study: str
) -> None:
    """Issue 18: the nothing-ran frame is the engine's, not the carrier's (toolout and traces
    ended with exit 2, "nothing to analyze"). toolout prices its replay by the provider's cache
    model, so its endpoint (same URL) names a priced provider and model in a panel file; a
    bare `endpoint.model=x` is refused up front in one line (no cache model for provider '')."""
    endpoint = [f"endpoint.base_url={DEAD_URL}", "endpoint.model=x"]
    if study == "toolout":
        panel = tmp_path / "panel.yaml"
        panel.write_text(
            "configs: [{config_id: endpoint-x, model: gpt-5, family: openai, provider: openai, "
            f"base_url: '{DEAD_URL}'}}]\n",
            encoding="utf-8",
        )
        endpoint = [f"endpoint.panel_file={panel}"]
    result = harness.run(
        [
            f"study={study}",
            "+panel=endpoint",
            *endpoint,
            "retry.request_attempts=2",
            f"out_dir={tmp_path / 'runs'}",
        ],
        timeout_s=TIMEOUT_S,
    )
    assert result.returncode == 3, result.stderr[-3000:]
    assert "nothing to analyze" not in result.stderr
    cause = f"1 of 1 configuration unreachable: connection refused at {DEAD_URL}"
    assert error_lines(result.stderr) == [f"error: {cause}"]
    run_dir = result.run_dir
    assert run_dir is not None
    assert manifest_of(run_dir)["status"] == "nothing_ran"
    assert manifest_of(run_dir)["study"] == study
    text = (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"Nothing ran: {cause}."
    assert "## Why, per configuration" in text


def start_and_announce(
    harness: SweepHarness, overrides: list[str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a sweep and wait for its `run directory:` line on stderr."""
    proc = harness.start(overrides)
    assert proc.stderr is not None
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode(errors="replace")
        if line.startswith(RUN_DIR_PREFIX):
            return proc, Path(line[len(RUN_DIR_PREFIX) :].strip())
        if not line and proc.poll() is not None:
            break
    harness.kill(proc)
    raise AssertionError("the sweep never announced its run directory")


def stop_with(
    proc: subprocess.Popen[bytes], signum: int, after_s: float, run_dir: Path
) -> tuple[int, str, str]:
    """Signal a sweep `after_s` after its plan is written: a sweep under way. (A signal before
    the plan exists ends the run failed and unresumable, by design: test_plan_bounds.py.)"""
    deadline = time.monotonic() + TIMEOUT_S
    while not (run_dir / "plan.parquet").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no plan was written"
        time.sleep(0.05)
    time.sleep(after_s)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=TIMEOUT_S)
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def test_sigint_stops_the_sweep_with_exit_130_and_its_resume_command_completes_it(
    harness: SweepHarness, tmp_path: Path
) -> None:
    proc, run_dir = start_and_announce(harness, [*SLOW_SIM, f"out_dir={tmp_path}"])
    code, out, err = stop_with(proc, signal.SIGINT, after_s=0.5, run_dir=run_dir)
    harness.reap(grace_s=10.0)
    assert code == 130, err[-3000:]
    resume = f"python -m pipeline sweep resume={run_dir}"
    assert any(
        line.startswith("stopped by SIGINT") and line.endswith(f"resume with: {resume}")
        for line in err.splitlines()
    ), err[-3000:]
    assert out.strip() == str(run_dir)
    assert manifest_of(run_dir)["status"] == "stopped"
    assert (run_dir / "analysis" / "report.md").is_file()

    # The printed command continues the run; a completed sweep prints its summary paragraph.
    done = harness.run([f"resume={run_dir}"], timeout_s=TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(run_dir)
    text = " ".join(done.stderr.split())
    assert "SIMULATED run:" in text
    assert "Sweep completed. Planned 16: valid 16; invalid by reason: none" in text
    assert "not run by reason: none" in text and "Cost USD" in text
    assert f"Report: {run_dir / 'analysis' / 'report.md'}." in text
    assert manifest_of(run_dir)["status"] == "completed"


def test_sigterm_stops_the_sweep_with_exit_143_and_its_resume_command(
    harness: SweepHarness, tmp_path: Path
) -> None:
    proc, run_dir = start_and_announce(harness, [*SLOW_SIM, f"out_dir={tmp_path}"])
    code, _, err = stop_with(proc, signal.SIGTERM, after_s=0.5, run_dir=run_dir)
    assert code == 143, err[-3000:]
    assert f"resume with: python -m pipeline sweep resume={run_dir}" in err
    assert manifest_of(run_dir)["status"] == "stopped"


# Runs the CLI with EndpointServers replaced by a subclass whose `fatal` is set a moment after
# the plan is written, as the local-server supervisor sets it when a server crash-loops.
FATAL_RUNNER = f"""
import sys, time
from pipeline.sweep import execute
from pipeline.sweep.servers import EndpointServers

class DyingServers(EndpointServers):
    _since = None

    @property
    def fatal(self):
        if not (self.log_dir.parent / "plan.parquet").exists():
            return None
        self._since = self._since or time.monotonic()
        return {FATAL_LINE!r} if time.monotonic() - self._since > 1.0 else None

    @fatal.setter
    def fatal(self, value):
        pass

execute.EndpointServers = DyingServers
from pipeline.cli import main
sys.exit(main(["sweep", *sys.argv[1:]]))
"""


def run_patched_cli(
    runner: str, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`sweep` on the slow sim panel, through a runner script that patches the engine first."""
    return subprocess.run(
        [sys.executable, "-c", runner, "progress=false", *SLOW_SIM, *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        start_new_session=True,
        check=False,
    )


def test_a_fatal_server_stops_the_sweep_failed_with_exit_4_and_its_line(
    harness: SweepHarness, tmp_path: Path
) -> None:
    args = ["repeats=8", "sim.concurrency=1", f"out_dir={tmp_path}"]  # 2 in flight each
    done = run_patched_cli(FATAL_RUNNER, args, harness.env)
    harness.reap(grace_s=10.0)
    assert done.returncode == 4, done.stderr[-3000:]
    assert error_lines(done.stderr) == [f"error: {FATAL_LINE}"]
    run_dir = Path(done.stdout.strip())
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "failed"
    extra = manifest["extra"]
    assert isinstance(extra, dict) and extra["error"] == FATAL_LINE
    counts = manifest["counts"]
    assert isinstance(counts, dict)
    assert counts["not_run"].get("failed", 0) > 0  # it stopped before the end


# Runs the CLI with EndpointServers replaced by one that fails to start, naming the orphan
# marker the environment held when the servers were started (llama-servers inherit it).
MARKER_RUNNER = """
import os, sys
from pipeline.sweep import execute
from pipeline.sweep.orphans import MARKER_VAR
from pipeline.usererror import UserError

class MarkedServers:
    def __init__(self, *args, **kwargs):
        raise UserError(f"servers started with marker {os.environ.get(MARKER_VAR)}")

execute.EndpointServers = MarkedServers
from pipeline.cli import main
sys.exit(main(["sweep", *sys.argv[1:]]))
"""


def test_servers_start_with_the_runs_orphan_marker_so_a_resume_can_stop_them(
    harness: SweepHarness, tmp_path: Path
) -> None:
    from pipeline.sweep.orphans import ray_temp_dir

    env = {k: v for k, v in harness.env.items() if k != "FOLDSWEEP_RAY_TEMP_DIR"}
    done = run_patched_cli(MARKER_RUNNER, [f"out_dir={tmp_path}"], env)
    harness.reap(grace_s=10.0)
    run_dir = Path(done.stdout.strip())
    marker = Path(ray_temp_dir(run_dir)).name  # under the harness's own TMPDIR
    [line] = error_lines(done.stderr)
    assert line.startswith("error: servers started with marker /"), line
    assert line.endswith(f"/{marker}"), line
