"""Why a local server process died, in one line a user can act on.

A Popen returncode below zero is the signal that killed the process. The three that matter
here each have a different cause and a different fix, so the message names the signal, what
it means on this machine, and the command to run. SIGILL is the one issue 9 found: a build
that uses instructions (AMX, AVX-512) this CPU cannot execute.
"""

from __future__ import annotations

import signal

from pipeline.endpoints.llama_bin import REBUILD_COMMAND

_MEANINGS: dict[int, tuple[str, str]] = {
    signal.SIGILL: (
        "the llama-server build uses CPU instructions this machine cannot run",
        f"rebuild it portably: {REBUILD_COMMAND}",
    ),
    signal.SIGSEGV: (
        "llama-server crashed (a bug, a corrupt model file or a request it cannot handle)",
        f"see its log; rebuild with {REBUILD_COMMAND} if the build is older than the checkout",
    ),
    signal.SIGBUS: (
        "the model file was truncated or changed while mapped",
        "delete the assembled weights cache ($FOLDSWEEP_CACHE) and run again",
    ),
    signal.SIGKILL: (
        "the process was killed, most often by the kernel for lack of memory",
        "free memory or lower local.n_ctx / local.parallel in the panel",
    ),
    signal.SIGABRT: (
        "llama-server aborted on an internal assertion",
        "see its log for the failed assertion",
    ),
}


def signal_name(exit_code: int) -> str | None:
    """`SIGILL` for -4; None for a normal exit code."""
    if exit_code >= 0:
        return None
    try:
        return signal.Signals(-exit_code).name
    except ValueError:
        return f"signal {-exit_code}"


def explain_exit(exit_code: int) -> str:
    """`died with SIGILL (...): fix` or `exited with code 3`, for one-line messages."""
    name = signal_name(exit_code)
    if name is None:
        return f"exited with code {exit_code}"
    meaning, fix = _MEANINGS.get(-exit_code, ("killed by a signal", "see its log"))
    return f"died with {name}: {meaning}; {fix}"
