"""Bad input fails fast: exit code 2, one `error:` line on stderr, no traceback, no request.

"No request" is shown three ways. A new run that fails creates no run directory (the sim
servers start only after validation, inside the run). A resume that fails leaves every byte
of the run directory as it was (no event, no part, no manifest update). A panel pointed at a
counting server receives nothing.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.reliability.harness import PROJECT, SweepHarness, tree_digest
from tests.reliability.servers import CountingServer

pytestmark = pytest.mark.slow

FAIL_FAST_S = 60.0  # generous for a loaded machine; a failing command takes ~3 s idle


def run_cli(
    overrides: Sequence[str], env_remove: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> tuple[int, str, float]:
    h = SweepHarness(extra_env=env)
    for name in env_remove:
        h.env.pop(name, None)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            h.command(overrides),
            cwd=PROJECT,
            env=h.env,
            capture_output=True,
            timeout=FAIL_FAST_S,
            start_new_session=True,
            check=False,
        )
    finally:
        h.close()
    return proc.returncode, proc.stderr.decode(errors="replace"), time.monotonic() - started


def assert_one_line_error(code: int, stderr: str, *needles: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["+panel=sim", "arms=[j,zz]"], "unknown arm 'zz'"),
        (["+panel=nope"], "unknown panel 'nope'"),
        (["+panel=sim", "scenario=nope"], "unknown scenario 'nope'"),
        (["+panel=sim", "sim.bogus=3"], "unknown config key 'sim.bogus'"),
        (["+panel=sim", "+nosuchkey=1"], "unknown config key nosuchkey"),
    ],
    ids=["arm", "panel", "scenario", "nested_key", "new_key"],
)
def test_unknown_name_fails_fast_without_a_run(
    overrides: list[str], needle: str, tmp_path: Path
) -> None:
    code, stderr, _ = run_cli([*overrides, f"out_dir={tmp_path}"])
    assert_one_line_error(code, stderr, needle)
    assert list(tmp_path.iterdir()) == []


def test_missing_key_variable_is_named_and_nothing_runs(tmp_path: Path) -> None:
    code, stderr, _ = run_cli(
        ["+panel=recent", f"out_dir={tmp_path}"], env_remove=["OPENROUTER_API_KEY"]
    )
    assert_one_line_error(code, stderr, "OPENROUTER_API_KEY")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def counting_server() -> Iterator[CountingServer]:
    server = CountingServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_malformed_panel_entry_fails_fast_and_sends_no_request(
    counting_server: CountingServer, tmp_path: Path
) -> None:
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "configs:\n"
        "  - config_id: mine\n"
        "    model: some/model\n"
        "    family: some\n"
        f"    base_url: {counting_server.base_url}\n"
        "    max_tokenz: 12\n"
    )
    out = tmp_path / "out"
    code, stderr, _ = run_cli(["+panel=endpoint", f"endpoint.panel_file={panel}", f"out_dir={out}"])
    assert_one_line_error(code, stderr, "max_tokenz")
    assert counting_server.requests == 0
    assert not out.exists()


@pytest.fixture
def run_copy(unbroken_run: Path, tmp_path: Path) -> Path:
    target = tmp_path / unbroken_run.name
    shutil.copytree(unbroken_run, target)
    return target


def resume_fails(run_dir: Path, *extra: str) -> tuple[int, str]:
    """Resume `run_dir`; returns (exit code, stderr) after checking nothing was written."""
    before = tree_digest(run_dir)
    code, stderr, wall = run_cli([f"resume={run_dir}", *extra])
    assert tree_digest(run_dir) == before, "a refused resume wrote to the run directory"
    print(f"refused in {wall:.1f}s: {stderr.strip()}")
    return code, stderr


def test_resume_under_another_config_is_refused(run_copy: Path) -> None:
    code, stderr = resume_fails(run_copy, "repeats=9")
    assert_one_line_error(code, stderr, "another config", "repeats", "allow_config_change")


def test_resume_with_a_truncated_parquet_part_is_refused(run_copy: Path) -> None:
    part = sorted((run_copy / "rows").glob("*.parquet"))[0]
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    code, stderr = resume_fails(run_copy)
    assert_one_line_error(code, stderr, part.name, "corrupt")


def test_resume_with_an_altered_fixture_is_refused(run_copy: Path) -> None:
    fixture = run_copy / "fixture.json"
    fixture.write_bytes(fixture.read_bytes().replace(b'"', b"'", 1))
    code, stderr = resume_fails(run_copy)
    assert_one_line_error(code, stderr, "fixture.json", "the run dir was altered")
