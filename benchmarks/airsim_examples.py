"""Run AirSim's own example scripts, unmodified, against `dronecats sim`; print a pass/fail table.

    .venv/bin/python benchmarks/airsim_examples.py PATH/TO/AirSim/PythonClient/multirotor \
        [PATH/TO/.../computer_vision .../car ...] [--timeout-s 60] [--only hello_drone,orbit] [--jobs 1]

The scripts are third-party code: point this at a checkout of microsoft/AirSim (nothing of it lives
in this repository). Each script gets:
- one fresh `dronecats sim --port 0` (with the settings.json the script's own comments give: the
  JSON block in its leading comments or docstring, or SimMode ComputerVision where the comment says
  to activate computer vision mode; SETTINGS_NEEDED where a script relies on settings its comments
  do not give; FOLDER_SETTINGS and FOLDER_SCENE for a folder's scripts, such as the car folder's
  SimMode Car in the blocks scene), logging at INFO to a file;
- a temp dir as its working directory and first sys.path entry, holding a `setup_path.py` that only
  imports airsim (AirSim's adds its repo to sys.path) and a `sitecustomize.py` that maps
  np.fromstring to np.frombuffer and np.trapz to np.trapezoid (removed in numpy 2, the airsim client
  and the scripts use them), puts back scipy.misc.imsave (removed in scipy 1.2; cv_navigate imports
  it: scipy itself comes with the `examples` extra, `pip install -e '.[examples]'`) and
  makes airsim.wait_key return at once (it reads a raw tty key); stdin is a stream of newlines;
- a time limit (--timeout-s, or TIME_LIMIT_S where a script's own sleeps take longer); the scripts
  that scan until Ctrl+C (INTERRUPT_AFTER) get a SIGINT after a few seconds, as a user would stop them.
A script passes when it exits 0, printed no traceback, and the server's log shows that the server
answered none of its calls with an error ("rpc error METHOD (#N): ..." lines, see
sim_bridge.rpc.server). The table gives the first failing RPC method and its error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common.procs import stop_process  # noqa: E402

# Scripts that cannot run headless here, with the reason (they need a display, ROS or audio).
SKIP = {
    "opencv_show.py": "display (cv2.imshow loop)",
    "navigate.py": "display (cv2.imshow of each frame)",
    "point_cloud.py": "display (cv2.waitKey loop on a window)",
    "kinect_publisher.py": "ROS (rospy)",
    "speaker.py": "audio (pyaudio)",
    "wav_reader.py": "audio (pyaudio)",
    "image_benchmarker.py": "display (cv2.imshow) and an endless benchmark loop",
    "stability_test.py": "audio (plays a wav through speaker.py) and runs 20 minutes",
    "drone_stress_test.py": "a 3000-iteration takeoff/reset stress loop (hours)",
    "clock_speed.py": "runs forever (a while True loop of moves)",
    "ground_truth.py": "display (prints until a key press in a cv2 window)",
    "car_stress_test.py": "a 3000-iteration drive/reset stress loop (hours)",
    "car_monitor.py": "display (loops on cv2.waitKey while a person drives the car by keyboard)",
    "drive_straight.py": "runs forever (a while True loop of drive commands)",
    "distance_sensor_multi.py": "runs forever (prints until Ctrl+C, which it does not catch)",
    "setup_path.py": "helper, not an example",
}

# The settings a folder's scripts run with when their comments give none: AirSim's car examples
# (PythonClient/car) are written for a settings.json with SimMode Car, as an AirSim user has.
FOLDER_SETTINGS = {"car": {"SettingsVersion": 1.2, "SimMode": "Car"}}
# The scene a folder's scripts run in: the car examples are written for AirSim's Blocks environment
# (multi_agent_car.py's comment says so; car_collision.py drives straight ahead until it hits
# something), so they get the built-in `blocks` scene (a sign closes the corridor ahead of the spawn).
FOLDER_SCENE = {"car": "blocks"}

# Scripts that scan until Ctrl+C (their own text says so): the runner sends SIGINT after this many
# seconds; they catch KeyboardInterrupt and end, and pass if they then exit cleanly.
INTERRUPT_AFTER = {
    "sensorframe_lidar_pointcloud.py": 15.0,
    "vehicleframe_lidar_pointcloud.py": 15.0,
}

# Scripts whose own sleeps outlast the default limit: their least time limit in seconds.
TIME_LIMIT_S = {
    "gimbal.py": 150.0,  # five rounds of two moves with time.sleep(6) after each: 60 s of sleeps
    "high_res_camera.py": 180.0,  # 500 frames, three of them 4320x2160 (~2 minutes on a loaded CPU)
    "pause_continue_car.py": 260.0,  # five rounds of 40 s of sleeps (wall clock)
    "pause_continue_drone.py": 300.0,  # 11 s, then five rounds of 35 s of sleeps (wall clock)
    "survey.py": 360.0,  # a lawnmower survey flown in real time: ~170 s at ClockSpeed 1
    "box.py": 150.0,  # four 5 s legs with joins and sleeps, in real time (62 s on a loaded machine)
    "orbit.py": 200.0,  # an orbit flown in real time (95 s on a loaded machine)
    "path.py": 200.0,  # a moveOnPath square flown in real time (95 s on a loaded machine)
    "cv_capture.py": 300.0,  # hundreds of frames of every image type (160 s on a loaded machine)
    "cv_navigate.py": 300.0,  # 1,200+ float depth frames over RPC (142 s on a loaded machine)
}

# Settings a script needs that its comments do not spell out, with the reason.
SETTINGS_NEEDED = {
    # it poses a vehicle named "PX4": an AirSim user defines that vehicle in settings.json
    "teleport.py": {"SettingsVersion": 1.2, "Vehicles": {"PX4": {"VehicleType": "PX4Multirotor"}}},
    # it reads a car's default lidar: AirSim has none unless settings.json enables one (docs/lidar.md:
    # SensorType 6, Enabled; LidarSimpleParams' defaults otherwise)
    "car_lidar.py": {
        "SettingsVersion": 1.2,
        "SimMode": "Car",
        "Vehicles": {
            "PhysXCar": {
                "VehicleType": "PhysXCar",
                "Sensors": {"LidarSensor1": {"SensorType": 6, "Enabled": True}},
            }
        },
    },
    # it reads the default lidar: AirSim has none unless settings.json enables one (AirSim's
    # docs/lidar.md, whose first example lidar this is)
    "drone_lidar.py": {
        "SettingsVersion": 1.2,
        "SimMode": "Multirotor",
        "Vehicles": {
            "Drone1": {
                "VehicleType": "SimpleFlight",
                "AutoCreate": True,
                "Sensors": {
                    "LidarSensor1": {
                        "SensorType": 6,
                        "Enabled": True,
                        "NumberOfChannels": 16,
                        "RotationsPerSecond": 10,
                        "PointsPerSecond": 100000,
                        "X": 0,
                        "Y": 0,
                        "Z": -1,
                        "Roll": 0,
                        "Pitch": 0,
                        "Yaw": 0,
                        "VerticalFOVUpper": -15,
                        "VerticalFOVLower": -25,
                        "HorizontalFOVStart": -20,
                        "HorizontalFOVEnd": 20,
                        "DrawDebugPoints": True,
                        "DataFrame": "SensorLocalFrame",
                    }
                },
            }
        },
    },
}

SETUP_PATH = "import airsim  # noqa: F401 -- AirSim's setup_path only makes airsim importable\n"
SITECUSTOMIZE = """\
import numpy as _np

_fromstring = getattr(_np, "fromstring", None)


def _frombuffer(data, dtype=float, count=-1, sep=""):
    if sep:
        return _fromstring(data, dtype=dtype, count=count, sep=sep)
    return _np.frombuffer(data, dtype=dtype, count=count).copy()


_np.fromstring = _frombuffer
if not hasattr(_np, "trapz"):  # numpy 2 renamed it
    _np.trapz = _np.trapezoid
try:  # scipy.misc.imsave went in scipy 1.2 (cv_navigate imports it); it was bytescale + PIL save
    import scipy.misc as _misc

    if not hasattr(_misc, "imsave"):
        import cv2 as _cv2

        def _imsave(name, arr, format=None):
            a = _np.asarray(arr)
            if a.dtype != _np.uint8:
                lo, hi = float(a.min()), float(a.max())
                a = ((a - lo) * (255.0 / (hi - lo) if hi > lo else 0.0)).astype(_np.uint8)
            if a.ndim == 3:
                a = _cv2.cvtColor(a, _cv2.COLOR_RGB2BGR)
            if not _cv2.imwrite(str(name), a):
                raise OSError(f"cannot write {name}")

        _misc.imsave = _imsave
except ImportError:
    pass
try:
    import airsim as _airsim
    import airsim.utils as _utils

    def _wait_key(message=""):
        if message:
            print(message, flush=True)
        return b"\\n"

    _airsim.wait_key = _wait_key
    _utils.wait_key = _wait_key
except ImportError:
    pass
"""

RPC_ERROR = re.compile(r"rpc error (\w+) \(#\d+\): (.*)")
LISTENING = re.compile(r"listening on [\d.]+:(\d+)")
CV_MODE = re.compile(r"computer vision mode", re.IGNORECASE)


@dataclass
class Result:
    script: str
    status: str  # pass, FAIL, skip
    detail: str
    seconds: float


def script_settings(text: str) -> dict | None:
    """The settings.json the script's leading comments give, if any."""
    lines = []
    for line in text.splitlines():
        lines.append(line.lstrip()[1:] if line.lstrip().startswith("#") else line)
    body = "\n".join(lines)
    for match in re.finditer(r"\{", body):
        depth = 0
        for i in range(match.start(), len(body)):
            depth += {"{": 1, "}": -1}.get(body[i], 0)
            if depth == 0:
                block = body[match.start() : i + 1]
                break
        else:
            continue
        if '"SettingsVersion"' not in block and '"SimMode"' not in block:
            continue
        try:
            data = json.loads(re.sub(r",(\s*[}\]])", r"\1", block))
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    if CV_MODE.search("\n".join(text.splitlines()[:5])):
        return {"SettingsVersion": 1.2, "SimMode": "ComputerVision"}
    return None


def run_script(path: Path, timeout_s: float, python: str) -> Result:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="airsim-example-") as tmp:
        work = Path(tmp)
        (work / "setup_path.py").write_text(SETUP_PATH)
        for extra in path.parent.glob("*.txt"):  # data files some scripts read (params.txt)
            shutil.copy(extra, work / extra.name)
        log_path = work / "sim.log"
        cmd = [python, "-m", "dronecats", "--log-level", "INFO", "--log-file", str(log_path), "sim"]
        cmd += ["--port", "0"]
        if path.parent.name in FOLDER_SCENE:
            cmd += ["--scene", FOLDER_SCENE[path.parent.name]]
        settings = SETTINGS_NEEDED.get(path.name) or script_settings(path.read_text(errors="replace"))
        settings = settings or FOLDER_SETTINGS.get(path.parent.name)
        if settings is not None:
            (work / "settings.json").write_text(json.dumps(settings))
            cmd += ["--settings", str(work / "settings.json")]
        err_path = work / "sim.err"
        with err_path.open("w") as err:
            sim = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            port = None
            assert sim.stdout is not None
            for line in sim.stdout:
                if m := LISTENING.search(line):
                    port = int(m.group(1))
                    break
            if port is None:
                sim.wait(10)
                tail = err_path.read_text().strip().splitlines()[-1:]
                return Result(path.name, "FAIL", f"sim did not start: {' '.join(tail)}", 0.0)
            env = dict(os.environ, PYTHONPATH=str(work))
            # The scripts connect to the default port; a wrapper would modify them, so the port goes
            # into the client constructors' default, patched in sitecustomize.
            (work / "sitecustomize.py").write_text(SITECUSTOMIZE + PORT_PATCH.format(port=port))
            timeout_s = max(timeout_s, TIME_LIMIT_S.get(path.name, 0.0))
            rc, output = _run_client([python, str(path.resolve())], work, env, timeout_s, path.name)
        finally:
            stop_process(sim, 10)
        seconds = time.monotonic() - t0
        errors = [m.groups() for m in map(RPC_ERROR.search, log_path.read_text().splitlines()) if m]
    first = f"{errors[0][0]}: {errors[0][1]}" if errors else ""
    if rc is None:
        return Result(path.name, "FAIL", f"timeout {timeout_s:g} s; {first}".rstrip("; "), seconds)
    if "Traceback (most recent call last)" in output:
        last = [ln for ln in output.strip().splitlines() if ln and not ln.startswith(" ")][-1:]
        return Result(path.name, "FAIL", first or f"traceback: {' '.join(last)[:150]}", seconds)
    if rc != 0:
        return Result(path.name, "FAIL", first or f"exit {rc}", seconds)
    if errors:
        return Result(path.name, "FAIL", f"server error(s), exit 0: {first}", seconds)
    return Result(path.name, "pass", "", seconds)


PORT_PATCH = """
try:
    import airsim.client as _client

    for _cls in (_client.VehicleClient, _client.MultirotorClient, _client.CarClient):
        _init = _cls.__init__
        _defaults = list(_init.__defaults__ or ())
        if len(_defaults) >= 2:
            _defaults[1] = {port}
            _init.__defaults__ = tuple(_defaults)
except ImportError:
    pass
"""


def _run_client(
    cmd: list[str], work: Path, env: dict[str, str], timeout_s: float, name: str
) -> tuple[int | None, str]:
    """(exit status or None on timeout, stdout + stderr) of the script; a script in INTERRUPT_AFTER
    gets a SIGINT (the Ctrl+C its own text says stops it) after that many seconds."""
    proc = subprocess.Popen(
        cmd,
        cwd=work,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stop_s = INTERRUPT_AFTER.get(name)
    try:
        if stop_s is not None and stop_s < timeout_s:
            try:
                out, err = proc.communicate("\n" * 1000, timeout=stop_s)
                return proc.returncode, out + err
            except subprocess.TimeoutExpired:
                timeout_s -= stop_s
            # Ctrl+C again every few seconds: one that lands inside the client's event loop is
            # swallowed there (tornado logs it), as a user would press it again
            while True:
                proc.send_signal(signal.SIGINT)
                try:
                    out, err = proc.communicate(timeout=min(3.0, max(timeout_s, 0.1)))
                    break
                except subprocess.TimeoutExpired:
                    timeout_s -= 3.0
                    if timeout_s <= 0:
                        raise
        else:
            out, err = proc.communicate("\n" * 1000, timeout=timeout_s)
        return proc.returncode, out + err
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, _text(out) + _text(err)


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders of AirSim example scripts")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="time limit per script (default 60)")
    parser.add_argument("--only", default="", help="comma-separated script names (without .py) to run")
    parser.add_argument("--jobs", type=int, default=1, help="scripts run at once (default 1)")
    args = parser.parse_args()
    # A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored across
    # exec: the INTERRUPT_AFTER scripts could then never take their Ctrl+C. A handled one is reset.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.timeout_s <= 0 or args.jobs < 1:
        parser.error("--timeout-s must be > 0 and --jobs >= 1")
    scripts: list[Path] = []
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
        scripts += sorted(folder.glob("*.py"))
    if args.only:
        wanted = {n.strip().removesuffix(".py") for n in args.only.split(",")}
        scripts = [s for s in scripts if s.stem in wanted]
    skipped = [Result(s.name, "skip", SKIP[s.name], 0.0) for s in scripts if s.name in SKIP]
    todo = [s for s in scripts if s.name not in SKIP]
    with ThreadPoolExecutor(args.jobs) as pool:
        ran = list(pool.map(lambda s: run_script(s, args.timeout_s, sys.executable), todo))
    width = max((len(r.script) for r in ran + skipped), default=10)
    for r in ran + [r for r in skipped if r.script != "setup_path.py"]:
        print(f"{r.script:<{width}}  {r.status:<4}  {r.seconds:5.1f} s  {r.detail}")
    passed = sum(r.status == "pass" for r in ran)
    print(f"\n{passed} of {len(ran)} pass ({len(skipped)} skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
