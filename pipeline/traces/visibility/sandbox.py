"""Renders bounded in time and memory: a child process that renders, and is killed when late.

A pure-Python Jinja render cannot be interrupted from the same process (a thread cannot be
killed, and SIGALRM works only on the main thread, which a Ray worker's actor is not), so every
render of a template a user or a run directory supplies goes to one long-lived child process
(`python -m pipeline.traces.visibility.render_child`). Decisions (docs/traces.md, "Reasoning
traces: bounded renders"):

- The child renders with `render.render` (recursion and output-size bounds in-process) under
  `RLIMIT_AS` of `memory_bytes` (default 1 GiB): a render that allocates past it fails with
  `MemoryError` inside the child, which answers and lives on.
- Each render must answer within `seconds` (default 2 s; the slowest shipped render takes
  milliseconds). A late render is the outcome `RenderTimeout` (limit `time`); the child is
  killed and the next render starts a fresh one.
- After `max_timeouts` (default 2) late renders of one template, its remaining renders are not
  attempted: each is recorded `RenderTimeout` with the message saying so, so a template whose
  every render loops costs seconds, not minutes, and nothing is silently dropped.
- A child that dies without answering (killed by the kernel) is the outcome `RenderCrashed`.
- The clock starts when the job is sent: a fresh child first says `ready` (its start-up, up to
  `STARTUP_SECONDS`, is not charged to any render; a child that cannot start is a bug and
  raises).
- The protocol is one JSON object a line each way; a template's text crosses once per child,
  after that its SHA-256 names it.

`RenderSandbox` is a context manager; `render` has the signature of `render.render` (the
`Renderer` protocol), so the matrix and the recital take either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import subprocess
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

from pipeline.traces.visibility.render import FIXED_NOW, Rendered

DEFAULT_SECONDS = 2.0
DEFAULT_MEMORY_BYTES = 1 << 30
DEFAULT_MAX_TIMEOUTS = 2
STARTUP_SECONDS = 60.0
READY = b"ready\n"
_ROOT = Path(__file__).resolve().parents[3]
CHILD_MODULE = "pipeline.traces.visibility.render_child"


class Renderer(Protocol):
    """What renders a template: `render.render` (in-process) or a `RenderSandbox`."""

    def __call__(
        self,
        template: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        extra: Mapping[str, Any] | None = None,
        now: datetime = FIXED_NOW,
    ) -> Rendered: ...


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RenderSandbox:
    """One child process that renders; see the module docstring for the bounds."""

    def __init__(
        self,
        seconds: float = DEFAULT_SECONDS,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        max_timeouts: int = DEFAULT_MAX_TIMEOUTS,
    ) -> None:
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.max_timeouts = max_timeouts
        self._child: subprocess.Popen[bytes] | None = None
        self._known: set[str] = set()
        self._timeouts: dict[str, int] = {}
        self.renders = 0

    def __enter__(self) -> RenderSandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        child, self._child = self._child, None
        self._known = set()
        if child is None:
            return
        with contextlib.suppress(OSError):
            assert child.stdin is not None
            child.stdin.close()
        try:
            child.wait(timeout=2)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._child is None or self._child.poll() is not None:
            self.close()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_ROOT), *sys.path])}
            child = subprocess.Popen(
                [sys.executable, "-m", CHILD_MODULE, str(self.memory_bytes)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            self._child = child
            assert child.stdout is not None
            # the time bound is the render's, not the interpreter's start-up: wait for ready
            ready = _read_line(child.stdout, STARTUP_SECONDS)
            if ready != READY:
                self._kill()
                raise RuntimeError(f"the render process did not start (said {ready!r})")
        return self._child

    def _kill(self) -> None:
        if self._child is not None:
            self._child.kill()
        self.close()

    def __call__(
        self,
        template: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        extra: Mapping[str, Any] | None = None,
        now: datetime = FIXED_NOW,
    ) -> Rendered:
        sha = _sha(template)
        late = self._timeouts.get(sha, 0)
        if late >= self.max_timeouts:
            return Rendered(
                None,
                "RenderTimeout",
                f"not attempted: {late} renders of this template passed {self.seconds:g} s",
            )
        self.renders += 1
        child = self._start()
        job: dict[str, Any] = {
            "sha": sha,
            "messages": [dict(m) for m in messages],
            "tools": None if tools is None else [dict(t) for t in tools],
            "add_generation_prompt": add_generation_prompt,
            "extra": dict(extra or {}),
            "now": now.isoformat(),
        }
        if sha not in self._known:
            job["template"] = template
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(job).encode() + b"\n")
            child.stdin.flush()
        except BrokenPipeError:
            self._kill()
            return Rendered(None, "RenderCrashed", "the render process died before the render")
        self._known.add(sha)
        line = _read_line(child.stdout, self.seconds)
        if line is None:
            self._kill()
            self._timeouts[sha] = late + 1
            return Rendered(None, "RenderTimeout", f"the render passed {self.seconds:g} s")
        if not line:
            code = child.wait()
            self.close()
            return Rendered(None, "RenderCrashed", f"the render process exited with {code}")
        answer = json.loads(line)
        return Rendered(answer["prompt"], answer["error_type"], answer["error_message"])


def _read_line(stream: IO[bytes], seconds: float) -> bytes | None:
    """One line within `seconds` (b"" at end of file), or None when it is late."""
    ready, _, _ = select.select([stream], [], [], seconds)
    if not ready:
        return None
    return stream.readline()  # the child writes each answer as one line in one flush
