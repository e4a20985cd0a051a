"""The viewer answers only requests addressed to itself by a loopback name (DNS rebinding).

Binding 127.0.0.1 keeps other machines out, but not other web pages in the user's browser: a
page on `evil.com` whose name is re-pointed at 127.0.0.1 can fetch the viewer's pages as
same-origin and read answers, configs and costs. What that page cannot change is the `Host`
header, which names `evil.com`. So every request must carry exactly one `Host` that is
`127.0.0.1:PORT` or `localhost:PORT` (name case-insensitive, PORT the one the request arrived
on; a bare name only when PORT is 80, as browsers omit the default port); anything else, a
missing Host included, is answered 421 Misdirected Request with one line and nothing of a run.
`[::1]` is not accepted because the viewer does not listen there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

NAMES = ("127.0.0.1", "localhost")
DEFAULT_PORT = 80


def host_allowed(values: Sequence[str], port: int) -> bool:
    """True when `values` (every Host header of the request) is one loopback name at `port`."""
    if len(values) != 1:
        return False
    name, colon, given = values[0].strip().rpartition(":")
    if not colon:
        name, given = given, str(DEFAULT_PORT)
    return name.lower() in NAMES and given.isdigit() and int(given) == port


def _local_port(request: web.Request) -> int | None:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    return int(sockname[1]) if isinstance(sockname, tuple) and len(sockname) >= 2 else None


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def loopback_hosts_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The middleware: 421 before any route runs when the Host is not the viewer's own."""
    port = _local_port(request)
    values = request.headers.getall("Host", [])
    if port is None or not host_allowed(values, port):
        shown = values[0][:80] if values else "none"
        raise web.HTTPMisdirectedRequest(
            text=f"refused Host {shown!r}: this viewer answers only 127.0.0.1:{port} "
            f"and localhost:{port}\n"
        )
    return await handler(request)
