"""`benchmarks/gpu_check.py` on a machine without a GPU: asked for one, it fails in one line (it used to
print a 52-line traceback); `auto` says loudly that it measures the CPU (tested by hand: the run
takes a minute; `gpu_check: WARNING: no CUDA device visible ...`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible here")
@pytest.mark.parametrize(
    ("device", "said"),
    [("cuda", "no CUDA device visible to torch here"), ("cuda:x", "expected cuda or cuda:N")],
)
def test_a_gpu_asked_for_and_absent_is_one_line(device: str, said: str) -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--device", device, "--steps", "2"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == f"gpu_check: --device {device}: {said}" and not proc.stdout, proc.stderr
