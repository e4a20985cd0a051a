"""Child processes that die with the process that started them (Linux `PR_SET_PDEATHSIG`).

Why (issue 32 §9b): a local llama-server runs in its own session, so a terminal's Ctrl-C does
not reach it mid-request. When the driver was SIGKILLed (or `timeout` signalled its group and
took Ray down with it), the servers were re-parented to PID 1 and kept their cores; four such
orphans, 8 to 11 minutes old, were found on the machine. The atexit hook in `local.py` never
runs after a SIGKILL.

`die_with_parent()` gives `subprocess.Popen` a `preexec_fn` that asks the kernel to SIGKILL the
child when its parent goes, and kills the child at once if the parent is already gone (it died
between the fork and the prctl). Decision: SIGKILL, not SIGTERM; nobody is left to wait for a
graceful stop, and a server has nothing to flush.

Caveat (the kernel's rule): the signal follows the *thread* that forked the child, not the
process. The engine launches its servers from the long-lived "local-servers" loop thread
(pipeline/sweep/servers.py), and `serve local` from its main thread, both of which live as long
as the servers should. Elsewhere than Linux this is a no-op; the resume's orphan sweep
(pipeline/sweep/orphans.py) is the backstop there.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A `preexec_fn` binding the child's life to this thread's, or None off Linux.

    libc is loaded here, in the parent, so the child only calls into it after the fork."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def bind() -> None:
        if prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os.kill(os.getpid(), sig)

    return bind
