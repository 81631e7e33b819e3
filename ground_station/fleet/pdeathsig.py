"""Children that die with their parent: a preexec_fn setting PR_SET_PDEATHSIG (Linux).

Kept apart (nothing but the standard library) so the small reaper process can use it too."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_SIGTERM = int(signal.SIGTERM)


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGTERM when its parent dies, however it dies (SIGKILL, a crash,
    an abort inside Qt), so nothing is left running under PID 1. Linux only; elsewhere the orderly
    shutdown is all there is.

    It runs between fork and exec, while other threads (the link's, the GUI's pools) may hold
    locks: nothing here imports or allocates; libc's prctl was looked up at import. The signal
    comes when the *thread* that forked exits: launch from the main thread (or one that lives as
    long as the process)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, _SIGTERM, 0, 0, 0)
        if os.getppid() == 1:  # the parent died between fork and prctl
            os._exit(1)
