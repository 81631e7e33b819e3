"""The onboard side of the ground-station link: publishes what the runtime does, obeys commands.

Commands arrive on the link's I/O thread; each handler only updates the runtime's state (mode,
instruction, schedule) and returns at once, so acks stay fast. The safety governor reads the link's
last-heard time on every actuation tick and holds, then lands (RuntimeConfig.safety.link_lost_*).
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import urlsplit

import msgspec

from common.actions import action_from_dict
from common.link.drone import CommandOutcome, DroneLink, DroneLinkConfig, ReceivedCommand
from common.link.liveness import LinkEvent
from common.link.security import CurveServer, Insecure
from common.messages import (
    Declaration,
    EStop,
    Hold,
    Instruction,
    JetsonHealth,
    Judgement,
    Land,
    Order,
    RemoteAction,
    ReturnHome,
    Step,
    Telemetry,
    Traffic,
)
from common.pose import Frame, Pose
from onboard.runtime import OnboardRuntime
from onboard.safety import LINK

log = logging.getLogger(__name__)


def endpoints(base: str) -> tuple[str, str, str]:
    """tcp://HOST:PORT -> telemetry PORT, frames PORT+1, commands PORT+2."""
    parts = urlsplit(base)
    if parts.scheme != "tcp" or parts.port is None:
        raise ValueError(f"ground-station address {base!r} must look like tcp://HOST:PORT")
    host = parts.hostname
    return (f"tcp://{host}:{parts.port}", f"tcp://{host}:{parts.port + 1}", f"tcp://{host}:{parts.port + 2}")


class RuntimeLink:
    """Implements the runtime's Publisher over a DroneLink and routes commands to the runtime."""

    def __init__(self, runtime: OnboardRuntime, link: DroneLink) -> None:
        self.runtime = runtime
        self.link = link
        self.frame_seq = -1  # the seq of the newest frame sent (DroneLink numbers the frames it queues)
        self.declaration_times: dict[str, float] = {}  # declaration_id -> t, for judgements
        self._jetson_warned = False
        self._traffic_ids: list[str] = []
        self._heard_link_s: float | None = None  # the link's last-heard time (monotonic) ...
        self._heard_runtime_s = 0.0  # ... on the runtime's clock

    # ---- Publisher ------------------------------------------------------------------------------
    def publish_telemetry(self, data: dict[str, Any]) -> None:
        stages = data.get("stages") or {}
        battery = data.get("battery_fraction")
        self.link.publish_telemetry(
            Telemetry(
                time_s=self.runtime.clock.now(),
                pose_ned=Pose.from_list(data["pose"]),
                velocity_ned_m_s=tuple(data["velocity_ned_m_s"]),
                battery_pct=None if battery is None else 100.0 * battery,
                mode=data["mode"],
                armed=data["armed"],
                link_state=self.link.ground_link_state,  # type: ignore[arg-type]
                control_rate_hz=float(data.get("served_rate_hz") or 0.0),
                latencies_s={k: float(v) for k, v in stages.items() if isinstance(v, (int, float))},
                safety_state=data.get("mode_reason") or "ok",
                jetson=self._jetson(data.get("jetson")),
            )
        )

    def _jetson(self, health: dict[str, Any] | None) -> JetsonHealth | None:
        """onboard.jetson's snapshot as the typed message field (None off a Jetson)."""
        if health is None:
            return None
        try:
            return msgspec.convert(health, JetsonHealth)
        except msgspec.ValidationError as exc:
            # Telemetry goes out regardless: a health reading that does not fit is dropped, once logged.
            if not self._jetson_warned:
                log.warning("Jetson health not sent: %s", exc)
                self._jetson_warned = True
            return None

    def publish_frame(self, frame: Frame) -> None:
        # Stamped on the runtime's clock (the link's clock): RemoteActions come back with this stamp
        # and the ground station converts it with the heartbeat clock offset.
        capture_s = float(frame.meta.get("capture_clock_s", frame.capture_time_s))
        decision = self.link.publish_frame(frame.image, capture_s, frame.pose)
        if decision.send:
            self.frame_seq += 1  # the runtime publishes a step's frame before the step itself

    def publish_step(self, step: dict[str, Any]) -> None:
        action = step.get("action")
        self.link.publish_step(
            Step(
                t_s=step["t"],
                call_id=str(step.get("call_id")),
                frame_seq=self.frame_seq,
                action=None if action is None else action_from_dict(action),
                raw=step.get("raw") or "",
                latencies_s={k: float(v) for k, v in (step.get("stages") or {}).items()},
                malformed_reason=step.get("error") if step.get("discarded") == "malformed" else None,
                executed=step.get("discarded") is None,
                order_id=step.get("order_id") or "",
                order_steps_left=step.get("order_steps_left"),
            )
        )

    def publish_declaration(self, declaration: dict[str, Any]) -> None:
        declaration_id = f"{self.runtime.config.drone}-{declaration['t']:.3f}"
        self.declaration_times[declaration_id] = float(declaration["t"])
        self.link.publish_declaration(
            Declaration(
                declaration_id=declaration_id,
                t_s=declaration["t"],
                pose_ned=Pose.from_list(declaration["pose"]),
                frame_seq=self.frame_seq,
                distance_m=declaration.get("distance_m"),
                bbox_distance_m=declaration.get("bbox_distance_m"),
                visible=declaration.get("visible"),
            )
        )

    # ---- commands -------------------------------------------------------------------------------
    def handle(self, command: ReceivedCommand) -> CommandOutcome:
        rt, body = self.runtime, command.body
        if isinstance(body, Instruction):
            rt.set_instruction(body.text)
        elif isinstance(body, Order):
            if body.expires_after_steps < 1:
                return CommandOutcome(False, f"expires_after_steps={body.expires_after_steps} must be >= 1")
            rt.set_order(body.order_id, body.text, body.expires_after_steps)
        elif isinstance(body, EStop):
            rt.estop(body.reason or "ground-station e-stop")
        elif isinstance(body, Hold):
            rt.hold(body.reason or "ground-station hold")
        elif isinstance(body, Land):
            rt.land(body.reason or "ground-station land")
        elif isinstance(body, ReturnHome):
            rt.return_home()
        elif isinstance(body, Judgement):
            if body.declaration_id not in self.declaration_times:
                return CommandOutcome(False, f"unknown declaration {body.declaration_id!r}")
            rt.judge(body.verdict == "accept", self.declaration_times[body.declaration_id])
        elif isinstance(body, RemoteAction):
            age_s = rt.clock.now() - body.capture_time_s
            if not rt.remote_action(body.action, body.frame_pose_ned, age_s, body.call_id, body.raw):
                return CommandOutcome(False, f"stale: frame {age_s:.2f} s old")
        else:
            return CommandOutcome(False, f"unsupported command {type(body).__name__}")
        return CommandOutcome(True)

    def on_traffic(self, traffic: Traffic) -> None:
        """Fleet mates' positions relayed by the ground station: into the safety governor, which keeps
        this drone's separation from them on every tick (the link has checked the numbers are finite)."""
        entries = [e for e in traffic.entries if e.drone_id != self.runtime.config.drone]
        self.runtime.governor.set_traffic(
            [e.position_ned_m for e in entries],
            [e.velocity_ned_m_s for e in entries],
            [e.age_s for e in entries],
        )
        ids = sorted(e.drone_id for e in entries)
        if ids != self._traffic_ids:  # logged when the set of fleet mates changes, not per message
            self._traffic_ids = ids
            self.runtime.event("traffic", drones=ids)

    def last_heard_s(self) -> float | None:
        """When the ground station was last heard, on the runtime's clock (the link times it on its
        own monotonic clock): the safety governor reads it on every actuation tick."""
        heard = self.link.ground_last_heard_s
        if heard is None:
            return None
        if heard != self._heard_link_s:  # converted once per heartbeat, so that it stays one number
            self._heard_link_s = heard
            self._heard_runtime_s = self.runtime.clock.now() - max(0.0, time.monotonic() - heard)
        return self._heard_runtime_s

    def on_link(self, event: LinkEvent) -> None:
        """Logged with the last-heard time. The hold and the landing need no event: the governor times
        the silence on every tick (a link that never came up is silent since it was bound)."""
        rt = self.runtime
        # a MAVLink vehicle sends GCS heartbeats on the ground station's behalf only while it is up
        ground_link = getattr(rt.vehicle, "set_ground_link", None)
        if callable(ground_link):
            ground_link(event.state == "up")
        heard = self.last_heard_s()
        rt.event(
            "link",
            state=event.state,
            silence_s=event.silence_s,
            last_heard_t=None if heard is None else heard - rt.t0_s,
            mode=rt.governor.mode.value,
        )

    def close(self) -> None:
        self.link.close()


def attach_link(
    runtime: OnboardRuntime,
    gs_address: str,
    secret_file: str | None = None,
    allowed_keys: list[str] | None = None,
) -> RuntimeLink:
    """Bind the drone's link at gs_address (CURVE when a secret file is given) and wire it in."""
    telemetry, frames, commands = endpoints(gs_address)
    security: CurveServer | Insecure
    if secret_file:
        security = CurveServer.from_files(secret_file, allowed_keys or [])
    else:
        log.warning("ground-station link without CURVE keys: any ground station on the network can command")
        security = Insecure()
    config = DroneLinkConfig(runtime.config.drone, telemetry, frames, commands)
    holder: dict[str, RuntimeLink] = {}
    link = DroneLink(
        config,
        security,
        handler=lambda cmd: holder["link"].handle(cmd),
        on_link=lambda ev: holder["link"].on_link(ev),
        clock=runtime.clock,
        on_traffic=lambda traffic: holder["link"].on_traffic(traffic),
    )
    bridge = RuntimeLink(runtime, link)
    holder["link"] = bridge
    # Timed from now: a ground station that never connects holds, then lands, the drone just the same.
    runtime.governor.watch(LINK, runtime.clock.now(), poll=bridge.last_heard_s)
    link.start()
    runtime.publisher = bridge
    runtime.event("link", state="listening", address=gs_address)
    return bridge
