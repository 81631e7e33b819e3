"""The project's .venv (scripts/setup_env.sh) holds one OpenCV wheel, the headless one.

opencv-python, opencv-contrib-python and the headless builds all unpack into site-packages/cv2: with
two installed, the cv2 left is whichever went in last, and opencv-python's brings a Qt plugin set
without `offscreen` (AirSim's own example scripts then abort under QT_QPA_PLATFORM=offscreen). The
checks run in .venv's own interpreter, whatever interpreter runs the tests."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support import ROOT

VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(not VENV_PYTHON.exists(), reason="no .venv: run scripts/setup_env.sh")

OPENCV_DISTS = """
import importlib.metadata as m, json
print(json.dumps(sorted({d.metadata["Name"].lower() for d in m.distributions()
                         if d.metadata["Name"].lower().startswith("opencv")})))
"""

# What a headless process does with OpenCV: import it, encode a frame; and where its package is.
USE_CV2 = """
import json, os, cv2, numpy as np
ok, png = cv2.imencode(".png", np.zeros((8, 8, 3), np.uint8))
gui = cv2.getBuildInformation().split("GUI:", 1)[1].splitlines()[0].strip()
print(json.dumps({"ok": bool(ok), "png": png[:4].tobytes().hex(), "gui": gui,
                  "qt_dir": os.path.isdir(os.path.join(os.path.dirname(cv2.__file__), "qt"))}))
"""


def venv_json(code: str, env: dict[str, str] | None = None) -> object:
    result = subprocess.run(
        [str(VENV_PYTHON), "-c", code], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_one_opencv_distribution_and_it_is_headless() -> None:
    assert venv_json(OPENCV_DISTS) == ["opencv-python-headless"]


def test_cv2_imports_and_encodes_offscreen_without_a_display() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    used = venv_json(USE_CV2, env)
    assert isinstance(used, dict)
    assert used["ok"] and used["png"] == "89504e47", used  # a PNG signature
    assert used["gui"] == "NONE", f"cv2 is a GUI build ({used['gui']}), not opencv-python-headless"
    assert not used["qt_dir"], "cv2 carries Qt plugins: a GUI OpenCV wheel overwrote the headless one"
