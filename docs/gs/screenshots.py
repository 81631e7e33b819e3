"""Takes the screenshots in this folder: the ground station at 1280×800, offscreen, against the
built-in simulator and four real onboard processes (baseline pilot), red car 14 m ahead.

    QT_QPA_PLATFORM=offscreen .venv/bin/python docs/gs/screenshots.py [OUT_DIR]

fleet-flying.png     four drones mid-flight, each tile with its frame and the model's go point
plots.png            the Telemetry tab: altitude, speed, control rate, model latency per drone
declaration.png      a pending declaration (banner, alert, the row with Accept / Reject)
alert-link-lost.png  one drone frozen (SIGSTOP): its tile LINK LOST, a critical alert
map.png              the map fitted to the geofence: homes, fence, target, geo coordinates, legend
map-close.png        the same map fitted to the drones
done.png             after E-STOP ALL: every drone done, with its end reason, Re-launch on the tiles
failed-start.png     a drone re-launched against a model server that is down: failed, its log lines
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PyQt6.QtCore import QEventLoop, QTimer
from PyQt6.QtWidgets import QApplication

from common.pose import Pose
from ground_station.app.main import MainWindow
from ground_station.fleet.client import FleetClient
from ground_station.fleet.launch import LaunchTarget, SimFleet, free_port_block

SETTINGS = ["min_decision_period_s=0.5", "t_max_s=300", "stop_on_declaration=false"]


def free_port() -> int:
    return free_port_block(1)


def wait(app: QApplication, seconds: float, until: object = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        loop = QEventLoop()
        QTimer.singleShot(100, loop.quit)
        loop.exec()
        if until is not None and until():  # type: ignore[operator]
            return True
    return until is None


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    out.mkdir(parents=True, exist_ok=True)
    app = QApplication.instance() or QApplication([])
    logs = Path(tempfile.mkdtemp(prefix="gs-shots-"))
    target = LaunchTarget("red car", "car@red", Pose(14.0, 0.0, 0.0, 90.0))
    with SimFleet(4, "baseline", targets=[target], log_dir=logs, onboard_settings=SETTINGS) as sim:
        fleet = FleetClient(sim.addresses).start()
        try:
            if not fleet.wait_for_link(120.0):
                print("the drones did not report; logs in", logs, file=sys.stderr)
                return 1
            window = MainWindow(fleet, launcher=sim, beep=False)
            window.resize(1280, 800)
            window.show()
            window.instruction.text.setText("go to the red car")
            window.instruction.send.click()
            wait(app, 60.0, lambda: all(len(s.steps) >= 4 for s in fleet.state.drones.values()))
            wait(app, 2.0)
            window.grab().save(str(out / "fleet-flying.png"))
            print("window", window.width(), "x", window.height())
            if wait(app, 120.0, lambda: window.declarations.table.rowCount() >= 1):
                wait(app, 1.5)
                window.grab().save(str(out / "declaration.png"))
            wait(app, 8.0)  # some flight to plot
            sizes = window.side.sizes()
            window.side.setSizes([170, 140, 330, 160])  # the operator drags the splitter for room
            window.logs.setCurrentWidget(window.plots)
            wait(app, 1.0)
            window.logs.grab().save(str(out / "plots.png"))
            window.logs.setCurrentWidget(window.alert_panel)
            window.side.setSizes(sizes)
            window.alerts.acknowledge_all()
            frozen = sim.drones["Drone4"].proc
            assert frozen is not None
            os.kill(frozen.pid, signal.SIGSTOP)
            try:
                wait(app, 15.0, lambda: window.life["Drone4"].name == "lost")
                wait(app, 1.0)
                window.grab().save(str(out / "alert-link-lost.png"))
            finally:
                os.kill(frozen.pid, signal.SIGCONT)
            window.map.fit_fence = True
            window.map.pointer = (14.0, 0.0)  # the pointer resting on the car: its coordinates below
            window.map.resize(640, 560)
            window.map.grab().save(str(out / "map.png"))
            window.map.fit_fence = False
            window.map.grab().save(str(out / "map-close.png"))
            window.map.pointer = None
            window.alerts.acknowledge_all()
            window.on_safety("estop", None)
            wait(app, 30.0, lambda: all(window.life[d].name == "done" for d in fleet.drone_ids))
            wait(app, 1.0)
            window.grab().save(str(out / "done.png"))
            # Re-launch Drone1 with a model server that is not running: its pre-arm check fails and
            # the tile shows why (the drone's last log lines), not only its log file
            drone = sim.drones["Drone1"]
            pilot_at = drone.argv.index("--pilot") + 1
            drone.argv[pilot_at] = f"openai://127.0.0.1:{free_port()}/v1?profile=qwen3.5-2b&retries=0"
            window.on_relaunch("Drone1")
            if wait(app, 60.0, lambda: window.life["Drone1"].name in ("failed", "flying")):
                wait(app, 1.0)
                window.tiles["Drone1"].grab().save(str(out / "failed-start.png"))
            window.shutdown()
            window.close()
        finally:
            fleet.close()
    print("screenshots in", out, "; logs in", logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
