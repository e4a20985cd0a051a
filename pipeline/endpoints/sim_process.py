"""Simulated endpoints in a child process, off the sweep driver's GIL (a sweep's default).

`SimServerThread` serves from a thread of the calling process, so in a sweep every simulated
request competes with the coordinator for the driver's GIL. `SimServerProcess` has the same
surface but runs that SimServerThread in a child started with "spawn" (nothing inherited from
the driver: no Ray state, no threads) and talks to it over a Pipe.

Lifetime (decisions):
- The child ignores SIGINT and SIGTERM: a Ctrl-C to the process group asks the driver to
  finish the attempts in flight, and those need the servers. Both signals stay blocked from
  before the spawn until the child has set its handlers, so an early Ctrl-C cannot kill it.
- The child stops its servers and exits on "stop", or when the pipe reaches EOF: the driver
  is gone (even by SIGKILL), so no orphan outlives it.
- stop() waits for the child's answer and then its exit, each bounded by timeout_s, and
  SIGKILLs a child that is still there. It also runs at interpreter exit, before
  multiprocessing joins its children (which would wait forever on a child ignoring SIGTERM).
- Every wait is bounded: a child that fails (its message is raised here as SimProcessError),
  dies, or does not answer in time never hangs the driver.

The servers are built in the child from `SimServerSpec`s, frozen values that pickle. The API
key (`SimOptions.api_key`) crosses the pipe inside them; it is in no repr and no message.
"spawn" re-imports the caller's main module in the child: a script that starts one needs the
`if __name__ == "__main__":` guard (every entry point here has it).
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import signal
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import MappingProxyType, TracebackType
from typing import Any

from pipeline.endpoints.sim import SimCounters, SimOptions, SimServer, SimServerThread
from pipeline.simulated import SimBehaviour

__all__ = ["SimProcessError", "SimServerProcess", "SimServerSpec"]

_TERMINATION_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
_START = 0  # the sequence number of the child's first message: its URLs, or why it failed
_GRACE_S = 5.0  # how long a child that failed to start gets to exit before SIGKILL


@dataclass(frozen=True)
class SimServerSpec:
    """What one SimServer is built from; it crosses to the child process, so it pickles
    (the behaviour too: SimBehaviour implementations are frozen values)."""

    behaviour: SimBehaviour
    options: SimOptions | None = None

    def build(self) -> SimServer:
        return SimServer(self.behaviour, self.options)


class SimProcessError(RuntimeError):
    """The sim server process failed to start, died, or did not answer in time."""


class SimServerProcess:
    """Runs SimServers in a child process; a drop-in for SimServerThread."""

    def __init__(self, specs: Sequence[SimServerSpec]) -> None:
        self.specs = tuple(specs)
        self.base_urls: tuple[str, ...] = ()
        self._process: BaseProcess | None = None
        self._conn: Connection | None = None
        self._seq = _START
        self._lock = threading.Lock()  # one request and its answer at a time on the pipe
        self._last = tuple(_zero_counters() for _ in self.specs)

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def start(self, timeout_s: float = 30.0) -> tuple[str, ...]:
        """Start the child and every server in it; returns their base URLs in order."""
        if self._process is not None:
            raise RuntimeError("the sim server process is already running")
        context = multiprocessing.get_context("spawn")
        conn, child_conn = context.Pipe()
        process = context.Process(
            target=_child_main, args=(child_conn, self.specs, timeout_s), name="sim-servers"
        )
        try:
            with _termination_signals_blocked():
                process.start()
        except BaseException:
            conn.close()
            raise
        finally:
            child_conn.close()  # the child holds the only other end: its exit is our EOF
        self._process, self._conn = process, conn
        atexit.register(self.stop)
        try:
            with self._lock:
                urls = self._receive(_START, timeout_s)
        except BaseException:
            self._release(min(timeout_s, _GRACE_S))  # no half-started child left behind
            raise
        self.base_urls = tuple(urls)
        return self.base_urls

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the servers and the child (SIGKILL if it does not exit in time); idempotent."""
        if self._process is None:
            return
        try:
            self._last = tuple(_from_dict(d) for d in self._request("stop", timeout_s))
        except SimProcessError:
            pass  # dead or hung: released below, and the last snapshot stays the final one
        finally:
            self._release(timeout_s)

    def _release(self, timeout_s: float) -> None:
        """Close our end (a child still serving sees EOF and exits), wait, then SIGKILL."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        atexit.unregister(self.stop)
        if conn is not None:
            conn.close()
        if process is not None:
            process.join(timeout_s)
            if process.is_alive():
                process.kill()
                process.join(timeout_s)

    def counters(self, timeout_s: float = 30.0) -> tuple[SimCounters, ...]:
        """Snapshots taken in the child on the servers' own loop; after stop(), the final
        counts (the last snapshot if the child had to be killed)."""
        if self._process is None:
            return self._last
        self._last = tuple(_from_dict(d) for d in self._request("counters", timeout_s))
        return self._last

    def _request(self, command: str, timeout_s: float) -> Any:
        conn = self._conn
        if conn is None:
            raise SimProcessError("the sim server process is not running")
        with self._lock:
            self._seq += 1
            try:
                conn.send((self._seq, command))
            except OSError as exc:
                raise SimProcessError(f"the sim server process is gone ({exc})") from None
            return self._receive(self._seq, timeout_s)

    def _receive(self, seq: int, timeout_s: float) -> Any:
        """The child's answer to request `seq`; older answers (to requests that timed out)
        are dropped."""
        assert self._conn is not None and self._process is not None
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._conn.poll(remaining):
                raise SimProcessError(f"the sim server process did not answer in {timeout_s} s")
            try:
                answered, ok, payload = self._conn.recv()
            except (EOFError, OSError):
                self._process.join(1.0)
                code = self._process.exitcode
                raise SimProcessError(f"the sim server process exited (exit code {code})") from None
            if answered != seq:
                continue
            if not ok:
                raise SimProcessError(f"the sim server process failed: {payload}")
            return payload

    def __enter__(self) -> SimServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextlib.contextmanager
def _termination_signals_blocked() -> Iterator[None]:
    """Block SIGINT and SIGTERM in this thread while the child is spawned; it inherits the
    mask. multiprocessing starts its resource tracker at the first spawn and unblocks both
    signals after that; started here first, it leaves the mask alone."""
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _TERMINATION_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _child_main(conn: Connection, specs: tuple[SimServerSpec, ...], timeout_s: float) -> None:
    """The child: start the servers, send their URLs, answer commands until stop or EOF."""
    for sig in _TERMINATION_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # also discards one already pending
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _TERMINATION_SIGNALS)
    try:
        servers = SimServerThread([spec.build() for spec in specs])
        urls = servers.start(timeout_s)
    except Exception as exc:  # reported to the parent, which raises it
        message = "".join(traceback.format_exception_only(exc)).strip()
        with contextlib.suppress(OSError):
            conn.send((_START, False, message))
        return
    try:
        conn.send((_START, True, urls))
        _serve(conn, servers)
    except OSError:
        pass  # the parent is gone: stop below
    finally:
        servers.stop(timeout_s)


def _serve(conn: Connection, servers: SimServerThread) -> None:
    while True:
        try:
            seq, command = conn.recv()
        except EOFError:
            return  # the parent is gone
        if command == "counters":
            conn.send((seq, True, [c.as_dict() for c in servers.counters()]))
        elif command == "stop":
            servers.stop()
            conn.send((seq, True, [c.as_dict() for c in servers.counters()]))
            return
        else:
            conn.send((seq, False, f"unknown command {command!r}"))


def _from_dict(values: Mapping[str, Any]) -> SimCounters:
    """SimCounters cross the pipe as plain dicts (a MappingProxyType does not pickle)."""
    maps = {k: MappingProxyType(dict(values[k])) for k in ("faults", "model_faults")}
    return SimCounters(**{**values, **maps})


def _zero_counters() -> SimCounters:
    empty: Mapping[str, int] = MappingProxyType({})
    return SimCounters(
        requests=0,
        served_ok=0,
        faults=empty,
        model_faults=empty,
        rate_limited_429=0,
        auth_failures=0,
        bad_requests=0,
        prompt_tokens=0,
        completion_tokens=0,
    )
