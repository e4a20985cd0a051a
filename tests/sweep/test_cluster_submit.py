"""A two-node loopback Ray cluster runs a submitted sim sweep (marked ray: CI runs it)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_env() -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env.update(
        PATH=f"{bindir}:{env.get('PATH', '')}",
        RAY_USAGE_STATS_ENABLED="0",
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        RAY_AUTH_MODE="disabled",
        PYTHON=sys.executable,
    )
    env.pop("RAY_ADDRESS", None)
    return env


def ray_cli(*args: str, env: dict[str, str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def node_ports() -> list[str]:
    """Free ports for a node's agents: the defaults (e.g. 52365) collide between two nodes on
    one machine, and with any other Ray instance, and then job submission finds no agent."""
    return [
        f"--dashboard-agent-listen-port={free_port()}",
        f"--dashboard-agent-grpc-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
        f"--metrics-export-port={free_port()}",
    ]


@pytest.fixture
def cluster() -> Iterator[tuple[str, dict[str, str]]]:
    """Head + worker node with node IP 127.0.0.1, stopped by their own PIDs (never `ray stop`).

    `ray start` refuses a second node unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1; with it, and
    --node-ip-address=127.0.0.1 on both nodes, they talk over loopback.
    """
    before = _pids()
    temp = Path(tempfile.mkdtemp(prefix="rayfs", dir="/tmp"))
    env = {**cluster_env(), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", "RAY_TMPDIR": str(temp)}
    gcs, dash = free_port(), free_port()
    common = ["--node-ip-address=127.0.0.1", f"--temp-dir={temp}", "--disable-usage-stats"]
    try:
        ray_cli(
            "start",
            "--head",
            f"--port={gcs}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}",
            "--num-cpus=1",
            *common,
            *node_ports(),
            env=env,
        )
        ray_cli(
            "start",
            f"--address=127.0.0.1:{gcs}",
            "--num-cpus=1",
            '--resources={"worker": 1}',
            *common,
            *node_ports(),
            env=env,
        )
        yield f"http://127.0.0.1:{dash}", env
    finally:
        _kill_processes_under(temp)
        _kill_new_ray_processes(before)
        shutil.rmtree(temp, ignore_errors=True)


def _pids() -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit()}


def _renamed_ray(pid: int) -> bool:
    """Ray renames its agents and workers (`ray::DashboardAgent`), clobbering argv and environ."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::")
    except OSError:
        return False


def _kill_new_ray_processes(before: set[int]) -> None:
    """Renamed Ray processes born during the test (tests run one at a time in CI)."""
    for pid in _pids() - before:
        if _renamed_ray(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _kill_processes_under(temp: Path) -> None:
    """SIGKILL every process whose command line or environment (from /proc) names `temp`.

    Ray renames some processes (`ray::DashboardAgent`), so the command line alone misses
    them; every process of the cluster inherits RAY_TMPDIR, set to `temp`.
    """
    for _ in range(20):  # a dying raylet can still spawn; sweep until nothing matches
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes()
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if str(temp).encode() in command or str(temp).encode() in environ:
                found.append(int(entry))
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def test_submitted_sim_sweep_completes_on_a_two_node_cluster(
    cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, env = cluster
    out_dir = tmp_path / "runs"
    command = [
        str(ROOT / "scripts" / "submit"),
        "--address",
        address,
        "--",
        "+panel=sim",
        "sim.configs=2",
        "arms=[j,q]",
        "repeats=1",
        f"out_dir={out_dir}",
    ]
    deadline = time.monotonic() + 300  # the job agent registers some time after the nodes
    while True:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        if "No available agent" not in done.stderr or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = list(out_dir.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["counts"]["planned"] == 4 and manifest["counts"]["valid"] == 4
    assert (run_dir / "analysis" / "report.md").read_text().startswith("SIMULATED")
