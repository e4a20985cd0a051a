"""scripts/submit's implementation: `python -m pipeline sweep ...` as a Ray job (docs/cluster.md).

This runs on the submitting machine, in the project venv. The job's interpreter is explicit:
`--python PATH` (a path on the head node), or else `python` on the head's PATH, which is the
cluster's documented requirement: start the cluster from the activated project venv. Ray's
`py_executable` runtime env is not used: it changes only the interpreter of Ray's worker
processes (the job's entrypoint is a shell command whose `python` comes from PATH), and a job
whose py_executable cannot start Ray stays PENDING, silently, until Ray's 15-minute start
timeout.

Whichever interpreter it is, the job first runs scripts/_preflight.py with it: one line on
stderr and exit code 2 if it is older than Python 3.11, lacks a dependency or has another Ray
version than the cluster; otherwise it prints START_MARKER and the sweep starts. This script
waits for one or the other, so a wrong interpreter fails here, in one line, not deep in the
sweep.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from _preflight import HINT, START_MARKER

USAGE = """\
usage: scripts/submit --address http://HEAD:DASHBOARD_PORT [--python PATH] [--wait]
                      [--start-timeout SECONDS] [--] [HYDRA_OVERRIDE ...]

  --address        the Ray dashboard URL (default: $RAY_ADDRESS)
  --python         the job's interpreter, a path on the head node (default: `python` on
                   the PATH the cluster was started with)
  --wait           follow the job's logs until it ends; exit 0 only if it succeeded
  --start-timeout  seconds to wait for the job's preflight (default 180)

Overrides after `--` go to `python -m pipeline sweep` unchanged, e.g.
  scripts/submit --address http://127.0.0.1:8265 -- +panel=sim out_dir=/shared/runs
docs/cluster.md: starting a cluster, following and stopping a job, collecting its run dir."""

EXCLUDES = [
    ".venv",
    "runs",
    ".git",
    "*.pyc",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
]


STOP_WAIT_S = 30


class SubmitError(Exception):
    """A problem the user can fix: printed as one `error: ...` line."""


@dataclass(frozen=True)
class Options:
    address: str
    python: str | None
    wait: bool
    start_timeout: float
    overrides: tuple[str, ...]


def check_address(text: str, source: str = "--address") -> str:
    """The Ray dashboard URL, normalized; SubmitError if it is missing or is not one."""
    if not text:
        raise SubmitError(
            "give --address http://HEAD:DASHBOARD_PORT (the Ray dashboard, by default on port "
            "8265), or set RAY_ADDRESS"
        )
    example = "give the dashboard URL, e.g. http://127.0.0.1:8265"
    parts = urlsplit(text)
    if parts.scheme == "ray":
        raise SubmitError(f"{source} {text} is a Ray Client address; {example}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubmitError(f"{source} {text} is not a dashboard URL; {example}")
    try:
        port = parts.port
    except ValueError:
        raise SubmitError(f"{source} {text} has an invalid port; {example}") from None
    if parts.scheme == "http" and port is None:
        raise SubmitError(f"{source} {text} has no port; {example}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise SubmitError(f"{source} {text} is not a plain dashboard URL; {example}")
    return text.rstrip("/")


def parse_args(argv: list[str], environ: dict[str, str]) -> Options:
    """Options before `--` (or before the first argument that is not an option); overrides."""
    values: dict[str, str] = {}
    wait = False
    overrides: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            overrides += argv[i + 1 :]
            break
        name, eq, value = arg.partition("=")
        if name in ("--address", "--python", "--start-timeout"):
            if not eq:
                if i + 1 == len(argv) or argv[i + 1].startswith("--"):
                    raise SubmitError(f"{name} needs a value (scripts/submit --help)")
                i += 1
                value = argv[i]
            values[name] = value
        elif arg == "--wait":
            wait = True
        elif arg.startswith("-"):
            raise SubmitError(f"unknown option {arg} (scripts/submit --help)")
        else:
            overrides.append(arg)
        i += 1
    if "--address" in values:
        address = check_address(values["--address"])
    else:
        address = check_address(environ.get("RAY_ADDRESS", ""), "RAY_ADDRESS")
    try:
        start_timeout = float(values.get("--start-timeout", "180"))
    except ValueError:
        raise SubmitError(f"--start-timeout {values['--start-timeout']} is not a number") from None
    python = values.get("--python")
    if python == "":
        raise SubmitError("--python needs a path")
    return Options(address, python, wait, start_timeout, tuple(overrides))


def entrypoint(python: str | None, overrides: tuple[str, ...], cluster_ray: str) -> str:
    """The job's shell command: check the interpreter, then exec the sweep with it.

    Every word is shell-quoted: the entrypoint runs under /bin/sh, where an unquoted override
    such as arms=[j,q] is a glob pattern.
    """
    if python is None:
        py, mode = "python", "default"
        absent = f"the cluster's head has no python on its PATH; {HINT[mode]}"
    else:
        py, mode = python, "explicit"
        absent = f"--python {python} is not an executable on the cluster's head; {HINT[mode]}"
    q = shlex.quote(py)
    check = shlex.join([py, "scripts/_preflight.py", mode, cluster_ray])
    sweep = shlex.join(
        [py, "-m", "pipeline", "sweep", "ray.address=auto", "progress=false", *overrides]
    )
    missing = f"echo {shlex.quote('error: ' + absent)} >&2; exit 2"
    return f"command -v {q} >/dev/null 2>&1 || {{ {missing}; }}; {check} && exec {sweep}"


def last_value(overrides: tuple[str, ...], key: str) -> str | None:
    """The value Hydra gives `key` (`key=`, `+key=`, `++key=`): the last one wins."""
    found = None
    for override in overrides:
        name, eq, value = override.lstrip("+").partition("=")
        if eq and name == key:
            found = value
    return found


def run_dir_lines(overrides: tuple[str, ...], job_cwd: str | None) -> list[str]:
    """Where the job writes its run directory: on the head node, where the job's driver runs
    (workers send their rows to it); the sweep prints the exact path last."""
    resume = last_value(overrides, "resume")
    target = resume if resume else f"{last_value(overrides, 'out_dir') or 'runs'}/<run id>"
    if PurePosixPath(target).is_absolute():
        return [f"run dir: {target} on the head node (the sweep prints it last)"]
    return [
        f"run dir: {job_cwd or '<the job working dir>'}/{target} on the head node",
        "  note:  that is the job's working dir, which Ray deletes when it evicts the package;",
        "         copy the run out, or pass out_dir=/absolute/path on a shared filesystem",
    ]


class Preflight(NamedTuple):
    """What a job's logs so far say about its preflight (scripts/_preflight.py)."""

    started: bool
    python: str | None  # the job's interpreter, as the preflight found it
    cwd: str | None  # the job's working dir on the head node
    error: str | None  # the last `error: ...` line, without the prefix


def preflight_outcome(logs: str) -> Preflight:
    started, python, cwd, error = False, None, None, None
    for line in logs.splitlines():
        if line.startswith(START_MARKER + " python="):
            started = True
            python, _, cwd = line.removeprefix(START_MARKER + " python=").rpartition(" cwd=")
        elif line.startswith("error: "):
            error = line.removeprefix("error: ")
    return Preflight(started, python, cwd, error)


def ray_command() -> str:
    """How to run the `ray` CLI of this venv in the printed commands."""
    local = Path(sys.executable).parent / "ray"
    found = shutil.which("ray")
    if found and local.exists() and Path(found).resolve() == local.resolve():
        return "ray"
    return str(local) if local.exists() else f"{sys.executable} -m ray.scripts.scripts"


def connect(address: str) -> Any:
    """A job client for the dashboard at `address`; SubmitError if it does not answer."""
    import logging

    try:
        from ray.exceptions import AuthenticationError
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise SubmitError(
            f"scripts/submit needs Ray in the submitting python ({sys.executable}); run it "
            "from the project venv (make install), or set PYTHON=/path/to/venv/bin/python"
        ) from None
    # Importing ray sets its loggers to INFO: packaging chatter, and warnings that .git and
    # .venv are excluded (EXCLUDES does that anyway), would bury the one line that matters.
    for name in list(logging.root.manager.loggerDict):
        if name == "ray" or name.startswith("ray."):
            logging.getLogger(name).setLevel(logging.ERROR)
    try:
        return JobSubmissionClient(address)
    except AuthenticationError:
        raise SubmitError(
            f"the cluster at {address} wants its token: export RAY_AUTH_MODE=token and the "
            "cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token), or "
            "start the cluster with RAY_AUTH_MODE=disabled (docs/cluster.md)"
        ) from None
    except ConnectionError:
        raise SubmitError(
            f"no Ray dashboard answers at {address}: is the cluster up, and is that its "
            "--dashboard-host and --dashboard-port?"
        ) from None
    except Exception as exc:  # TLS, timeouts, a server that is not Ray's dashboard
        raise SubmitError(f"the Ray dashboard at {address} failed: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def runtime_env() -> dict[str, Any]:
    """The job's runtime env: the project as working_dir, no interpreter or packages (see the
    module docstring), and the stop signal the sweep handles."""
    return {
        "working_dir": ".",
        "excludes": EXCLUDES,
        "env_vars": {
            "RAY_USAGE_STATS_ENABLED": "0",
            # `ray job stop` signals the entrypoint's process group. With Ray's default,
            # SIGTERM, the driver died at once, in Ray's own SIGTERM handler, leaving the
            # manifest "running"; SIGINT reaches the sweep's graceful stop (finish the
            # attempts in flight, write everything, manifest "stopped"). Ray sends SIGKILL
            # after RAY_JOB_STOP_WAIT_TIME_S (default 3 s). Both are read by the job's
            # supervisor, which runs with these env_vars.
            "RAY_JOB_STOP_SIGNAL": "SIGINT",
            "RAY_JOB_STOP_WAIT_TIME_S": str(STOP_WAIT_S),
        },
    }


def submit(client: Any, options: Options) -> str:
    """Submit the job; retry while the head's job agent has not registered yet."""
    cluster_ray = getattr(client, "_server_ray_version", None) or ""
    command = entrypoint(options.python, options.overrides, cluster_ray)
    deadline = time.monotonic() + options.start_timeout
    while True:
        try:
            job_id: str = client.submit_job(entrypoint=command, runtime_env=runtime_env())
            return job_id
        except RuntimeError as exc:  # "No available agent to submit job, please try again"
            if "No available agent" not in str(exc) or time.monotonic() > deadline:
                raise SubmitError(f"the cluster refused the job: {_first_line(exc)}") from None
            time.sleep(2)


def wait_for_preflight(client: Any, job_id: str, timeout: float) -> Preflight:
    """The preflight's outcome once it passed, or after `timeout` seconds (not started);
    SubmitError with the job's one `error:` line if the job ended before its sweep began."""
    deadline = time.monotonic() + timeout
    while True:
        status = client.get_job_status(job_id)  # before the logs: final if terminal now
        outcome = preflight_outcome(client.get_job_logs(job_id))
        if outcome.started:
            return outcome
        if status.is_terminal():
            if outcome.error:
                raise SubmitError(outcome.error)
            message = (client.get_job_info(job_id).message or "").strip()
            raise SubmitError(
                f"job {job_id} ended {status.value} before its sweep started: "
                + (message.splitlines()[0] if message else "no message")
            )
        if time.monotonic() > deadline:
            return outcome
        time.sleep(0.5)


def follow(client: Any, job_id: str) -> int:
    """Stream the job's logs until it ends; 0 if it succeeded."""
    from ray.job_submission import JobStatus

    async def tail() -> None:
        async for chunk in client.tail_job_logs(job_id):
            sys.stdout.write(chunk)
            sys.stdout.flush()

    asyncio.run(tail())
    deadline = time.monotonic() + 60
    status = client.get_job_status(job_id)
    while not status.is_terminal() and time.monotonic() < deadline:
        time.sleep(0.5)
        status = client.get_job_status(job_id)
    if status == JobStatus.SUCCEEDED:
        return 0
    error = preflight_outcome(client.get_job_logs(job_id)).error
    print(
        f"error: job {job_id} ended {status.value}" + (f": {error}" if error else ""),
        file=sys.stderr,
    )
    return 1


def main(argv: list[str], environ: dict[str, str]) -> int:
    if any(a in ("-h", "--help") for a in argv[: argv.index("--") if "--" in argv else None]):
        print(USAGE)
        return 0
    options = parse_args(argv, environ)
    client = connect(options.address)
    job_id = submit(client, options)
    ray = ray_command()
    address = shlex.quote(options.address)
    stop = f"{ray} job stop --address {address} {job_id}"
    try:
        outcome = wait_for_preflight(client, job_id, options.start_timeout)
    except KeyboardInterrupt:
        print(f"interrupted; job {job_id} was submitted; stop it with: {stop}", file=sys.stderr)
        return 130
    if outcome.started:
        print(f"job {job_id} running on {options.address}")
    else:
        message = (client.get_job_info(job_id).message or "").strip()
        print(f"job {job_id} not started after {options.start_timeout:g} s: {message}")
    python = outcome.python or options.python or "python on the head node's PATH"
    print(f"  python:  {python}")
    print(f"  follow:  {ray} job logs --address {address} --follow {job_id}")
    print(f"  status:  {ray} job status --address {address} {job_id}")
    print(f"  stop:    {stop}")
    for line in run_dir_lines(options.overrides, outcome.cwd):
        print(f"  {line}")
    sys.stdout.flush()
    if not options.wait:
        return 0
    try:
        return follow(client, job_id)
    except KeyboardInterrupt:
        print(f"stopped following; the job keeps running; stop it with: {stop}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    import os

    try:
        sys.exit(main(sys.argv[1:], dict(os.environ)))
    except SubmitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
