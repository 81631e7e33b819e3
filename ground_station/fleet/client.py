"""FleetClient: one GroundLink to N drones, their state, and every command the operator can give.

Commands are acked by each drone (common.link); the safety commands go to every drone at once and
return one AckRecord per drone, so the operator sees exactly who confirmed. Nothing here blocks the
link's I/O thread: its callbacks (FleetIntake) only update FleetState. The jobs are split: FleetIntake
records what the drones send, AckFanOut sends a command to several drones and records their acks,
TrafficRelay tells each drone where the others are; FleetClient composes them with the operator's
commands.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from common import messages
from common.actions import Action, action_to_dict
from common.errors import ConfigError
from common.link import CurveClient, DroneEndpoint, GroundLink, GroundLinkConfig, Insecure
from common.messages import (
    Ack,
    Body,
    EStop,
    GoTo,
    Hold,
    Instruction,
    Judgement,
    JudgementVerdict,
    Land,
    Order,
    RemoteAction,
    ReturnHome,
    Traffic,
)
from ground_station.fleet.acks import AckFanOut
from ground_station.fleet.geo import GeoPoint, ned_from_geo
from ground_station.fleet.intake import FleetIntake
from ground_station.fleet.state import AckRecord, FleetState, FrameRecord, OrderRecord
from ground_station.fleet.traffic import TrafficRelay

SAFETY_COMMANDS = {"estop": EStop, "hold": Hold, "land": Land, "return_home": ReturnHome}


@dataclass(frozen=True)
class DroneAddress:
    """A drone's link: its id and the base address its onboard process binds (PORT, PORT+1, PORT+2)."""

    drone_id: str
    base: str  # tcp://HOST:PORT
    server_public_key: bytes | None = None

    @classmethod
    def parse(cls, spec: str) -> DroneAddress:
        """`Drone1=tcp://127.0.0.1:6100`."""
        name, sep, base = spec.partition("=")
        if not sep or not name:
            raise ConfigError(f"drone {spec!r} must look like NAME=tcp://HOST:PORT")
        cls.endpoint(base.strip(), name.strip())
        return cls(name.strip(), base.strip())

    @staticmethod
    def endpoint(base: str, drone_id: str, key: bytes | None = None) -> DroneEndpoint:
        parts = urlsplit(base)
        if parts.scheme != "tcp" or parts.port is None or not parts.hostname:
            raise ConfigError(f"drone {drone_id}: address {base!r} must look like tcp://HOST:PORT")
        host, port = parts.hostname, parts.port
        return DroneEndpoint(
            drone_id, f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}", f"tcp://{host}:{port + 2}", key
        )

    def to_endpoint(self) -> DroneEndpoint:
        return self.endpoint(self.base, self.drone_id, self.server_public_key)


class FleetClient:
    def __init__(
        self,
        drones: Iterable[DroneAddress],
        security: CurveClient | Insecure | None = None,
        config: GroundLinkConfig | None = None,
        stale_after_s: float = 2.0,
        traffic_hz: float = 10.0,
    ) -> None:
        """`traffic_hz`: how often each drone is sent its fleet mates' positions (their telemetry) for
        its safety governor's separation; 0 relays none. Every drone must report positions in one
        world frame (the built-in sim's, or each vehicle URL's `spawn=`) for that to mean anything."""
        self.addresses = list(drones)
        if not self.addresses:
            raise ConfigError("a fleet needs at least one drone")
        ids = [a.drone_id for a in self.addresses]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"drone ids must be distinct: {ids}")
        self.drone_ids = ids
        self.state = FleetState(ids)
        self.stale_after_s = stale_after_s
        if traffic_hz < 0:
            raise ConfigError(f"traffic_hz={traffic_hz} must be >= 0 (0: no traffic relay)")
        self.traffic_hz = traffic_hz
        # Set by a fleet-wide e-stop, hold, land or return home: the commander and the one-context
        # model give no more orders until the operator starts a structure again (resume_orders).
        self.orders_paused: str | None = None
        # The link is built with the intake's callbacks; the intake reads the link's clock offsets
        # only when a frame arrives, by which time `self.link` exists.
        self.intake = FleetIntake(self.state, lambda drone_id: self.link.clock_offset(drone_id))
        self.link = GroundLink(
            config or GroundLinkConfig(),
            security if security is not None else Insecure(),
            on_telemetry=self.intake.on_telemetry,
            on_frame=self.intake.on_frame,
            on_step=self.intake.on_step,
            on_declaration=self.intake.on_declaration,
            on_link=self.intake.on_link,
        )
        self._acks = AckFanOut(self.state, self.link.send_command_async)
        self._relay = TrafficRelay(self.state, stale_after_s, traffic_hz, self.link.send_traffic)
        self._started = False

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FleetClient:
        self.link.start()
        for address in self.addresses:
            self.link.add_drone(address.to_endpoint())
        self._started = True
        if self.traffic_hz > 0 and len(self.drone_ids) > 1:
            self._relay.start()
        return self

    def close(self) -> None:
        if self._started:
            self._relay.stop()
            self.link.close()
            self._started = False

    def traffic_for(self, drone_id: str, now_s: float | None = None) -> Traffic:
        """What `drone_id` is sent: every other drone whose telemetry is fresh (not stale), as heard."""
        return self._relay.traffic_for(drone_id, now_s)

    def __enter__(self) -> FleetClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_for_link(self, timeout_s: float = 30.0, drones: Iterable[str] | None = None) -> bool:
        """Until every drone (or those named) has sent telemetry; False on timeout."""
        wanted = list(drones or self.drone_ids)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.state.lock:
                if all(self.state.drones[d].telemetry is not None for d in wanted):
                    return True
            time.sleep(0.05)
        return False

    # ---- commands --------------------------------------------------------------------------------
    def send_async(self, drone_id: str, command: Body) -> Future[Ack]:
        return self.link.send_command_async(drone_id, command)

    def send(self, drone_id: str, command: Body) -> AckRecord:
        return self.fan_out(command, [drone_id])[drone_id]

    def fan_out(
        self,
        command: Body,
        drones: Iterable[str] | None = None,
        wait_s: float = 10.0,
        on_ack: Callable[[AckRecord], None] | None = None,
    ) -> dict[str, AckRecord]:
        """Send `command` to every drone named (all by default) at once; one AckRecord each, timed
        when it arrives (see AckFanOut.fan_out); returns once all have arrived or given up."""
        return self._acks.fan_out(command, list(drones or self.drone_ids), wait_s, on_ack)

    def safety(
        self,
        kind: str,
        drones: Iterable[str] | None = None,
        reason: str = "",
        on_ack: Callable[[AckRecord], None] | None = None,
    ) -> dict[str, AckRecord]:
        """estop / hold / land / return_home to the fleet (or the drones named); one ack per drone."""
        if kind not in SAFETY_COMMANDS:
            raise ValueError(f"safety command {kind!r} is not one of {sorted(SAFETY_COMMANDS)}")
        command = SAFETY_COMMANDS[kind](reason=reason or f"ground station {kind}")
        targets = list(drones or self.drone_ids)
        if set(targets) >= set(self.drone_ids):
            self.orders_paused = f"{kind} (all drones)"
        self.state.emit("safety", None, command=kind, drones=targets)
        return self.fan_out(command, targets, on_ack=on_ack)

    def forget_telemetry(self, drone_id: str) -> None:
        """A drone re-launched: what its previous process last said no longer describes it."""
        with self.state.lock:
            drone = self.state.drones[drone_id]
            drone.telemetry = None
            drone.telemetry_received_s = None
            drone.link_state = "connecting"
            drone.home = None
        self.state.emit("relaunch", drone_id)

    def resume_orders(self) -> None:
        """The operator started a structure again: orders may flow (to the drones still flying)."""
        self.orders_paused = None

    def order_blocker(self, drone_id: str, now_s: float | None = None) -> str | None:
        """Why an order must not go to this drone now, or None. An order resumes a holding drone
        (that is how a sub-agent goes on after its order expired), so one sent to a drone the
        operator stopped, or that stopped itself for safety, would undo that stop."""
        if self.orders_paused is not None:
            return f"orders paused by {self.orders_paused}"
        now_s = time.monotonic() if now_s is None else now_s
        with self.state.lock:
            drone = self.state.drones[drone_id]
            t = drone.telemetry
            if t is None:
                return "not reporting yet"
            if drone.is_stale(now_s, self.stale_after_s):
                return "not heard from"
            if t.mode == "flying" or (t.mode == "hold" and t.safety_state == "order expired"):
                return None
            return f"{t.mode}" + (f" ({t.safety_state})" if t.safety_state not in ("", "ok") else "")

    def instruct(self, text: str, drones: Iterable[str] | None = None) -> dict[str, AckRecord]:
        targets = list(drones or self.drone_ids)
        self.state.emit("instruction", None, text=text, drones=targets)
        with self.state.lock:
            for d in targets:
                self.state.drones[d].history.clear()
        return self.fan_out(Instruction(text), targets)

    def order(self, drone_id: str, text: str, expires_after_steps: int = 6) -> OrderRecord:
        """A commander's order to one sub-agent; the previous one is replaced."""
        record = OrderRecord(uuid.uuid4().hex[:8], drone_id, text, expires_after_steps, time.time())
        blocker = self.order_blocker(drone_id)
        if blocker is not None:  # not sent: the drone keeps what it is doing (and its order)
            record.state = "skipped"
            with self.state.lock:
                self.state.orders.append(record)
            self.state.emit(
                "order", drone_id, record, order_id=record.order_id, text=text, result=f"skipped: {blocker}"
            )
            return record
        with self.state.lock:
            previous = self.state.drones[drone_id].order
            if previous is not None and previous.state in ("sent", "active"):
                previous.state = "replaced"
            self.state.drones[drone_id].order = record
            self.state.orders.append(record)
        ack = self.fan_out(Order(record.order_id, text, expires_after_steps), [drone_id])[drone_id]
        with self.state.lock:
            if record.state == "sent":
                record.state = "active" if ack.result == "ok" else "rejected"
        self.state.emit("order", drone_id, record, order_id=record.order_id, text=text, result=ack.result)
        return record

    def goto(
        self, drone_id: str, north_m: float, east_m: float, down_m: float, goto_id: str | None = None
    ) -> AckRecord:
        """Fly one drone to a world NED point (the frame of its telemetry); it checks the point against
        its geofence and altitude limits before it acks ("rejected" with the reason), then flies there
        under its safety governor and holds. The ack is timed when it arrives."""
        if drone_id not in self.state.drones:
            raise ConfigError(f"no drone {drone_id!r} in this fleet")
        goto_id = goto_id or uuid.uuid4().hex[:8]
        try:
            command = GoTo(goto_id, (float(north_m), float(east_m), float(down_m)))
        except (ValueError, TypeError) as exc:  # NaN or beyond any field: never sent
            raise ConfigError(f"goto {drone_id}: {exc}") from None
        self.state.emit("goto", drone_id, goto_id=goto_id, target_ned_m=list(command.target_ned_m))
        return self.send(drone_id, command)

    def goto_geo(
        self,
        drone_id: str,
        lat_deg: float,
        lon_deg: float,
        alt_m: float,
        geo_origin: GeoPoint,
        goto_id: str | None = None,
    ) -> AckRecord:
        """`goto` to a geographic point (altitude above sea level), converted here with the geo origin
        of the drones' world frame (the built-in simulator's: launch.SIM_GEO_ORIGIN)."""
        try:
            north, east, down = ned_from_geo(lat_deg, lon_deg, alt_m, geo_origin)
        except ValueError as exc:
            raise ConfigError(f"goto {drone_id}: {exc}") from None
        return self.goto(drone_id, north, east, down, goto_id)

    def judge(self, declaration_id: str, accept: bool, operator: str = "") -> AckRecord:
        """The operator's verdict on a declaration, sent to its drone (docs/safety.md#real-flight)."""
        declaration = self.state.declaration(declaration_id)
        if declaration is None:
            raise ConfigError(f"no declaration {declaration_id!r} in this session")
        verdict: JudgementVerdict = "accept" if accept else "reject"
        ack = self.send(declaration.drone, Judgement(declaration_id, verdict, operator))
        if ack.result == "ok":
            with self.state.lock:
                declaration.judged = verdict
        self.state.emit(
            "judgement",
            declaration.drone,
            declaration,
            declaration_id=declaration_id,
            verdict=verdict,
            result=ack.result,
        )
        return ack

    def remote_action(
        self, drone_id: str, action: Action, frame: FrameRecord, call_id: str, raw: str = ""
    ) -> Future[Ack]:
        """One-context mode: a ground-decided action, with the pose and stamp of the frame it came from."""
        raw = raw[: messages.MAX_RAW_CHARS]  # the model's whole reply may be longer than a message holds
        command = RemoteAction(action, call_id, frame.seq, frame.pose, frame.capture_time_s, raw)
        self.state.emit("remote_action", drone_id, action=action_to_dict(action), call_id=call_id)
        return self.link.send_command_async(drone_id, command)

    # ---- session log ------------------------------------------------------------------------------
    def export_session(self, path: str | Path) -> Path:
        """The session log as JSON lines: every instruction, order, ack, step, declaration, judgement."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.state.lock:
            entries = list(self.state.session_log)
        with path.open("w") as fh:
            for entry in entries:
                fh.write(json.dumps(entry, default=_jsonable) + "\n")
        return path


def _jsonable(value: Any) -> Any:
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return str(value)
