"""Jetson health without a Jetson: a tegrastats line of an Orin (JetPack 6), a stand-in `tegrastats`
executable that prints given lines, and a wait on the monitor's snapshot."""

from __future__ import annotations

import stat
import sys
import time
from pathlib import Path

from common.messages import JetsonHealth
from onboard.jetson import JetsonMonitor

ORIN_JP6 = (
    "11-29-2026 15:57:06 RAM 5234/15656MB (lfb 2x4MB) SWAP 12/7828MB (cached 0MB) "
    "CPU [12%@1984,6%@1984,off,2%@1984,off,off,off,off] EMC_FREQ 0%@3199 GR3D_FREQ 61%@[305,305] "
    "NVENC off NVDEC off APE 200 cpu@48.5C soc2@46.8C soc0@47.2C gpu@46.4C tj@48.9C soc1@46.9C "
    "VDD_IN 5493mW/5493mW VDD_CPU_GPU_CV 805mW/805mW VDD_SOC 1601mW/1601mW"
)


def executable(path: Path, body: str) -> str:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


STAND_IN = """
import sys, time
lines = {lines!r}
interval_s = int(sys.argv[sys.argv.index("--interval") + 1]) / 1000
i = 0
while True:
    print(lines[min(i, len(lines) - 1)], flush=True)
    i += 1
    time.sleep(interval_s)
"""


def wait_for(monitor: JetsonMonitor, predicate, timeout_s: float = 10.0) -> JetsonHealth:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        snap = monitor.snapshot()
        if snap is not None and predicate(snap):
            return snap
        time.sleep(0.02)
    raise AssertionError(f"no matching snapshot within {timeout_s} s: {monitor.snapshot()}")
