"""The local viewer: an aiohttp app over the opened runs, bound to 127.0.0.1 only.

Routes (every one a GET; nothing writes):
- `/` the runs; `/compare` every run side by side;
- `/run/{i}/` overview, `/run/{i}/units` the units table, `/run/{i}/unit?row=ROW_ID`;
- `/run/{i}/figure/{name}` one PNG of the run's `analysis/`, through `guard.inside`;
- `/decision` the runs' decision page; `/run/{i}/table/{name}?col=value` a table it cites;
- `/run/{i}/status` JSON: the run's status, whether it has finished, its fingerprint, and
  the manifest's counts once it has (what a running run's overview polls; it reads no table).
A path that is not a route is a 404; a figure name the guard refuses is a 403 and is never
opened; a bad run index or row is a 404 with one line. A request whose `Host` is not
`127.0.0.1:PORT` or `localhost:PORT` is a 421 before any route runs (`pipeline.view.hosts`:
DNS rebinding). A run input the guard refuses on a page that needs it whole is a 403 with one
line; pages that can show the rest say "refused" in place of that input. Pages are rendered in
a thread so one slow page does not stall the event loop.

Every page shows its runs as of the request: it is rendered inside `Run.current` of each run it
shows (taken in index order, so two pages never deadlock), which re-reads a run that
changed on disk since it was last read and leaves an unchanged one as it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, TypeVar

from aiohttp import web

from pipeline.view import live, pages
from pipeline.view.guard import PathRefused
from pipeline.view.hosts import loopback_hosts_only
from pipeline.view.links import Links
from pipeline.view.runs import Run

HOST = "127.0.0.1"
RUNS: web.AppKey[list[Run]] = web.AppKey("runs", list[Run])
HTML = "text/html"
T = TypeVar("T")


def _run(request: web.Request) -> Run:
    runs = request.app[RUNS]
    text = request.match_info["index"]
    if not text.isdigit() or int(text) >= len(runs):
        raise web.HTTPNotFound(text=f"no run {text}; runs are 0..{len(runs) - 1}")
    return runs[int(text)]


def _as_of_now(runs: Sequence[Run], read: Callable[[], T]) -> T:
    """`read`, with every run in `runs` current and held (module doc)."""
    with ExitStack() as held:
        for run in sorted(runs, key=lambda r: r.index):
            held.enter_context(run.current())
        return read()


async def _html(render: Callable[[], pages.Page], *runs: Run) -> web.Response:
    try:
        page = await asyncio.to_thread(_as_of_now, runs, render)
    except pages.UnitNotFound as exc:
        raise web.HTTPNotFound(text=str(exc)) from None
    except PathRefused as exc:
        raise web.HTTPForbidden(text=str(exc)) from None
    return web.Response(text=pages.document(page, Links()), content_type=HTML)


async def index(request: web.Request) -> web.Response:
    runs = request.app[RUNS]
    return await _html(lambda: pages.index(runs, Links()), *runs)


async def overview(request: web.Request) -> web.Response:
    run = _run(request)
    return await _html(lambda: pages.overview(run, Links()), run)


async def units(request: web.Request) -> web.Response:
    run = _run(request)
    params = dict(request.query)
    return await _html(
        lambda: pages.units(run, Links(), {k: v for k, v in params.items() if v}), run
    )


async def unit(request: web.Request) -> web.Response:
    run = _run(request)
    row_id = request.query.get("row")
    if not row_id:
        raise web.HTTPNotFound(text="a unit page needs ?row=ROW_ID")
    params = dict(request.query)
    return await _html(lambda: pages.unit(run, Links(), row_id, params), run)


async def compare(request: web.Request) -> web.Response:
    params, runs = dict(request.query), request.app[RUNS]
    return await _html(lambda: pages.compare(runs, Links(), params), *runs)


async def decision(request: web.Request) -> web.Response:
    params, runs = dict(request.query), request.app[RUNS]
    return await _html(lambda: pages.decision(runs, Links(), params), *runs)


async def table(request: web.Request) -> web.Response:
    run = _run(request)
    source = request.match_info["name"]
    where = list(request.query.items())
    return await _html(lambda: pages.table(run, Links(), source, where), run)


async def status(request: web.Request) -> web.Response:
    run = _run(request)

    def read() -> dict[str, Any]:
        return live.status(run.manifest, run.version)

    body = await asyncio.to_thread(_as_of_now, [run], read)
    return web.json_response(body, headers={"Cache-Control": "no-store"})


async def figure(request: web.Request) -> web.StreamResponse:
    run = _run(request)
    name = request.match_info["name"]
    try:
        path = run.file(f"analysis/{name}")
    except PathRefused as exc:
        raise web.HTTPForbidden(text=str(exc)) from None
    if path.suffix != ".png" or not path.is_file():
        raise web.HTTPNotFound(text=f"run {run.name} has no figure {name!r}")
    return web.FileResponse(path, headers={"Content-Type": "image/png"})


def build_app(runs: Sequence[Run]) -> web.Application:
    app = web.Application(middlewares=[loopback_hosts_only])
    app[RUNS] = list(runs)
    app.router.add_get("/", index)
    app.router.add_get("/compare", compare)
    app.router.add_get("/run/{index}/", overview)
    app.router.add_get("/run/{index}/units", units)
    app.router.add_get("/run/{index}/unit", unit)
    app.router.add_get("/run/{index}/status", status)
    app.router.add_get("/run/{index}/figure/{name:.+}", figure)
    app.router.add_get("/decision", decision)
    app.router.add_get("/run/{index}/table/{name:.+}", table)
    return app
