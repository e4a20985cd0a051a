"""The run dir's session lock (issue 19 item 1): one holder, named refusals, stale takeovers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.store.run_lock import LOCK_FILE, Holder, RunDirInUse, process_start_tick, run_lock

HOLD = """
import sys, time
from pathlib import Path
from pipeline.store.run_lock import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""


def _record(run_dir: Path, holder: Holder) -> None:
    (run_dir / LOCK_FILE).write_text(json.dumps(holder.__dict__))


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_second_process_is_refused_in_one_line_naming_the_holder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirInUse) as refused, run_lock(tmp_path):
            pass
        message = str(refused.value)
        assert f"in use by PID {holder.pid} on host {socket.gethostname()} since " in message
        assert message.endswith("wait for it or stop it")
        assert "\n" not in message
    finally:
        holder.kill()
        holder.wait()
    with run_lock(tmp_path) as held:  # the kernel dropped the killed holder's flock
        assert held.took_over is not None and held.took_over.pid == holder.pid


def test_a_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with run_lock(tmp_path), pytest.raises(RunDirInUse), run_lock(tmp_path):
        pass


def test_a_clean_release_leaves_no_holder_and_no_takeover(tmp_path: Path) -> None:
    with run_lock(tmp_path) as held:
        recorded = json.loads((tmp_path / LOCK_FILE).read_text())
        assert recorded["pid"] == os.getpid() == held.holder.pid
    assert (tmp_path / LOCK_FILE).read_text() == ""
    with run_lock(tmp_path) as again:
        assert again.took_over is None


def test_an_exception_inside_the_session_still_releases(tmp_path: Path) -> None:
    with pytest.raises(ValueError), run_lock(tmp_path):
        raise ValueError("bad input")
    with run_lock(tmp_path) as again:
        assert again.took_over is None


def test_a_dead_holders_record_is_taken_over_and_returned(tmp_path: Path) -> None:
    stale = Holder(_dead_pid(), socket.gethostname(), "2026-12-02T01:43:00+00:00", 1)
    _record(tmp_path, stale)
    with run_lock(tmp_path) as held:
        assert held.took_over == stale


def test_a_reused_pid_is_told_apart_by_its_start_tick(tmp_path: Path) -> None:
    # our own parent is alive, but it is not the process that wrote the record
    stale = Holder(os.getppid(), socket.gethostname(), "2026-12-02T01:43:00+00:00", 1)
    _record(tmp_path, stale)
    with run_lock(tmp_path) as held:
        assert held.took_over == stale


def test_a_live_record_the_flock_did_not_see_is_respected(tmp_path: Path) -> None:
    """A filesystem whose flock is not shared (NFS across hosts): the record still holds."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        tick = process_start_tick(proc.pid)
        live = Holder(proc.pid, socket.gethostname(), "2026-12-02T01:43:00+00:00", tick)
        _record(tmp_path, live)
        refused = pytest.raises(RunDirInUse, match=f"PID {proc.pid} .* since 01:43 UTC.*delete")
        with refused, run_lock(tmp_path):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_a_record_from_another_host_is_respected(tmp_path: Path) -> None:
    _record(tmp_path, Holder(4242, "elsewhere", "2026-12-02T01:43:00+00:00", None))
    refused = pytest.raises(RunDirInUse, match="PID 4242 on host elsewhere since 01:43")
    with refused, run_lock(tmp_path):
        pass
