"""scripts/bench_peer.py refuses bad arguments and a peer interpreter without inspect_ai with
one line and exit 2, before it starts a server; with inspect_ai installed it runs end to end
(slow) and ends with `ratio_vs_inspect=` (the figure is not asserted: docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_peer.py"


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--rounds", "0"], "--rounds must be at least 1, not 0"),
        (["--concurrency", "-3"], "--concurrency must be at least 1, not -3"),
        (["--samples", "0"], "--samples must be at least 1, not 0"),
        (["--side-timeout", "0"], "--side-timeout must be positive, not 0.0"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    done = _run(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == says
    assert done.stdout == ""  # nothing started, nothing measured


def test_a_peer_without_inspect_ai_is_one_line_saying_how_to_install_it(tmp_path: Path) -> None:
    fake = tmp_path / "python"  # an interpreter whose `import inspect_ai` fails
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    for peer in (str(fake), str(tmp_path / "missing-python")):
        done = _run("--peer-python", peer)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert f"inspect_ai is not importable by {peer}" in lines[0]
        assert "pip install -e '.[bench]'" in lines[0]
        assert done.stdout == ""


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("inspect_ai") is None, reason="needs the bench extra (inspect_ai)"
)
def test_with_inspect_ai_a_tiny_round_ends_with_the_ratio() -> None:
    done = _run(
        "--rounds", "1", "--concurrency", "4", "--units", "8", "--samples", "4",
        "--side-timeout", "60", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert any(
        re.fullmatch(r"inspect_ai body: (\d+) bytes \(foldsweep median \1\)", x) for x in lines
    )
    assert re.fullmatch(r"ratio_vs_inspect=\d+\.\d+", lines[-1]), lines[-5:]
