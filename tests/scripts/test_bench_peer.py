"""scripts/bench_peer.py refuses cleanly before starting anything: bad arguments, no peer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_peer.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_count_below_one_is_an_argument_error() -> None:
    done = _run("--rounds", "0")
    assert done.returncode == 2 and "--rounds must be at least 1" in done.stderr


def test_a_peer_python_without_inspect_ai_says_how_to_install_it() -> None:
    done = _run("--peer-python", sys.executable)  # the test venv has no inspect_ai
    assert done.returncode == 1
    assert "inspect_ai is not importable" in done.stderr
    assert "pip install -e '.[bench]'" in done.stderr
