"""PyBullet imported without its banner: its C module prints "pybullet build time: ..." on stderr
(file descriptor 2, past Python's sys.stderr) every time it loads, in every `dronecats sim`, demo and
episode run. An error while importing is still raised, after stderr is back."""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_pybullet() -> ModuleType:
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        import pybullet
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return pybullet
