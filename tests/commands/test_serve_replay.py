"""`python -m pipeline serve replay DIR`: prints what it serves, serves it, says what it served
on exit; a bad recordings directory is one `error:` line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.endpoints.recordings import chat_body, recording, write

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline", "serve", "replay", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )


def test_serve_replay_serves_the_recordings_until_sigterm(tmp_path: Path) -> None:
    body = chat_body("recorded", 7, 1)
    write(tmp_path, "or/1.json", recording(body=body))
    write(tmp_path, "or/2.json", recording(status=500, body="upstream down"))
    process = serve(str(tmp_path), "--port", "0")
    try:
        assert process.stdout is not None
        url, model = process.stdout.readline().split()
        assert model == "vendor/model-a"
        data = json.dumps({"model": model, "messages": []}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", data=data)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.read() == body.encode()
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert json.loads(stderr.strip().splitlines()[-1]) == {"served": {"or/1.json": 1}}


def test_a_malformed_recording_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "or/1.json", {**recording(), "format": "other"})
    process = serve(str(tmp_path))
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: recording 'or/1.json'"), stderr
