"""scripts/submit: a loopback Ray cluster runs a submitted sim sweep, a cluster whose `python`
lacks the project fails in one line (both marked ray and slow: CI runs them), and the
submit helpers' pure parts (fast, no Ray)."""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = ROOT / "scripts" / "submit"
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))  # scripts/_submit.py imports _preflight
preflight: Any = importlib.import_module("_preflight")
submit: Any = importlib.import_module("_submit")
cluster_test = [pytest.mark.ray, pytest.mark.slow]


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A port free now and never handed out before in this process: two binds to port 0 in a
    row can return the same number, and Ray refuses a node whose components share a port."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


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


@contextlib.contextmanager
def loopback_cluster(
    env: dict[str, str], temp: Path, workers: int
) -> Iterator[tuple[str, dict[str, str]]]:
    """A head (+ `workers` worker nodes) with node IP 127.0.0.1 and its own --temp-dir and
    ports, stopped by its own PIDs (never `ray stop`, which stops every cluster on the machine).

    `ray start` refuses a second node unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1; with it, and
    --node-ip-address=127.0.0.1 on both nodes, they talk over loopback.
    """
    env = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1", "RAY_TMPDIR": str(temp)}
    # Ray renames its processes (`ray::IDLE`); with SPT_NOENV=1 the renaming leaves their
    # environment, and so RAY_TMPDIR, intact for _kill_processes_under.
    env["SPT_NOENV"] = "1"
    gcs, dash = free_port(), free_port()
    common = ["--node-ip-address=127.0.0.1", f"--temp-dir={temp}", "--disable-usage-stats"]
    try:
        ray_cli(
            "start",
            "--head",
            f"--port={gcs}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}",
            f"--ray-client-server-port={free_port()}",  # default 10001: shared machine-wide
            "--num-cpus=1",
            *common,
            *node_ports(),
            env=env,
        )
        for _ in range(workers):
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


@pytest.fixture
def cluster() -> Iterator[tuple[str, dict[str, str]]]:
    """Head + worker node, started from the test's venv (its bin first on PATH)."""
    temp = Path(tempfile.mkdtemp(prefix="rayfs", dir="/tmp"))
    try:
        with loopback_cluster(cluster_env(), temp, workers=1) as started:
            yield started
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def bare_venv(where: Path) -> Path:
    """A fresh venv without the project or its dependencies (nor pip): its bin directory."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=60
    )
    return where / "bin"


@pytest.fixture
def bare_path_cluster() -> Iterator[tuple[str, dict[str, str], Path]]:
    """The bug's setup: a head started with the project venv's Ray (`.venv/bin/ray start`,
    not activated) from a shell whose `python` is a bare venv's: (address, env, bare python).
    """
    temp = Path(tempfile.mkdtemp(prefix="rayfs", dir="/tmp"))
    try:
        bindir = bare_venv(temp / "bare")
        env = {**cluster_env(), "PATH": f"{bindir}:/usr/bin:/bin"}
        with loopback_cluster(env, temp, workers=0) as (address, started):
            yield address, started, bindir / "python"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _pids() -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit()}


def _parents() -> dict[int, int]:
    parents = {}
    for pid in _pids():
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            parents[pid] = int(stat.rpartition(")")[2].split()[1])
    return parents


def _kill_processes_under(temp: Path) -> None:
    """SIGKILL every process whose command line or environment (from /proc) names `temp`, and
    their descendants: the cluster's processes only, whatever else runs on the machine.

    Ray renames some processes (`ray::DashboardAgent`), so the command line alone misses
    them; every process of the cluster inherits RAY_TMPDIR, set to `temp`, and is a
    descendant of the `ray start` processes, which name `temp` on their command lines.
    """
    for _ in range(20):  # a dying raylet can still spawn; sweep until nothing matches
        found = set()
        for pid in _pids() - {os.getpid()}:
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if str(temp).encode() in command or str(temp).encode() in environ:
                found.add(pid)
        parents = _parents()
        grew = True
        while grew:
            children = {pid for pid, parent in parents.items() if parent in found} - found
            grew = bool(children - {os.getpid()})
            found |= children - {os.getpid()}
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)


def run_submit(
    args: list[str], env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SUBMIT), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def sim_overrides(out_dir: Path) -> list[str]:
    return ["+panel=sim", "sim.configs=2", "arms=[j,q]", "repeats=1", f"out_dir={out_dir}"]


def assert_completed_sim_run(out_dir: Path) -> None:
    (run_dir,) = list(out_dir.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["counts"]["planned"] == 4 and manifest["counts"]["valid"] == 4
    assert (run_dir / "analysis" / "report.md").read_text().startswith("SIMULATED")


def printed_command(stdout: str, label: str) -> list[str]:
    """The command scripts/submit printed after `label:` (follow, status, stop)."""
    found = re.search(rf"^  {label}:\s+(.+)$", stdout, re.M)
    assert found, stdout
    return shlex.split(found[1])


def ray_job_logs(command: list[str], env: dict[str, str]) -> str:
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=60, check=False
    ).stdout


@pytest.mark.ray
@pytest.mark.slow
def test_submitted_sim_sweeps_complete_and_stop_on_a_two_node_cluster(
    cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    address, env = cluster
    out_dir = tmp_path / "runs"
    # scripts/submit retries while the head's job agent registers (after the nodes are up)
    done = run_submit(["--address", address, "--wait", "--", *sim_overrides(out_dir)], env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    job_id = re.search(r"^job (raysubmit_\w+) running on ", done.stdout, re.M)
    assert job_id, done.stdout[-3000:]
    assert printed_command(done.stdout, "follow")[-2:] == ["--follow", job_id[1]]
    assert f"run dir: {out_dir}/<run id> on the head node" in done.stdout
    assert_completed_sim_run(out_dir)

    # A long sweep, detached, then stopped with the printed command: a graceful stop (the
    # sweep gets SIGINT, not Ray's default SIGTERM, which killed the driver outright).
    long_dir = tmp_path / "long"
    overrides = ["+panel=sim", "sim.configs=2", "arms=[j,q]", "repeats=3000", f"out_dir={long_dir}"]
    started = run_submit(["--address", address, "--", *overrides], env)
    assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
    logs = [*printed_command(started.stdout, "follow")]
    logs.remove("--follow")
    deadline = time.monotonic() + 120
    while "run directory:" not in ray_job_logs(logs, env):  # the stop handler is installed
        assert time.monotonic() < deadline, ray_job_logs(logs, env)[-3000:]
        time.sleep(1)
    # into the sweep proper: a stop before the plan is written leaves a run that cannot be
    # resumed ("failed"), and the probes take longer than a fixed wait on a loaded machine
    while not list(long_dir.glob("*/plan.parquet")):
        assert time.monotonic() < deadline + 120, ray_job_logs(logs, env)[-3000:]
        time.sleep(1)
    time.sleep(1)
    stop = subprocess.run(
        printed_command(started.stdout, "stop"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert stop.returncode == 0, stop.stdout[-2000:] + stop.stderr[-2000:]
    (run_dir,) = list(long_dir.iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    # "stopped" is written by the graceful stop only (SIGTERM left "running"); how far the
    # sweep got in a few seconds depends on the machine's load
    assert manifest["status"] == "stopped", ray_job_logs(logs, env)[-3000:]
    assert manifest["counts"]["valid"] < manifest["counts"]["planned"]


@pytest.mark.ray
@pytest.mark.slow
def test_a_cluster_whose_python_lacks_the_project_fails_in_one_line_unless_named(
    bare_path_cluster: tuple[str, dict[str, str], Path], tmp_path: Path
) -> None:
    """The reported bug: the job's `python` came from the head's PATH (the system Python) and
    the sweep died with ModuleNotFoundError: pyarrow. Now the job checks its interpreter
    first and submit fails with one line; --python names an interpreter that works."""
    address, env, bare_python = bare_path_cluster
    out_dir = tmp_path / "runs"
    started = time.monotonic()
    failed = run_submit(
        ["--address", address, "--start-timeout", "120", "--", *sim_overrides(out_dir)], env
    )
    assert failed.returncode == 2, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert failed.stderr.strip() == (
        f"error: the cluster's python ({bare_python}) lacks "
        + ", ".join(preflight.REQUIRED_MODULES)
        + "; start the cluster from an environment with foldsweep installed (pip install -e .)"
        " or pass --python PATH"
    ), failed.stderr
    assert "Traceback" not in failed.stdout + failed.stderr
    assert time.monotonic() - started < 150
    assert not out_dir.exists()

    named_args = ["--address", address, "--python", sys.executable, "--wait"]
    named = run_submit([*named_args, "--", *sim_overrides(out_dir)], env)
    assert named.returncode == 0, named.stdout[-3000:] + named.stderr[-3000:]
    assert f"  python:  {sys.executable}" in named.stdout
    assert_completed_sim_run(out_dir)


# --- fast: the helpers' pure parts, no Ray -------------------------------------------------


@pytest.mark.parametrize(
    "address",
    ["http://127.0.0.1:8265", "http://head.example:8265/", "https://ray.example/dash"],
)
def test_check_address_accepts_dashboard_urls(address: str) -> None:
    assert submit.check_address(address) == address.rstrip("/")


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("", "give --address http://HEAD:DASHBOARD_PORT"),
        ("127.0.0.1:8265", "is not a dashboard URL"),
        ("localhost:8265", "is not a dashboard URL"),
        ("http://127.0.0.1", "has no port"),
        ("http://127.0.0.1:99999", "has an invalid port"),
        ("http://127.0.0.1:82x5", "has an invalid port"),
        ("ray://127.0.0.1:10001", "is a Ray Client address"),
        ("http://:8265", "is not a dashboard URL"),
        ("http://127.0.0.1:8265?x=1", "is not a plain dashboard URL"),
    ],
)
def test_check_address_refuses_anything_else(address: str, problem: str) -> None:
    with pytest.raises(submit.SubmitError, match=re.escape(problem)):
        submit.check_address(address)


def test_parse_args_keeps_overrides_after_double_dash_verbatim() -> None:
    argv = ["--address=http://h:1", "--python", "/opt/v/bin/python", "--wait", "--"]
    options = submit.parse_args([*argv, "--not-an-option", "arms=[j,q]"], {})
    assert options == submit.Options(
        "http://h:1", "/opt/v/bin/python", True, 180.0, ("--not-an-option", "arms=[j,q]")
    )
    # RAY_ADDRESS is the default; overrides without `--` still work (the old interface)
    options = submit.parse_args(["+panel=sim"], {"RAY_ADDRESS": "http://h:2"})
    assert (options.address, options.python, options.overrides) == (
        "http://h:2",
        None,
        ("+panel=sim",),
    )


@pytest.mark.parametrize(
    ("argv", "environ", "problem"),
    [
        ([], {}, "give --address"),
        (["--address"], {}, "--address needs a value"),
        (["--address", "--wait"], {}, "--address needs a value"),
        (["--adress", "http://h:1"], {}, "unknown option --adress"),
        ([], {"RAY_ADDRESS": "127.0.0.1:6379"}, "RAY_ADDRESS 127.0.0.1:6379 is not a dashboard"),
        (["--address", "http://h:1", "--start-timeout", "soon"], {}, "is not a number"),
    ],
)
def test_parse_args_refuses_in_one_line(
    argv: list[str], environ: dict[str, str], problem: str
) -> None:
    with pytest.raises(submit.SubmitError, match=re.escape(problem)) as caught:
        submit.parse_args(argv, environ)
    assert "\n" not in str(caught.value)


def test_submit_refuses_a_malformed_address_in_one_line_before_importing_ray() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHON"] = sys.executable
    for args in (["--address", "127.0.0.1:8265", "--", "+panel=sim"], ["--", "+panel=sim"]):
        done = run_submit(args, env, timeout=60)
        assert done.returncode == 2 and done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert line.startswith("error: ") and "http://" in line


def fake_python(bindir: Path) -> None:
    """A `python` that runs the preflight as passing and prints the sweep's arguments."""
    bindir.mkdir()
    script = bindir / "python"
    script.write_text(
        '#!/bin/sh\nif [ "$1" = scripts/_preflight.py ]; then echo "preflight $*"; exit 0; fi\n'
        'for a in "$@"; do echo "arg:$a"; done\n'
    )
    script.chmod(0o755)


def test_entrypoint_checks_then_execs_the_sweep_with_every_override_quoted(
    tmp_path: Path,
) -> None:
    fake_python(tmp_path / "bin")
    overrides = ("arms=[j,q]", "out_dir=/runs with space", "name=$HOME", "x='q'")
    command = submit.entrypoint(None, overrides, "2.60.0")
    (tmp_path / "arms=j").touch()  # /bin/sh would expand an unquoted arms=[j,q] to this
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=tmp_path,
        env={"PATH": str(tmp_path / "bin")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "preflight scripts/_preflight.py default 2.60.0"
    args = [line.removeprefix("arg:") for line in lines[1:]]
    assert args == ["-m", "pipeline", "sweep", "ray.address=auto", "progress=false", *overrides]


def test_entrypoint_without_the_interpreter_fails_in_one_line(tmp_path: Path) -> None:
    for python, expected in [
        (None, "error: the cluster's head has no python on its PATH; start the cluster"),
        ("/no/such/python", "error: --python /no/such/python is not an executable on the"),
    ]:
        done = subprocess.run(
            ["/bin/sh", "-c", submit.entrypoint(python, ("+panel=sim",), "")],
            env={"PATH": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2 and done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert line.startswith(expected), line


def run_preflight(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "scripts/_preflight.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_preflight_passes_in_the_project_venv_and_names_interpreter_and_cwd() -> None:
    done = run_preflight(sys.executable, "default", importlib.metadata.version("ray"))
    assert done.returncode == 0 and done.stderr == ""
    outcome = submit.preflight_outcome(done.stdout)
    assert outcome == submit.Preflight(True, sys.executable, str(ROOT), None)


def test_preflight_fails_in_one_line_in_a_bare_venv(tmp_path: Path) -> None:
    python = bare_venv(tmp_path / "bare") / "python"
    missing = ", ".join(preflight.REQUIRED_MODULES)
    done = run_preflight(python, "default", "2.60.0")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: the cluster's python ({python}) lacks {missing}; start the cluster from an "
        "environment with foldsweep installed (pip install -e .) or pass --python PATH\n"
    )
    done = run_preflight(python, "explicit", "2.60.0")
    assert done.stderr == (
        f"error: the --python interpreter ({python}) lacks {missing}; give --python the path "
        "of an interpreter with foldsweep installed (pip install -e .) on the head node\n"
    )
    assert submit.preflight_outcome(done.stderr).error == done.stderr.strip()[len("error: ") :]


def test_preflight_refuses_another_ray_version_than_the_cluster() -> None:
    done = run_preflight(sys.executable, "default", "0.0.1")
    have = importlib.metadata.version("ray")
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error: the cluster's python ({sys.executable}) has ray {have} but the cluster runs "
        "ray 0.0.1; "
    )


def test_preflight_modules_cover_the_projects_dependencies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        re.split(r"[\[<>=!~; ]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]
    }
    wanted.discard("uvloop")  # optional at run time: Ray uses it if it is installed
    distributions = importlib.metadata.packages_distributions()
    covered = {d.lower() for m in preflight.REQUIRED_MODULES for d in distributions.get(m, [])}
    assert wanted <= covered, wanted - covered


RUN_DIRS = [
    (("out_dir=/shared/runs",), "/tmp/ray/pkg", "/shared/runs/<run id>", False),
    (("+out_dir=/a", "++out_dir=/b"), None, "/b/<run id>", False),
    (("resume=/shared/runs/r1",), None, "/shared/runs/r1", False),
    ((), "/tmp/ray/pkg", "/tmp/ray/pkg/runs/<run id>", True),
    (("out_dir=rel",), None, "<the job working dir>/rel/<run id>", True),
]


@pytest.mark.parametrize(("overrides", "cwd", "where", "evictable"), RUN_DIRS)
def test_run_dir_lines_say_where_the_run_lands(
    overrides: tuple[str, ...], cwd: str | None, where: str, evictable: bool
) -> None:
    lines = submit.run_dir_lines(overrides, cwd)
    assert lines[0].startswith(f"run dir: {where} on the head node")
    assert ("evicts the package" in "".join(lines)) == evictable


def test_preflight_outcome_reads_marker_and_last_error() -> None:
    logs = (
        "Running entrypoint for job raysubmit_x: command -v python ...\n"
        "error: first\nerror: the cluster's python (/p) lacks pyarrow; hint\n"
    )
    assert submit.preflight_outcome(logs) == submit.Preflight(
        False, None, None, "the cluster's python (/p) lacks pyarrow; hint"
    )
    marker = f"{preflight.START_MARKER} python=/v b/python cwd=/tmp/ray/x\n"
    assert submit.preflight_outcome(logs + marker) == submit.Preflight(
        True, "/v b/python", "/tmp/ray/x", "the cluster's python (/p) lacks pyarrow; hint"
    )


def test_runtime_env_ships_the_project_and_stops_the_sweep_with_sigint() -> None:
    env = submit.runtime_env()
    assert env["working_dir"] == "." and ".venv" in env["excludes"] and "runs" in env["excludes"]
    assert "py_executable" not in env and "pip" not in env  # nothing downloaded at job start
    assert env["env_vars"]["RAY_JOB_STOP_SIGNAL"] == "SIGINT"
    assert int(env["env_vars"]["RAY_JOB_STOP_WAIT_TIME_S"]) >= 10
