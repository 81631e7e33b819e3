"""Can the GUI start here? Asked before anything is launched: a Qt that aborts for want of a system
library (Qt 6.5+ needs libxcb-cursor0 for X11, among others) would otherwise leave a simulator and
drones behind it.

Two checks: the X11 platform plugin's libraries (ldd on Qt's own plugin, plus the ones Qt loads at
run time), named as the Debian/Ubuntu packages that provide them; then a real QApplication in a
child process (an abort there costs nothing).
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)

# The X11 platform's libraries and their Debian/Ubuntu packages (the README lists the same).
XCB_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}
LOADED_AT_RUN_TIME = ("xcb-cursor",)  # dlopen()ed by the xcb plugin, so ldd does not list them
TRIAL = (
    "import sys\n"
    "from PyQt6.QtWidgets import QApplication, QWidget\n"
    "app = QApplication(sys.argv[:1])\n"
    "w = QWidget(); w.show(); app.processEvents()\n"
    "print('gui ok', app.platformName())\n"
)


def platform_name(env: dict[str, str] | None = None) -> str:
    """The Qt platform plugin that will be used: QT_QPA_PLATFORM, else wayland or xcb by session."""
    env = dict(os.environ) if env is None else env
    chosen = env.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if chosen:
        return chosen
    return "wayland" if env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY") else "xcb"


def missing_xcb_libraries() -> list[str]:
    """Libraries the X11 platform plugin needs and cannot find (empty: all there, or not checkable)."""
    try:
        import PyQt6
    except ImportError:
        return []
    qt = Path(PyQt6.__file__).parent / "Qt6"
    binaries = [qt / "plugins" / "platforms" / "libqxcb.so", qt / "lib" / "libQt6XcbQpa.so.6"]
    missing: list[str] = []
    for binary in binaries:
        if not binary.exists():
            continue
        try:
            out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return []
        for name in re.findall(r"^\s*(\S+) => not found", out, re.M):
            if name not in missing:
                missing.append(name)
    for short in LOADED_AT_RUN_TIME:
        name = f"lib{short}.so.0"
        if ctypes.util.find_library(short) is None and name not in missing:
            missing.append(name)
    return missing


def packages_for(libraries: list[str]) -> list[str]:
    return [XCB_PACKAGES.get(lib, lib) for lib in libraries]


def gui_problem(env: dict[str, str] | None = None, timeout_s: float = 30.0) -> str | None:
    """None when a Qt window can be opened here; else one line saying why (and what to install)."""
    env = dict(os.environ) if env is None else env
    platform = platform_name(env)
    if platform == "xcb" and not env.get("DISPLAY"):
        return "no display (DISPLAY is not set); use --headless, or QT_QPA_PLATFORM=offscreen"
    if platform == "xcb":
        missing = missing_xcb_libraries()
        if missing:
            packages = " ".join(packages_for(missing))
            return (
                f"Qt's X11 platform needs system libraries that are missing: {', '.join(missing)} "
                f"(on Debian/Ubuntu: sudo apt-get install {packages})"
            )
    try:
        trial = subprocess.run(
            [sys.executable, "-c", TRIAL], capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        return f"a test window did not open within {timeout_s:g} s (platform {platform})"
    if trial.returncode == 0 and "gui ok" in trial.stdout:
        return None
    lines = [line.strip() for line in trial.stderr.splitlines() if line.strip()]
    hint = next((line for line in lines if "could not" in line.lower() or "xcb" in line.lower()), "")
    hint = hint or (lines[-1] if lines else f"exit code {trial.returncode}")
    return f"a test window failed to open (platform {platform}): {hint[:300]}"
