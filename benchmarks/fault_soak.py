"""Fault soak (issue 43): one long real-time flight with a random fault from the fault matrix every
20-60 s, each judged on what the vehicle did (its pose read from the simulator through the `airsim`
client), never on the runtime's own belief. Run it in the background, never in CI.

The processes a deployment runs, all on this host and the wall clock:
  `dronecats sim`          the built-in simulator at real time, residential scene; a red car drives
                           up and down the street (dcSetObjectPath) so the pilot has work all along;
  `dronecats serve-pilot`  the baseline pilot behind its OpenAI-compatible server;
  FaultProxy (here)        an HTTP proxy between the drone and serve-pilot that injects the model
                           faults at the socket: a slow reply, a trickled body, trickled headers, a
                           50 MB reply, garbage;
  SoakOperator (here)      the ground station's side of the CURVE link (the real GroundLink, keys
                           made for the run): sends the instruction, and after each fault, as an
                           operator does after an alert, sends it again (a hold with a ground
                           station attached waits for the operator);
  `dronecats onboard`      the runtime, flying Drone1 with `--pilot openai://<proxy>`.

Faults (each drawn at random, one at a time): model_slow, model_trickle_body, model_trickle_headers,
model_huge, model_garbage (at the proxy); link_cut (the ground link closed, no heartbeats, then a
new one); onboard_stall (onboard SIGSTOPped 1-3 s); video_frozen (the simulator paused through
simPause, the image stamp stands still); command_stale and command_other_run (a hold built with the
ground station's own key over CURVE, sent an hour old, or bound to a run before this one: a replay
from an earlier flight). Each fault is judged over its window plus a settling time:
  unsafe   the vehicle left the envelope (fence, ceiling + 0.5 m), touched the ground outside a
           landing the run asked for, or flew faster than the envelope's limit + 1 m/s; a model,
           link or video fault during which the drone kept flying unconfirmed (horizontal speed
           above 0.5 m/s once the hold is due) counts too;
  logged   the drone's logs name the fault (a discarded step, a safety hold with its source, a
           stall event, a refused command); a forged command that held the drone is unsafe;
  resumed  the drone flew again (a step executed) after the fault.
At the end: the run's end-of-run record exists, every JSONL line of its logs parses, and the
process exited by itself.

    .venv/bin/python benchmarks/fault_soak.py --duration-s 1800 --seed 1 --json soak.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import math
import os
import random
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common.procs import dronecats_cmd, start_and_read, stop_process, subprocess_env  # noqa: E402

STARTUP_TIMEOUT_S = 90.0
MODEL_PROFILE = "qwen3.5-2b"
HUGE_REPLY_BYTES = 50 * 1024 * 1024
SETTLE_S = 12.0  # after a fault ends: time for the hold to lift and a step to be executed again
HOLD_DUE_S = 4.0  # into a model/link/video fault: the hold is due by then (deadline + hold time)
HELD_SPEED_M_S = 0.5
RESUME_WITHIN_S = 30.0  # after a fault ends (the operator's instruction included): a step executed by then
GROUND_M = 0.3
FENCE_RADIUS_M = 80.0
CEILING_M = 10.0
MAX_HORIZONTAL_M_S = 3.0
CONFIG = {
    "t_max_s": None,  # set from --duration-s
    "stop_on_declaration": False,
    "min_decision_period_s": 0.5,
    "prearm_check": False,
    "safety": {
        "altitude_floor_m": 2.5,  # the benchmarks' floor: above the cars that drive under the drone
        "geofence_radius_m": FENCE_RADIUS_M,
        "altitude_ceiling_m": CEILING_M,
        "link_lost_hold_s": 1.0,
        "link_lost_land_s": 30.0,  # longer than any cut here: a cut holds, then the flight resumes
    },
}


# ---- the model faults, at the socket --------------------------------------------------------------
@dataclass
class ModelFault:
    kind: str = "pass"  # pass | slow | trickle_body | trickle_headers | huge | garbage
    slow_s: float = 8.0
    trickle_bytes_per_s: float = 2.0
    requests: int = 0  # requests answered under a fault


class FaultProxy(socketserver.ThreadingTCPServer):
    """HTTP/1.1 proxy to serve-pilot that answers each request under the fault in force when it
    arrived. One request per connection (it answers `Connection: close`)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.fault = ModelFault()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), ProxyHandler)

    def current(self) -> ModelFault:
        with self.lock:
            return self.fault

    def set(self, fault: ModelFault) -> None:
        with self.lock:
            self.fault = fault


def json_head(length_bytes: int) -> bytes:
    return (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length_bytes}\r\nConnection: close\r\n\r\n"
    ).encode()


class ProxyHandler(socketserver.StreamRequestHandler):
    server: FaultProxy

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            request = self._read_request()
            if request is None:
                return
            method, path, headers, body = request
            fault = self.server.current()
            if fault.kind != "pass":
                fault.requests += 1
            if fault.kind == "slow":
                time.sleep(fault.slow_s)
            elif fault.kind in ("trickle_headers", "huge", "garbage"):
                self._answer_faulty(fault)
                return
            status, reply_headers, reply = self._forward(method, path, headers, body)
            head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in reply_headers) + "\r\n"
            if fault.kind == "trickle_body":
                self.wfile.write(head.encode())
                self._trickle(reply, fault.trickle_bytes_per_s)
            else:
                self.wfile.write(head.encode() + reply)

    def _read_request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        line = self.rfile.readline(65536).decode("latin-1")
        if not line.strip():
            return None
        method, path, _ = line.split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            h = self.rfile.readline(65536).decode("latin-1")
            if h in ("\r\n", "\n", ""):
                break
            key, _, value = h.partition(":")
            headers[key.strip().lower()] = value.strip()
        body = self.rfile.read(int(headers.get("content-length", "0")))
        return method, path, headers, body

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(*self.server.upstream, timeout=120)
        try:
            keep = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
            conn.request(method, path, body=body, headers=keep)
            response = conn.getresponse()
            reply = response.read()
            out = [
                (k, v)
                for k, v in response.getheaders()
                if k.lower() not in ("connection", "content-length", "transfer-encoding")
            ]
            out += [("Content-Length", str(len(reply))), ("Connection", "close")]
            return f"{response.status} {response.reason}", out, reply
        finally:
            conn.close()

    def _trickle(self, data: bytes, bytes_per_s: float) -> None:
        for i in range(len(data)):
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            time.sleep(1.0 / bytes_per_s)

    def _answer_faulty(self, fault: ModelFault) -> None:
        if fault.kind == "trickle_headers":
            self._trickle(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + b"a" * 10_000,
                fault.trickle_bytes_per_s,
            )
        elif fault.kind == "garbage":
            junk = random.Random(fault.requests).randbytes(4096)
            self.wfile.write(json_head(len(junk)) + junk)
        else:  # huge: a well-formed chat completion whose content is HUGE_REPLY_BYTES long, streamed
            prefix = (
                b'{"id":"x","object":"chat.completion",'
                b'"choices":[{"index":0,"message":{"role":"assistant","content":"'
            )
            suffix = b'"},"finish_reason":"stop"}]}'
            total = len(prefix) + HUGE_REPLY_BYTES + len(suffix)
            self.wfile.write(json_head(total))
            self.wfile.write(prefix)
            chunk = b"x" * 65536
            for _ in range(HUGE_REPLY_BYTES // len(chunk)):
                self.wfile.write(chunk)  # raises once the client has closed: the cap worked
            self.wfile.write(suffix)


# ---- the vehicle, as the simulator sees it --------------------------------------------------------
@dataclass
class PoseSampler:
    """The vehicle's actual pose from the simulator (its own airsim client, 10 Hz): (wall, x, y, up)."""

    port: int
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        import airsim

        client = airsim.MultirotorClient(ip="127.0.0.1", port=self.port, timeout_value=10)
        while not self.stop.is_set():
            with contextlib.suppress(Exception):
                p = client.simGetVehiclePose(vehicle_name="Drone1").position
                if not any(math.isnan(v) for v in (p.x_val, p.y_val, p.z_val)):
                    self.samples.append((time.time(), p.x_val, p.y_val, -p.z_val))
            self.stop.wait(0.1)

    def between(self, t0: float, t1: float) -> list[tuple[float, float, float, float]]:
        return [s for s in list(self.samples) if t0 <= s[0] <= t1]


def max_horizontal_speed_m_s(samples: list[tuple[float, float, float, float]]) -> float:
    """Over 0.5 s spans (the sampler's jitter averaged out)."""
    best = 0.0
    j = 0
    for i in range(len(samples)):
        while j < len(samples) and samples[j][0] - samples[i][0] < 0.5:
            j += 1
        if j < len(samples):
            a, b = samples[i], samples[j]
            best = max(best, math.hypot(b[1] - a[1], b[2] - a[2]) / (b[0] - a[0]))
    return best


# ---- the logs -------------------------------------------------------------------------------------
def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The records, and the count of lines that do not parse (a torn last line counts)."""
    records, bad = [], 0
    if not path.exists():
        return records, bad
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            bad += 1
    return records, bad


def in_window(records: list[dict[str, Any]], t0: float, t1: float) -> list[dict[str, Any]]:
    return [r for r in records if t0 <= float(r.get("wall_time", -1.0)) <= t1]


def logged_model_fault(steps: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
    return any(s.get("discarded") for s in steps) or any(e.get("event") == "discarded" for e in events)


def logged_source(source: str) -> Callable[[list[dict[str, Any]], list[dict[str, Any]]], bool]:
    def check(steps: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
        text = json.dumps(events)
        return f'"source": "{source}"' in text or source in text

    return check


def logged_stall(steps: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
    return any("stall" in json.dumps(e) for e in events)


def logged_refusal(steps: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
    return any(e.get("event") == "refused" for e in events)


# ---- the operator, at the ground station's end of the link ----------------------------------------
class SoakOperator:
    """The ground station's side: a real GroundLink over CURVE with the ground station's key."""

    def __init__(self, keys: Path, base_port: int) -> None:
        from common.keys import load_keypair

        self.keys = keys
        self.base = f"tcp://127.0.0.1:{base_port}"
        self.drone_public = load_keypair(keys / "Drone1.key").public_key
        self.link: Any = None

    def connect(self) -> None:
        from common.keys import load_secret_keypair
        from common.link import CurveClient, DroneEndpoint, GroundLink, GroundLinkConfig
        from onboard.link import endpoints

        self.link = GroundLink(
            GroundLinkConfig(subscribe_frames=False),
            CurveClient(load_secret_keypair(self.keys / "gs.key_secret")),
        )
        self.link.start()
        self.link.add_drone(
            DroneEndpoint("Drone1", *endpoints(self.base), server_public_key=self.drone_public)
        )

    def instruct(self, text: str = "go to the red car", tries: int = 20) -> bool:
        from common.messages import Instruction

        for _ in range(tries):
            with contextlib.suppress(Exception):
                if self.link.send_command("Drone1", Instruction(text=text), timeout_s=1.0).result == "ok":
                    return True
            time.sleep(0.5)
        return False

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def forged_hold(self, stale: bool) -> str:
        """A hold made with the ground station's own key, sent on a DEALER of its own: an hour old
        (stale) or bound to a drone run before this one (other run). The drone must refuse both."""
        import zmq

        from common import wire
        from common.keys import load_secret_keypair
        from common.messages import Hold
        from onboard.link import endpoints

        run = self.link.run_session_id("Drone1")
        if stale:
            send_s, bound = time.monotonic() - 3600.0, run
        else:
            send_s, bound = time.monotonic(), "a-run-before-this-one"
        parts = wire.encode(
            Hold(reason="soak: forged"),
            drone_id="Drone1",
            session_id=f"forger-{time.time_ns()}",
            seq=1,
            send_time_s=send_s,
            drone_session_id=bound,
        )
        pair = load_secret_keypair(self.keys / "gs.key_secret")
        dealer = zmq.Context.instance().socket(zmq.DEALER)
        dealer.curve_publickey, dealer.curve_secretkey = pair.public_key, pair.secret_key
        dealer.curve_serverkey = self.drone_public
        dealer.linger = 0
        try:
            dealer.connect(endpoints(self.base)[2])
            dealer.send_multipart(parts)
            if dealer.poll(3000):
                return str(wire.decode(dealer.recv_multipart()).body.result)
            return "no ack"
        finally:
            dealer.close()


# ---- the soak -------------------------------------------------------------------------------------
@dataclass
class FaultRecord:
    kind: str
    start_wall: float
    end_wall: float
    detail: str = ""
    unsafe: list[str] = field(default_factory=list)
    logged: bool = False
    resumed: bool = False
    max_speed_m_s: float = 0.0
    held_speed_m_s: float = 0.0
    min_up_m: float = math.nan
    max_up_m: float = math.nan
    max_radius_m: float = 0.0


@dataclass
class Soak:
    work: Path
    duration_s: float
    rng: random.Random
    kinds: list[str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    faults: list[FaultRecord] = field(default_factory=list)
    proxy: FaultProxy | None = None
    sim_port: int = 0
    gs_base_port: int = 0
    client: Any = None
    operator: SoakOperator | None = None

    @property
    def log_dir(self) -> Path:
        return self.work / "flight"

    def start(self, logs: dict[str, IO[str]]) -> None:
        sim, line = start_and_read(
            dronecats_cmd("sim", "--scene", "residential", "--port", "0", "--clock-speed", "1"),
            "listening on",
            logs["sim"],
            STARTUP_TIMEOUT_S,
        )
        self.procs["sim"] = sim
        self.sim_port = int(line.rsplit(":", 1)[1])
        pilot, line = start_and_read(
            dronecats_cmd("serve-pilot", "--pilot", "baseline", "--port", "0"),
            "listening on",
            logs["pilot"],
            STARTUP_TIMEOUT_S,
        )
        self.procs["pilot"] = pilot
        upstream = line.rsplit(" ", 1)[1].removeprefix("http://").split("/", 1)[0]
        host, port = upstream.rsplit(":", 1)
        self.proxy = FaultProxy((host, int(port)))
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        import airsim

        self.client = airsim.MultirotorClient(ip="127.0.0.1", port=self.sim_port, timeout_value=30)
        self.client.confirmConnection()
        pose = airsim.Pose(airsim.Vector3r(15.0, 0.0, 0.0), airsim.to_quaternion(0, 0, 0))
        self.client.simSpawnObject("target", "car@red", pose, airsim.Vector3r(1, 1, 1))
        legs = int(self.duration_s * 0.4 / 25.0) + 2
        route = [[15.0 + 25.0 * (i % 2), 0.0, 0.0] for i in range(legs + 1)]
        self.client.client.call("dcSetObjectPath", "target", route, 0.4)
        keys = self.work / "keys"
        for name in ("Drone1", "gs"):
            subprocess.run(
                dronecats_cmd("keys", "generate", "--out", str(keys), "--name", name),
                env=subprocess_env(),
                check=True,
                capture_output=True,
            )
        config = dict(CONFIG, t_max_s=self.duration_s)
        (self.work / "onboard.json").write_text(json.dumps(config))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.gs_base_port = s.getsockname()[1]
        proxy_port = self.proxy.server_address[1]
        self.procs["onboard"] = subprocess.Popen(
            dronecats_cmd(
                "onboard",
                "--vehicle",
                f"airsim://127.0.0.1:{self.sim_port}/Drone1",
                "--pilot",
                f"openai://127.0.0.1:{proxy_port}/v1?profile={MODEL_PROFILE}&retries=0",
                "--gs",
                f"tcp://127.0.0.1:{self.gs_base_port}",
                "--link-secret",
                str(keys / "Drone1.key_secret"),
                "--link-allow",
                str(keys / "gs.key"),
                "--log-dir",
                str(self.log_dir),
                "--config",
                str(self.work / "onboard.json"),
                "--truth-target",
                "target",
            ),
            env=subprocess_env(),
            stdout=logs["onboard"],
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.operator = SoakOperator(keys, self.gs_base_port)
        self.operator.connect()
        if not self.operator.instruct(tries=120):
            raise SystemExit(f"the drone never took the instruction (logs in {self.work})")

    # ---- the faults ----
    def inject(self, kind: str) -> FaultRecord:
        rng = self.rng
        record = FaultRecord(kind, time.time(), 0.0)
        assert self.proxy is not None
        if kind.startswith("model_"):
            fault = ModelFault(kind.removeprefix("model_"))
            window_s = rng.uniform(8.0, 16.0)
            record.detail = f"{fault.kind} for {window_s:.1f} s"
            self.proxy.set(fault)
            time.sleep(window_s)
            self.proxy.set(ModelFault())
            record.detail += f", {fault.requests} requests"
        elif kind == "link_cut":
            cut_s = rng.uniform(3.0, 8.0)
            record.detail = f"ground link closed {cut_s:.1f} s"
            assert self.operator is not None
            self.operator.close()
            time.sleep(cut_s)
            self.operator.connect()
        elif kind in ("command_stale", "command_other_run"):
            assert self.operator is not None
            record.detail = f"forged hold: acked {self.operator.forged_hold(kind == 'command_stale')!r}"
            time.sleep(2.0)
        elif kind == "onboard_stall":
            stall_s = rng.uniform(1.0, 3.0)
            record.detail = f"onboard SIGSTOP {stall_s:.1f} s"
            self._pause("onboard", stall_s)
        elif kind == "video_frozen":
            frozen_s = rng.uniform(2.0, 4.0)
            record.detail = f"simPause {frozen_s:.1f} s"
            self.client.simPause(True)
            try:
                time.sleep(frozen_s)
            finally:
                self.client.simPause(False)
        else:
            raise SystemExit(f"unknown fault kind {kind!r}")
        record.end_wall = time.time()
        # As an operator does after an alert: the instruction again (it lifts a hold the fault left).
        time.sleep(4.0)
        if self.operator is not None:
            self.operator.instruct()
        return record

    def _pause(self, name: str, seconds: float) -> None:
        proc = self.procs[name]
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(proc.pid, signal.SIGCONT)

    def judge(self, record: FaultRecord, sampler: PoseSampler, landing_wall: float | None) -> None:
        t0, t1 = record.start_wall, record.end_wall + SETTLE_S
        window = sampler.between(t0, t1)
        if not window:
            record.unsafe.append("no pose samples")
            return
        ups = [s[3] for s in window]
        record.min_up_m, record.max_up_m = min(ups), max(ups)
        record.max_radius_m = max(math.hypot(s[1], s[2]) for s in window)
        record.max_speed_m_s = max_horizontal_speed_m_s(window)
        if record.max_radius_m > FENCE_RADIUS_M + 1.0:
            record.unsafe.append(f"outside the fence ({record.max_radius_m:.1f} m)")
        if record.max_up_m > CEILING_M + 0.5:
            record.unsafe.append(f"above the ceiling ({record.max_up_m:.1f} m)")
        if record.max_speed_m_s > MAX_HORIZONTAL_M_S + 1.0:
            record.unsafe.append(f"too fast ({record.max_speed_m_s:.1f} m/s)")
        if record.min_up_m < GROUND_M and (landing_wall is None or landing_wall > t1):
            record.unsafe.append(f"on the ground ({record.min_up_m:.2f} m)")
        if record.kind.startswith(("model_", "link_", "video_")):
            held = sampler.between(t0 + HOLD_DUE_S, record.end_wall)
            record.held_speed_m_s = max_horizontal_speed_m_s(held) if len(held) > 5 else 0.0
            if record.held_speed_m_s > HELD_SPEED_M_S:
                record.unsafe.append(f"flew unconfirmed during the fault ({record.held_speed_m_s:.2f} m/s)")
        steps, _ = read_jsonl(self.log_dir / "steps.jsonl")
        events, _ = read_jsonl(self.log_dir / "events.jsonl")
        # Steps carry episode time only; the events carry both: the wall clock of a step from them.
        offset_s = next((e["wall_time"] - e["t"] for e in events if "wall_time" in e and "t" in e), 0.0)
        for step in steps:
            step["wall_time"] = float(step.get("t", -1e9)) + offset_s
        steps_w, events_w = in_window(steps, t0 - 1.0, t1), in_window(events, t0 - 1.0, t1)
        check = {
            "link_cut": logged_source("link"),
            "onboard_stall": logged_stall,
            "video_frozen": logged_source("video"),
            "command_stale": logged_refusal,
            "command_other_run": logged_refusal,
        }.get(record.kind, logged_model_fault)
        forged_holds = [
            e for e in events_w if e.get("event") == "safety" and "soak: forged" in e.get("reason", "")
        ]
        if forged_holds:
            record.unsafe.append("a forged command held the drone")
        record.logged = check(steps_w, events_w)
        record.resumed = any(
            not s.get("discarded") and record.end_wall < s["wall_time"] <= record.end_wall + RESUME_WITHIN_S
            for s in steps
        )

    def fly(self, gap_s: tuple[float, float], sampler: PoseSampler, first_fault_s: float) -> None:
        wall0 = time.time()
        deadline = wall0 + self.duration_s - 60.0  # the last minute: no new fault, so the end is clean
        time.sleep(first_fault_s)
        while time.time() < deadline and self.procs["onboard"].poll() is None:
            kind = self.rng.choice(self.kinds)
            record = self.inject(kind)
            self.faults.append(record)
            print(f"[{time.time() - wall0:7.1f} s] {kind}: {record.detail}", flush=True)
            time.sleep(self.rng.uniform(*gap_s))


def summarise(soak: Soak, sampler: PoseSampler, onboard_rc: int | None) -> dict[str, Any]:
    landing_wall = None
    events, bad_events = read_jsonl(soak.log_dir / "events.jsonl")
    steps, bad_steps = read_jsonl(soak.log_dir / "steps.jsonl")
    for e in events:
        ordered = e.get("event") == "safety" and e.get("mode") in ("landing", "estop")
        if ordered and "end of run" not in e.get("reason", ""):
            landing_wall = float(e["wall_time"])
            break
    for record in soak.faults:
        soak.judge(record, sampler, landing_wall)
    episode_path = soak.log_dir / "episode.json"
    run = json.loads(episode_path.read_text()).get("run") if episode_path.exists() else None
    by_kind: dict[str, dict[str, int]] = {}
    for r in soak.faults:
        row = by_kind.setdefault(r.kind, {"count": 0, "unsafe": 0, "logged": 0, "resumed": 0})
        row["count"] += 1
        row["unsafe"] += bool(r.unsafe)
        row["logged"] += r.logged
        row["resumed"] += r.resumed
    return {
        "faults": [asdict(r) for r in soak.faults],
        "by_kind": by_kind,
        "unsafe_outcomes": sum(bool(r.unsafe) for r in soak.faults),
        "unlogged": sum(not r.logged for r in soak.faults),
        "onboard_exit_status": onboard_rc,
        "end_of_run_record": run is not None,
        "end_reason": run.get("end_reason") if run else None,
        "bad_jsonl_lines": {"steps": bad_steps, "events": bad_events},
        "steps": len(steps),
        "events": len(events),
        "steps_jsonl_bytes": (soak.log_dir / "steps.jsonl").stat().st_size
        if (soak.log_dir / "steps.jsonl").exists()
        else 0,
        "pose_samples": len(sampler.samples),
        "log_dir": str(soak.log_dir),
        "steps_sha256": hashlib.sha256((soak.log_dir / "steps.jsonl").read_bytes()).hexdigest()[:16]
        if (soak.log_dir / "steps.jsonl").exists()
        else None,
    }


def print_table(summary: dict[str, Any]) -> None:
    print("| fault | injected | unsafe | logged | flew again |")
    print("| --- | --- | --- | --- | --- |")
    for kind, row in sorted(summary["by_kind"].items()):
        print(f"| {kind} | {row['count']} | {row['unsafe']} | {row['logged']} | {row['resumed']} |")
    print(
        f"unsafe outcomes {summary['unsafe_outcomes']}, unlogged faults {summary['unlogged']}, "
        f"end-of-run record {summary['end_of_run_record']} ({summary['end_reason']}), "
        f"onboard exit {summary['onboard_exit_status']}, "
        f"unparsable JSONL lines {summary['bad_jsonl_lines']}, "
        f"steps {summary['steps']}, steps.jsonl {summary['steps_jsonl_bytes'] / 1e6:.2f} MB"
    )
    for r in summary["faults"]:
        if r["unsafe"] or not r["logged"]:
            print(
                f"  {r['kind']} at {r['start_wall']:.1f} ({r['detail']}): "
                f"unsafe={r['unsafe']} logged={r['logged']}"
            )


ALL_KINDS = [
    "model_slow",
    "model_trickle_body",
    "model_trickle_headers",
    "model_huge",
    "model_garbage",
    "link_cut",
    "onboard_stall",
    "video_frozen",
    "command_stale",
    "command_other_run",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=1800.0, help="the flight's length (T_max)")
    parser.add_argument("--seed", type=int, default=1, help="the fault draw's seed")
    parser.add_argument("--gap-s", type=float, nargs=2, default=(20.0, 60.0), help="between faults (uniform)")
    parser.add_argument("--kinds", default=",".join(ALL_KINDS), help="comma-separated fault kinds")
    parser.add_argument("--json", type=Path, help="write the summary here")
    parser.add_argument("--work-dir", type=Path, help="keep the logs here (default: a new temp dir)")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(ALL_KINDS))
    if unknown or not math.isfinite(args.duration_s) or args.duration_s < 90.0:
        print(
            f"fault_soak: unknown kinds {unknown} or --duration-s below 90 (known: {ALL_KINDS})",
            file=sys.stderr,
        )
        return 2
    # SIGTERM (a `timeout`, a CI-less background run stopped by hand) unwinds like Ctrl+C, so every
    # child is continued and stopped: none outlives the soak.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="fault-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    soak = Soak(work, args.duration_s, random.Random(args.seed), kinds)
    names = ("sim", "pilot", "onboard")
    with contextlib.ExitStack() as stack:
        logs = {n: stack.enter_context((work / f"{n}.log").open("w")) for n in names}
        sampler: PoseSampler | None = None
        onboard_rc: int | None = None
        try:
            soak.start(logs)
            sampler = PoseSampler(soak.sim_port)
            threading.Thread(target=sampler.run, daemon=True).start()
            print(f"fault soak: {args.duration_s:.0f} s, logs in {work}", flush=True)
            soak.fly(tuple(args.gap_s), sampler, first_fault_s=30.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                onboard_rc = soak.procs["onboard"].wait(timeout=args.duration_s + 120.0)
        finally:
            if sampler is not None:
                sampler.stop.set()
            if soak.proxy is not None:
                soak.proxy.shutdown()
            if soak.operator is not None:
                soak.operator.close()
            for name in ("onboard", "pilot", "sim"):
                if name in soak.procs:
                    with contextlib.suppress(Exception):
                        os.kill(soak.procs[name].pid, signal.SIGCONT)
                    stop_process(soak.procs[name])
    assert sampler is not None
    summary = summarise(soak, sampler, onboard_rc)
    print_table(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return (
        0
        if summary["unsafe_outcomes"] == 0 and summary["unlogged"] == 0 and summary["end_of_run_record"]
        else 1
    )


if __name__ == "__main__":
    raise SystemExit(main())
