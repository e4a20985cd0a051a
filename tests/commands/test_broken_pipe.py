"""A reader that closes the pipe early (`... | head -1`) ends the output without a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def test_a_closed_pipe_is_no_traceback() -> None:
    # `true` reads nothing and exits at once: every write of the command meets a closed pipe
    cmd = f"{sys.executable} -m pipeline traces scan data/transcripts | true"
    done = subprocess.run(
        ["bash", "-c", cmd], cwd=PROJECT, capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr[-2000:]
