"""Shared parts of the sweep benchmarks: process-tree sampling, running a sweep, reading a run.

Decisions:
- CPU and memory come from /proc (Linux), not psutil: psutil is not a dependency of the venv,
  and a benchmark must not add one. A sampler thread reads utime+stime and RSS (and, when
  asked, PSS from smaps_rollup) of every process under the given roots, so Ray's raylet, GCS
  and actor processes (grandchildren of the driver) are counted while they live.
- The sweep runs in a subprocess calling `run_sweep(overrides, analyze=False)`: the same code
  path as `python -m pipeline sweep`, without analysis, and its process tree is sampled apart
  from the benchmark's own. It stays in the benchmark's session on purpose: Linux autogroup
  scheduling shares the CPU between sessions, so a baseline and a sweep in different sessions
  would get different CPU shares on a busy machine.
- The pipeline's window is the coordinator's own: first `dispatch` event to last `complete`
  event (Ray startup, probes and writing the manifest are outside it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

REPO = Path(__file__).resolve().parent.parent
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
SWEEP_CODE = (
    "import sys\n"
    "from pipeline.commands.start import run_sweep\n"
    "print(run_sweep(sys.argv[1:], analyze=False), flush=True)\n"
)


def bench_env() -> dict[str, str]:
    """The environment of a benchmark subprocess: the repo on the path, Ray on loopback."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    return env


@dataclass(frozen=True)
class ProcSample:
    cpu_s: float  # utime + stime
    rss: int  # bytes
    pss: int | None  # bytes; None unless requested
    name: str  # the kernel's short name (Ray sets it to e.g. ray::EndpointWorker)


def _read_stat(pid: int) -> tuple[int, float, int, str] | None:
    """(ppid, cpu seconds, rss bytes, name) from /proc/PID/stat; None if the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw[raw.rindex(")") + 2 :].split()  # fields after the command name
    ppid, utime, stime, rss_pages = (
        int(fields[1]),
        int(fields[11]),
        int(fields[12]),
        int(fields[21]),
    )
    return ppid, (utime + stime) / TICK, rss_pages * PAGE, name


def _read_pss(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def tree_snapshot(roots: list[int], *, pss: bool = False) -> dict[int, ProcSample]:
    """Every live process under `roots` (roots included)."""
    stats: dict[int, tuple[int, float, int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _read_stat(int(entry))
            if found is not None:
                stats[int(entry)] = found
    wanted = {r for r in roots if r in stats}
    grew = True
    while grew:
        more = {pid for pid, (ppid, *_) in stats.items() if ppid in wanted} - wanted
        wanted |= more
        grew = bool(more)
    return {
        pid: ProcSample(
            stats[pid][1],
            stats[pid][2],
            _read_pss(pid) if pss else None,
            "root" if pid in roots else stats[pid][3],
        )
        for pid in wanted
    }


@dataclass
class TreeSampler:
    """Samples a process tree every `every_s` seconds in a thread (start/stop)."""

    roots: list[int]
    every_s: float = 0.25
    pss: bool = False
    samples: list[tuple[float, dict[int, ProcSample]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TreeSampler:
        self._thread = threading.Thread(target=self._loop, name="tree-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every_s)

    def sample(self) -> None:
        self.samples.append((time.time(), tree_snapshot(self.roots, pss=self.pss)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def cpu_between(self, t0: float, t1: float) -> float:
        """CPU seconds the tree used in [t0, t1] (to the sampling resolution)."""
        return sum(self.cpu_by_name(t0, t1).values())

    def cpu_by_name(self, t0: float, t1: float) -> dict[str, float]:
        """CPU seconds used in [t0, t1] per process name (e.g. python, raylet, ray::...)."""
        start = self.at(t0)
        out: dict[str, float] = {}
        for pid, s in self.at(t1).items():
            before = start.get(pid)
            used = s.cpu_s - (before.cpu_s if before else 0.0)
            out[s.name] = out.get(s.name, 0.0) + used
        return out

    def at(self, t: float) -> dict[int, ProcSample]:
        """The last sample at or before t (the first one if t precedes them all); each pid's
        newest value up to then, so processes that exited keep their last figure."""
        merged: dict[int, ProcSample] = {}
        for at, snap in self.samples:
            if at > t and merged:
                break
            merged.update(snap)
        return merged

    def peak_sample(self) -> dict[int, ProcSample]:
        """The sample with the largest summed RSS."""
        return max(self.samples, key=lambda s: sum(p.rss for p in s[1].values()))[1]

    def peak(self) -> tuple[int, int | None, int]:
        """(peak summed RSS, summed PSS at that sample, process count at that sample)."""
        snap = self.peak_sample()
        pss = [p.pss for p in snap.values()]
        pss_sum = sum(v for v in pss if v is not None) if any(v is not None for v in pss) else None
        return sum(p.rss for p in snap.values()), pss_sum, len(snap)


@dataclass(frozen=True)
class SweepRun:
    run_dir: Path
    sampler: TreeSampler
    wall_s: float


def run_sweep_subprocess(
    overrides: list[str], *, every_s: float = 0.25, pss: bool = False, timeout_s: float = 900
) -> SweepRun:
    """Run one sweep (no analysis) in a subprocess while sampling its process tree."""
    started = time.time()
    with subprocess.Popen(
        [sys.executable, "-c", SWEEP_CODE, *overrides],
        cwd=REPO,
        env=bench_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        sampler = TreeSampler([proc.pid], every_s=every_s, pss=pss).start()
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()  # the driver; its Ray processes exit with it
            raise
        finally:
            sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"sweep failed ({proc.returncode}):\n{err[-4000:]}")
    return SweepRun(Path(out.strip().splitlines()[-1]), sampler, time.time() - started)


@dataclass(frozen=True)
class RunFigures:
    """What a finished run directory says about its sweep."""

    first_dispatch: float  # epoch seconds
    last_complete: float
    trajectories: int
    valid: int
    row_requests: int  # requests the workers counted
    server_requests: int  # chat requests the sim servers counted (probes included)
    probe_requests: int  # chat probes (one per plain/schema probe verdict)
    server_429: int
    status: str
    manifest: dict[str, Any]

    @property
    def window_s(self) -> float:
        return self.last_complete - self.first_dispatch

    @property
    def pipeline_requests(self) -> int:
        """Requests the servers saw from trajectories (server count minus chat probes)."""
        return self.server_requests - self.probe_requests


def read_run(run_dir: Path) -> RunFigures:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    events = pl.read_parquet(run_dir / "events" / "*.parquet")
    rows = pl.read_parquet(run_dir / "rows" / "*.parquet", columns=["requests", "valid"])
    at = {kind: events.filter(pl.col("kind") == kind)["at"] for kind in ("dispatch", "complete")}
    counters = manifest.get("sim_counters") or manifest.get("extra", {}).get("sim_counters", {})
    probes = [p for p in manifest.get("probes", []) if p.get("shape") != "context_length"]
    return RunFigures(
        first_dispatch=at["dispatch"].min().timestamp(),  # type: ignore[union-attr]
        last_complete=at["complete"].max().timestamp(),  # type: ignore[union-attr]
        trajectories=rows.height,
        valid=int(rows["valid"].sum()),
        row_requests=int(rows["requests"].sum()),
        server_requests=sum(int(c["requests"]) for c in counters.values()),
        probe_requests=len(probes),
        server_429=sum(int(c["rate_limited_429"]) for c in counters.values()),
        status=str(manifest.get("status")),
        manifest=manifest,
    )


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def sweep_overrides(out_dir: Path, **sim: object) -> list[str]:
    """Common overrides of a benchmark sim sweep: small scenario, no progress, no faults."""
    items = [f"sim.{k}={v}" for k, v in sim.items()]
    return ["+panel=sim", "scenario=small", "progress=false", f"out_dir={out_dir}", *items]
