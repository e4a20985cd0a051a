"""`query` runs in a child process bounded in time and memory, so no query hangs or aborts.

Why (issue 19): a self cross join of `turns` (170,580 rows) ran past 90 s, and `--format csv`
without a LIMIT died in Rust with `memory allocation of 7759343040 bytes failed`, an 81-line
backtrace and exit 134. Polars has neither a time nor a memory limit, so the query runs in a
child (`python -m pipeline.commands.query_bounds`) whose address space is capped with
`RLIMIT_AS` (`--max-memory-mb`, default 4096 MB, more on many cores; a bare Polars process
already maps about 1 GB) and which is killed after `--timeout-s` (default 60). The child
writes the formatted result to a private temporary file; the parent copies it to stdout only
on success, so a killed query prints no half table. A breach is one line (exit 2) saying
which limit and how to stay under it. The child's own one-line errors are raised again
here; anything else it prints (a bug's traceback) is passed through with its exit code.
`--timeout-s 0 --max-memory-mb 0` runs the query in this process, unbounded.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipeline.usererror import UserError

MB = 2**20
DEFAULT_TIMEOUT_S = 60.0
# Address space, not RSS: threads reserve stacks and allocator arenas per core, so the default
# grows with the cores (4096 MB up to 24 cores, then 128 MB more per core).
DEFAULT_MAX_MEMORY_MB = max(4096, 1024 + 128 * (os.cpu_count() or 1))
_OOM_MARK = "foldsweep-query: out of memory"
_ERROR_PREFIX = "error: "


@dataclass(frozen=True)
class QueryLimits:
    timeout_s: float = DEFAULT_TIMEOUT_S  # 0: no time limit
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB  # 0: no memory limit

    @property
    def unbounded(self) -> bool:
        return self.timeout_s <= 0 and self.max_memory_mb <= 0


def _child_env() -> dict[str, str]:
    """This process's environment, with the package it runs from first on the path."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root if not path else f"{root}{os.pathsep}{path}"}


def _memory_breached(returncode: int, stderr: str) -> bool:
    # Rust aborts (SIGABRT) on a failed allocation; Python raises MemoryError (the mark)
    return (
        returncode == -6
        or "memory allocation of" in stderr
        or _OOM_MARK in stderr
        or "MemoryError" in stderr
    )


def run_bounded(query_argv: list[str], limits: QueryLimits) -> int:
    """Run `query QUERY_ARGV` in a bounded child; its result goes to stdout."""
    with tempfile.TemporaryDirectory(prefix="fsquery-") as tmp:
        out = Path(tmp) / "result"
        command = [
            sys.executable,
            "-m",
            "pipeline.commands.query_bounds",
            str(limits.max_memory_mb),
            str(out),
            *query_argv,
        ]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_child_env(),
        )
        try:
            _, err = proc.communicate(timeout=limits.timeout_s if limits.timeout_s > 0 else None)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise UserError(
                f"query ran past its {limits.timeout_s:g} s limit and was stopped; add a WHERE "
                "or LIMIT, or raise --timeout-s (0: no limit)"
            ) from None
        stderr = err.decode(errors="replace")
        if proc.returncode == 0:
            with out.open(encoding="utf-8") as result:
                shutil.copyfileobj(result, sys.stdout)
            return 0
        if proc.returncode == 2 and stderr.startswith(_ERROR_PREFIX):
            raise UserError(stderr.strip().splitlines()[0][len(_ERROR_PREFIX) :])
        if _memory_breached(proc.returncode, stderr):
            raise UserError(
                f"query needed more than its {limits.max_memory_mb} MB memory limit and was "
                "stopped; add a WHERE or LIMIT, select fewer columns, or raise --max-memory-mb "
                "(0: no limit)"
            )
        sys.stderr.write(stderr)  # a bug: its traceback, as it came
        return proc.returncode if proc.returncode > 0 else 1


def _child(argv: list[str]) -> int:
    limit_mb, out, query_argv = int(argv[0]), Path(argv[1]), argv[2:]
    if limit_mb > 0:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb * MB, limit_mb * MB))
    from pipeline.commands.query import query_to

    try:
        with out.open("w", encoding="utf-8") as handle:
            query_to(query_argv, handle)
    except UserError as exc:
        print(f"{_ERROR_PREFIX}{exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(_OOM_MARK, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
