"""No path outside the given run directories is served: `..`, encoded traversal, symlinks,
absolute paths; through the guard itself and through the HTTP server."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from pipeline.view import PathRefused, build_app, inside, open_runs

SECRET = "TOP-SECRET-OUTSIDE-THE-RUN"


@pytest.mark.parametrize(
    "name",
    [
        "../manifest.json",
        "analysis/../../outside.txt",
        "/etc/passwd",
        "%2e%2e/outside.txt",
        "..%2foutside.txt",
        "analysis\\..\\..\\outside.txt",
        "./manifest.json",
        "a//b",
        "C:/windows",
        "analysis/\x00x",
        "",
    ],
)
def test_guard_refuses_names_that_could_leave_the_run_dir(tmp_path: Path, name: str) -> None:
    with pytest.raises(PathRefused):
        inside(tmp_path, name)


def test_guard_refuses_a_symlink_that_leads_out_of_the_run_dir(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    run = tmp_path / "run"
    (run / "analysis").mkdir(parents=True)
    os.symlink(outside, run / "analysis" / "leak.png")
    with pytest.raises(PathRefused, match="outside the run directory"):
        inside(run, "analysis/leak.png")


def test_guard_allows_a_plain_file_of_the_run_dir(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "a.png").write_bytes(b"x")
    assert inside(tmp_path, "analysis/a.png") == (tmp_path / "analysis" / "a.png").resolve()


@pytest.fixture
async def client(traces_dir: Path, tmp_path: Path) -> AsyncIterator[TestClient]:
    (tmp_path / "outside.png").write_text(SECRET)
    link = traces_dir / "analysis" / "leak.png"
    if not link.is_symlink():
        os.symlink(tmp_path / "outside.png", link)
    async with TestClient(TestServer(build_app(open_runs([traces_dir])))) as test_client:
        yield test_client
    link.unlink()


@pytest.mark.parametrize(
    "raw_path",
    [
        "/run/0/figure/../../manifest.json",
        "/run/0/figure/%2e%2e/%2e%2e/manifest.json",
        "/run/0/figure/%2e%2e%2f%2e%2e%2fmanifest.json",
        "/run/0/figure/..%2f..%2f..%2fetc%2fpasswd",
        "/run/0/figure/%252e%252e%252fmanifest.json",
        "/run/0/figure//etc/passwd",
        "/run/0/figure/%2fetc%2fpasswd",
        "/run/0/figure/leak.png",
        "/run/0/figure/..%5c..%5cmanifest.json",
        "/../../etc/passwd",
        "/run/1/",
        "/run/-1/figure/visibility.png",
        "/run/0/table/../../manifest.json",
        "/run/0/table/%2e%2e/%2e%2e/outside.parquet",
        "/run/0/table/analysis%2f..%2f..%2foutside.parquet",
        "/run/0/table/analysis/leak.png",
        "/run/0/table/manifest.json",
    ],
)
async def test_server_serves_nothing_outside_the_run_dir(
    client: TestClient,
    raw_path: str,
) -> None:
    response = await client.get(URL(raw_path, encoded=True), allow_redirects=False)
    body = await response.read()
    assert response.status in (403, 404), (raw_path, response.status)
    assert SECRET.encode() not in body and b'"run_id"' not in body and b"root:" not in body


async def test_server_serves_a_figure_of_the_run(client: TestClient) -> None:
    response = await client.get("/run/0/figure/visibility.png")
    assert response.status == 200 and response.content_type == "image/png"
    assert (await response.read()).startswith(b"\x89PNG")
