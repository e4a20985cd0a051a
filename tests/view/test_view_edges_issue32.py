"""Issue 32, the viewer and the export: a foreign `Host` (DNS rebinding) gets a 421; an export to
a path it cannot write is one line and exit 2 with no temporary left; a run input symlinked out
of the run says "refused" on its page; the export streams (its Python memory does not grow with
the file) and warns above a size; and on the runs list and compare, simulated runs are marked
row by row, not the whole page."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from pipeline.view import build_app, open_runs, write_export
from pipeline.view import export as export_mod
from tests.view.rundirs import CARRIER_ROW, FIXTURE, ROOT, carrier_run, full, toolout_run

SECRET = "TOP-SECRET-OUTSIDE-THE-RUN"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


# --- 14. Host header ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def carrier_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return carrier_run(tmp_path_factory.mktemp("issue32-carrier") / "run")


@pytest.fixture
async def server(carrier_dir: Path) -> AsyncIterator[TestServer]:
    async with TestServer(build_app(open_runs([carrier_dir])), host="127.0.0.1") as test_server:
        yield test_server


async def raw_get(
    port: int, path: str, host_line: str | None, version: str = "1.1"
) -> tuple[int, bytes]:
    """One raw HTTP request with exactly the Host line given (or none): status and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"GET {path} HTTP/{version}\r\n" + (f"{host_line}\r\n" if host_line else "")
    writer.write(f"{head}Connection: close\r\n\r\n".encode("latin-1"))
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=30)
    writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize(
    "host",
    [
        "Host: evil.com",
        "Host: evil.com:{port}",
        "Host: 127.0.0.1.evil.com:{port}",
        "Host: localhost.evil.com:{port}",
        "Host: 127.0.0.1:1",
        "Host: 127.0.0.1",
        "Host: 10.0.0.5:{port}",
        "Host: [::1]:{port}",
        None,
    ],
)
@pytest.mark.parametrize("path", ["/", f"/run/0/unit?row={CARRIER_ROW}", "/nope"])
async def test_issue32_a_foreign_host_header_gets_421_and_no_page(
    server: TestServer, host: str | None, path: str
) -> None:
    assert server.port is not None
    line = host.format(port=server.port) if host else None
    status, body = await raw_get(server.port, path, line)
    # HTTP/1.1 with no Host at all is refused by aiohttp's parser first (400, RFC 9112 3.2)
    assert status in ((421,) if line else (400, 421)), (line, path, status)
    assert b"run-c" not in body and b"23857" not in body and b"<html" not in body
    assert len(body.decode().strip().splitlines()) == 1


async def test_issue32_an_http_1_0_request_without_host_gets_421(server: TestServer) -> None:
    assert server.port is not None
    status, body = await raw_get(server.port, "/", None, version="1.0")
    assert status == 421 and b"run-c" not in body


@pytest.mark.parametrize(
    "host", ["Host: 127.0.0.1:{port}", "Host: localhost:{port}", "Host: LocalHost:{port}"]
)
async def test_issue32_the_viewer_answers_its_own_loopback_names(
    server: TestServer, host: str
) -> None:
    assert server.port is not None
    status, body = await raw_get(server.port, "/run/0/", host.format(port=server.port))
    assert status == 200 and b"run" in body


def test_issue32_the_viewer_command_refuses_a_rebound_host(carrier_dir: Path) -> None:
    """As a user runs it: `view --port 0`, then a DNS-rebinding page's request."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "view", str(carrier_dir), "--port", "0"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split(" at ", 1)[1].split(" ", 1)[0]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert asyncio.run(raw_get(port, "/", "Host: evil.com"))[0] == 421
        assert asyncio.run(raw_get(port, "/", f"Host: 127.0.0.1:{port}"))[0] == 200
    finally:
        process.terminate()
        process.wait(timeout=30)


# --- 15. export to a bad path ------------------------------------------------------------------


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@pytest.mark.parametrize("where", ["proc", "directory", "under_a_file"])
def test_issue32_export_to_a_path_it_cannot_write_is_one_line_and_exit_2(
    carrier_dir: Path, tmp_path: Path, where: str
) -> None:
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "existing").mkdir()
    out = {
        "proc": Path("/proc/x.html"),
        "directory": tmp_path / "existing",
        "under_a_file": tmp_path / "a-file" / "x.html",
    }[where]
    done = _cli("view", "--export", str(out), str(carrier_dir))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: view --export") and str(out) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert _leftovers(tmp_path) == [] and list((tmp_path / "existing").iterdir()) == []


def test_issue32_an_export_whose_write_fails_midway_leaves_no_temporary(
    carrier_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.usererror import UserError

    real = export_mod.export_chunks

    def failing(run: object, *options: object) -> object:
        chunks = real(run, *options)  # type: ignore[arg-type]
        yield next(chunks)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_mod, "export_chunks", failing)
    (run,) = open_runs([carrier_dir])
    with pytest.raises(UserError, match="No space left on device"):
        write_export(run, tmp_path / "run.html")
    assert list(tmp_path.iterdir()) == []


# --- 16. a run input symlinked out; a large export ---------------------------------------------


@pytest.fixture
def leaky_carrier(tmp_path: Path) -> Path:
    run_dir = carrier_run(tmp_path / "run")
    (tmp_path / "outside.json").write_text(json.dumps({**FIXTURE, "secret": SECRET}))
    (run_dir / "fixture.json").unlink()
    os.symlink(tmp_path / "outside.json", run_dir / "fixture.json")
    return run_dir


async def test_issue32_a_fixture_symlinked_out_of_the_run_says_refused(
    leaky_carrier: Path,
) -> None:
    async with TestClient(TestServer(build_app(open_runs([leaky_carrier])))) as client:
        response = await client.get("/run/0/unit", params={"row": CARRIER_ROW})
        html = await response.text()
    assert response.status == 200, html[-2000:]
    assert 'id="input-refused"' in html and "refused path &#39;fixture.json&#39;" in html
    assert SECRET not in html and "Traceback" not in html
    assert "<td><code>/srv/x.lock</code></td><td>unknown</td>" in html  # the rest still shows


def test_issue32_the_export_of_a_run_with_a_refused_fixture_says_so(
    leaky_carrier: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.html"
    done = _cli("view", "--export", str(out), str(leaky_carrier))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert "refused path &#39;fixture.json&#39;" in html and SECRET not in html


@pytest.mark.parametrize(
    ("name", "page"),
    [
        ("chat_templates.json", "/run/0/unit?row=local-b%2Fvisibility%2Fg0%2Fr0%2Fa0"),
        ("trace_items.json", "/run/0/unit?row=local-a%2Fnaive%2Fg0%2Fr0%2Fa0"),
        ("analysis/report.md", "/run/0/"),
    ],
)
async def test_issue32_a_traces_input_or_report_symlinked_out_says_refused(
    traces_dir: Path, tmp_path: Path, name: str, page: str
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(traces_dir, run_dir, symlinks=True)
    (tmp_path / "outside").write_text(json.dumps({"secret": SECRET}))
    (run_dir / name).unlink()
    os.symlink(tmp_path / "outside", run_dir / name)
    async with TestClient(TestServer(build_app(open_runs([run_dir])))) as client:
        response = await client.get(URL(page, encoded=True))
        html = await response.text()
    assert response.status == 200, html[-2000:]
    assert 'id="input-refused"' in html and f"refused path &#39;{name}&#39;" in html
    assert SECRET not in html


def many_unit_carrier_run(run_dir: Path, units: int, answer_kb: int) -> Path:
    """A carrier run of `units` units, each with an answer of `answer_kb` kB, through the store."""
    from pipeline import studies
    from pipeline.store import Manifest, outcome_counts, read_table, write_batch, write_manifest
    from pipeline.store.reader import read_plan
    from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME
    from tests.view.rundirs import _plan_from_rows

    definition = studies.definition("carrier")
    layout = studies.layout(definition)
    names = [n for n, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in definition.row_columns]
    rows = []
    for n in range(units):
        row: dict[str, object] = dict.fromkeys(names)
        row.update(
            run_id="run-big",
            row_id=f"cfg-{n % 7}/j/g0/r{n}/a0",
            config_id=f"cfg-{n % 7}",
            model="m",
            arm="j",
            execution_group=0,
            repeat=n,
            attempt=0,
            schedule_position=n,
            seed=1,
            simulated=True,
            valid=True,
            retryable=False,
            requests=1,
            recall=0.5,
            checks_passed=1,
            checks_total=2,
            final_carrier="ingress port: 23857\n",
            answer_text=(f"unit {n}: ingress port 23857 " * 40 * answer_kb)[: answer_kb * 1000],
        )
        rows.append(row)
    run_dir.mkdir(parents=True)
    write_batch(run_dir, part_name="p0", rows=rows, children={}, layout=layout)
    (run_dir / "fixture.json").write_text(json.dumps(FIXTURE), encoding="utf-8")
    _plan_from_rows(run_dir, "carrier")
    plan = read_plan(run_dir)
    assert plan is not None
    manifest = Manifest(
        run_id="run-big",
        config={"repeats": units},
        config_fingerprint="0" * 64,
        started_at="2026-12-02T00:00:00Z",
        study="carrier",
        status="completed",
    )
    counts = outcome_counts(plan, read_table(run_dir, "rows", layout))
    write_manifest(run_dir, manifest.finish("completed", counts))
    assert full  # the records above carry every column already
    return run_dir


def test_issue32_the_export_streams_its_python_memory_stays_below_the_file(
    tmp_path: Path,
) -> None:
    """Built as one string, the export held the whole text two to three times over (the
    sections, their join, the rendered page); streamed, it holds one unit's page at a time."""
    (run,) = open_runs([many_unit_carrier_run(tmp_path / "run", units=150, answer_kb=20)])
    run.preload(export_mod.preloaded(run))  # the tables themselves are not what is measured
    tracemalloc.start()
    try:
        size = write_export(run, tmp_path / "run.html")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size > 150 * 20_000  # 150 answers of 20 kB
    assert peak < size / 2, (peak, size)


def test_issue32_an_export_above_the_warning_size_says_so_in_one_line(
    carrier_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pipeline.commands import view

    monkeypatch.setattr(export_mod, "WARN_BYTES", 1000)
    out = tmp_path / "run.html"
    assert view.main(["--export", str(out), str(carrier_dir)]) == 0
    captured = capsys.readouterr()
    assert str(out) in captured.out
    warning = captured.err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("warning: ") and "MB" in warning[0]
    monkeypatch.setattr(export_mod, "WARN_BYTES", 10**12)
    assert view.main(["--export", str(out), str(carrier_dir)]) == 0
    assert capsys.readouterr().err == ""


# --- 18. SIMULATED on multi-run pages ----------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_dirs(tmp_path_factory: pytest.TempPathFactory, carrier_dir: Path) -> list[Path]:
    return [carrier_dir, toolout_run(tmp_path_factory.mktemp("issue32-toolout") / "run")]


@pytest.mark.parametrize("path", ["/", "/compare"])
async def test_issue32_multi_run_pages_mark_the_simulated_run_not_the_page(
    mixed_dirs: list[Path], path: str
) -> None:
    runs = open_runs(mixed_dirs)
    assert [r.simulated for r in runs] == [True, False]
    async with TestClient(TestServer(build_app(runs))) as client:
        response = await client.get(path)
        html = await response.text()
    assert response.status == 200
    assert 'id="simulated-banner"' not in html
    marked = re.findall(r'class="simulated-run" data-run="(\d+)"', html)
    assert marked and set(marked) == {"0"}  # the simulated run's row, never the real one's
    overview = await _overview_banners(runs)
    assert overview == [True, False]  # a single run's pages keep the banner when simulated


async def _overview_banners(runs: list[object]) -> list[bool]:
    async with TestClient(TestServer(build_app(runs))) as client:  # type: ignore[arg-type]
        return [
            'id="simulated-banner"' in await (await client.get(f"/run/{i}/")).text()
            for i in range(len(runs))
        ]
