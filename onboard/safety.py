"""Safety below the model, applied on every actuation tick whatever the pilot said.

The governor turns the setpoint the plan asks for into the one that is sent, and reports every
clamp with both values. It also owns the flight mode: normal flight, hold (with a reason), landing,
e-stop. Each transition is logged once with why.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

import msgspec

from common.interfaces import Telemetry
from common.pose import Pose
from onboard.config_limits import check_limits
from onboard.controller import body_to_world, world_to_body
from onboard.setpoints import HOLD, Setpoint

log = logging.getLogger(__name__)


class SafetyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    geofence_radius_m: float = 150.0  # horizontal distance from home
    altitude_floor_m: float = 0.5  # above home; no descent below it while flying
    altitude_ceiling_m: float = 60.0
    max_horizontal_m_s: float = 3.0
    max_vertical_m_s: float = 1.5
    max_yaw_rate_deg_s: float = 90.0
    # How far ahead the geofence looks: a setpoint that would cross the fence within this time is cut.
    lookahead_s: float = 0.5
    max_consecutive_failures: int = 5  # pilot failures (malformed, stale, backend down) before hold
    link_lost_hold_s: float = 3.0  # ground-station link lost this long -> hold
    link_lost_land_s: float = 30.0  # ... this long -> land
    battery_land_fraction: float = 0.15
    estop_action: str = "land"  # "land" or "kill"
    land_on_collision: bool = False  # default: hold and report
    # Fleet traffic (other drones' positions, when something feeds them: see set_traffic): motion that
    # would bring the drone within this horizontal distance of one inside the look-ahead is cut, unless
    # the two are this far apart in height.
    separation_m: float = 1.5
    separation_vertical_m: float = 1.0
    # A fleet mate's position this old (its report's age plus the time since it arrived) is dropped:
    # a relay that stopped must not leave phantom drones in the way. Younger ones are carried forward
    # by their velocity.
    traffic_max_age_s: float = 1.0

    def __post_init__(self) -> None:
        check_limits(self)  # onboard.config_limits: every number's valid range
        if self.estop_action not in ("land", "kill"):
            raise ValueError(f"estop_action={self.estop_action!r} must be 'land' or 'kill'")
        if not 0 <= self.altitude_floor_m < self.altitude_ceiling_m:
            raise ValueError(
                f"need 0 <= altitude_floor_m ({self.altitude_floor_m}) < altitude_ceiling_m "
                f"({self.altitude_ceiling_m})"
            )


class Mode(str, Enum):
    FLYING = "flying"  # the pilot's plans are executed (within the limits)
    HOLD = "hold"  # position hold; the pilot's plans are not executed
    LANDING = "landing"
    ESTOP = "estop"


@dataclass(frozen=True)
class Clamp:
    """One limit that changed a setpoint: what was asked, what was sent, and which rule."""

    rule: str
    asked: Setpoint
    sent: Setpoint
    detail: str


@dataclass
class SafetyStatus:
    mode: Mode = Mode.FLYING
    reason: str = ""
    consecutive_failures: int = 0
    clamps: int = 0
    events: list[str] = field(default_factory=list)


class SafetyGovernor:
    """Thread-safe: the decision loop reports failures and commands, the actuation loop filters."""

    def __init__(self, config: SafetyConfig, home: Pose, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock` ages fleet traffic: the runtime's own (simulated time in lock-step, where a slow
        model call between two ticks must not age a position the driver set that same tick)."""
        self.config = config
        self.home = home
        self._clock = clock
        self._lock = threading.Lock()
        self._status = SafetyStatus()
        self._link_lost_since_s: float | None = None
        self._land_requested = False
        # other drones: (world NED position, velocity, age when set, self._clock() when set)
        self._traffic: list[tuple[tuple[float, float, float], tuple[float, float, float], float, float]] = []

    # ---- mode changes -------------------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        with self._lock:
            return self._status.mode

    @property
    def reason(self) -> str:
        with self._lock:
            return self._status.reason

    def status(self) -> SafetyStatus:
        with self._lock:
            s = self._status
            return SafetyStatus(s.mode, s.reason, s.consecutive_failures, s.clamps, list(s.events))

    def _set_mode(self, mode: Mode, reason: str) -> bool:
        """Caller holds the lock. Modes only escalate (FLYING < HOLD < LANDING < ESTOP) unless resumed."""
        order = [Mode.FLYING, Mode.HOLD, Mode.LANDING, Mode.ESTOP]
        if order.index(mode) < order.index(self._status.mode):
            return False
        if mode == self._status.mode and reason == self._status.reason:
            return False
        self._status.mode = mode
        self._status.reason = reason
        self._status.events.append(f"{mode.value}: {reason}")
        log.warning("safety: %s (%s)", mode.value, reason)
        return True

    def hold(self, reason: str) -> bool:
        with self._lock:
            return self._set_mode(Mode.HOLD, reason)

    def land(self, reason: str) -> bool:
        with self._lock:
            return self._set_mode(Mode.LANDING, reason)

    def estop(self, reason: str = "e-stop") -> bool:
        with self._lock:
            return self._set_mode(Mode.ESTOP, reason)

    def resume(self, reason: str) -> bool:
        """Back to normal flight from HOLD (an operator's new instruction). Never from landing or e-stop."""
        with self._lock:
            if self._status.mode != Mode.HOLD:
                return False
            self._status.mode = Mode.FLYING
            self._status.reason = ""
            self._status.consecutive_failures = 0
            self._status.events.append(f"flying: {reason}")
            log.info("safety: resume flying (%s)", reason)
            return True

    # ---- inputs from the decision loop and the link -------------------------------------------
    def pilot_failed(self, why: str) -> None:
        with self._lock:
            self._status.consecutive_failures += 1
            n = self._status.consecutive_failures
            if n >= self.config.max_consecutive_failures:
                self._set_mode(Mode.HOLD, f"{n} consecutive pilot failures (last: {why})")

    def pilot_ok(self) -> None:
        with self._lock:
            self._status.consecutive_failures = 0

    def link_state(self, link_ok: bool, now_s: float) -> None:
        """Ground-station link: hold after link_lost_hold_s, land after link_lost_land_s."""
        with self._lock:
            if link_ok:
                self._link_lost_since_s = None
                return
            if self._link_lost_since_s is None:
                self._link_lost_since_s = now_s
            lost_s = now_s - self._link_lost_since_s
            if lost_s >= self.config.link_lost_land_s:
                self._set_mode(Mode.LANDING, f"ground-station link lost for {lost_s:.1f} s")
            elif lost_s >= self.config.link_lost_hold_s:
                self._set_mode(Mode.HOLD, f"ground-station link lost for {lost_s:.1f} s")

    # ---- the per-tick filter ------------------------------------------------------------------
    def filter(self, asked: Setpoint, telemetry: Telemetry | None) -> tuple[Setpoint, list[Clamp]]:
        """The setpoint to send this tick, and the clamps that changed it (empty when none did)."""
        clamps: list[Clamp] = []
        if telemetry is not None:
            self._check_vehicle(telemetry)
        mode = self.mode
        if mode != Mode.FLYING:
            if not asked.is_zero:
                clamps.append(Clamp("mode", asked, HOLD, f"{mode.value}: {self.reason}"))
            return self._count(HOLD, clamps)
        sent = self._speed_caps(asked, clamps)
        if telemetry is not None:
            sent = self._fence(sent, telemetry.pose, clamps)
            sent = self._separate(sent, telemetry.pose, clamps)
        return self._count(sent, clamps)

    def set_traffic(
        self,
        positions_ned: Sequence[tuple[float, float, float]],
        velocities_ned_m_s: Sequence[tuple[float, float, float]] | None = None,
        ages_s: Sequence[float] | None = None,
    ) -> None:
        """The other drones' world NED positions (replacing the previous ones; empty: none known), with
        their velocities and how old each report is, when known.

        Whoever flies several drones in one world feeds this: onboard.lockstep's fleet driver every
        tick, the ground station's traffic relay (onboard.link) a few times a second. A drone alone,
        or one whose fleet mates' positions are unknown, keeps none."""
        n = len(positions_ned)
        velocities = velocities_ned_m_s if velocities_ned_m_s is not None else [(0.0, 0.0, 0.0)] * n
        ages = ages_s if ages_s is not None else [0.0] * n
        if len(velocities) != n or len(ages) != n:
            raise ValueError(
                f"{n} positions need as many velocities ({len(velocities)}) and ages ({len(ages)})"
            )
        now_s = self._clock()
        traffic = [
            (
                (float(p[0]), float(p[1]), float(p[2])),
                (float(v[0]), float(v[1]), float(v[2])),
                float(age),
                now_s,
            )
            for p, v, age in zip(positions_ned, velocities, ages, strict=True)
        ]
        with self._lock:
            self._traffic = traffic

    def traffic_now(self) -> list[tuple[float, float, float]]:
        """Fleet mates' positions now: each report carried forward by its velocity over its age, the
        ones older than traffic_max_age_s left out."""
        now_s = self._clock()
        with self._lock:
            traffic = list(self._traffic)
        out = []
        for (n, e, d), (vn, ve, vd), age_s, set_s in traffic:
            dt_s = age_s + (now_s - set_s)
            if dt_s > self.config.traffic_max_age_s:
                continue
            out.append((n + vn * dt_s, e + ve * dt_s, d + vd * dt_s))
        return out

    def _separate(self, sp: Setpoint, pose: Pose, clamps: list[Clamp]) -> Setpoint:
        """Cut the velocity component toward any fleet drone that would close within separation_m, and
        vertical motion into its height band while the two are horizontally that close."""
        traffic = self.traffic_now()
        if not traffic:
            return sp
        c = self.config
        fwd, right, up, yaw = sp
        vn, ve, _ = body_to_world(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
        closest = None
        for n, e, d in traffic:
            dn, de, dz = n - pose.x_m, e - pose.y_m, d - pose.z_m
            dist = math.hypot(dn, de)
            if dist < c.separation_m and abs(dz) > 1e-6:
                # Inside the ring: no climbing or descending into the other's height band either.
                closing_down = -up if dz > 0 else up  # NED: dz > 0 means the other is below us
                if closing_down > 0 and abs(dz) - closing_down * c.lookahead_s < c.separation_vertical_m:
                    up = 0.0
                    closest = dist if closest is None else min(closest, dist)
            if abs(dz) >= c.separation_vertical_m or dist < 1e-6:
                continue
            un, ue = dn / dist, de / dist
            closing = vn * un + ve * ue
            if closing > 0 and dist - closing * c.lookahead_s < c.separation_m:
                vn, ve = vn - closing * un, ve - closing * ue
                closest = dist if closest is None else min(closest, dist)
        if closest is None:
            return sp
        sent = Setpoint(*world_to_body(vn, ve, 0.0, pose.yaw_deg)[:2], up, yaw)
        clamps.append(
            Clamp("separation", sp, sent, f"fleet drone {closest:.1f} m away (keep {c.separation_m} m)")
        )
        return sent

    def _count(self, sent: Setpoint, clamps: list[Clamp]) -> tuple[Setpoint, list[Clamp]]:
        if clamps:
            with self._lock:
                self._status.clamps += len(clamps)
        return sent, clamps

    def _check_vehicle(self, t: Telemetry) -> None:
        with self._lock:
            if t.collided:
                if self.config.land_on_collision:
                    self._set_mode(Mode.LANDING, "collision")
                else:
                    self._set_mode(Mode.HOLD, "collision")
            if t.battery_fraction is not None and t.battery_fraction <= self.config.battery_land_fraction:
                self._set_mode(
                    Mode.LANDING,
                    f"battery {t.battery_fraction:.0%} <= {self.config.battery_land_fraction:.0%}",
                )

    def _speed_caps(self, sp: Setpoint, clamps: list[Clamp]) -> Setpoint:
        c = self.config
        fwd, right, up, yaw = sp
        h = math.hypot(fwd, right)
        if h > c.max_horizontal_m_s:
            k = c.max_horizontal_m_s / h
            fwd, right = fwd * k, right * k
        up = max(-c.max_vertical_m_s, min(c.max_vertical_m_s, up))
        yaw = max(-c.max_yaw_rate_deg_s, min(c.max_yaw_rate_deg_s, yaw))
        sent = Setpoint(fwd, right, up, yaw)
        if sent != sp:
            clamps.append(
                Clamp(
                    "speed",
                    sp,
                    sent,
                    f"caps h={c.max_horizontal_m_s} v={c.max_vertical_m_s} yaw={c.max_yaw_rate_deg_s}",
                )
            )
        return sent

    def _fence(self, sp: Setpoint, pose: Pose, clamps: list[Clamp]) -> Setpoint:
        """Cut the components that would carry the drone out of the fence within the look-ahead."""
        c = self.config
        fwd, right, up, yaw = sp
        vn, ve, _ = body_to_world(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
        rn, re = pose.x_m - self.home.x_m, pose.y_m - self.home.y_m
        r = math.hypot(rn, re)
        details = []
        if r > 1e-6:
            un, ue = rn / r, re / r
            outward = vn * un + ve * ue
            if outward > 0 and r + outward * c.lookahead_s > c.geofence_radius_m:
                vn, ve = vn - outward * un, ve - outward * ue
                details.append(f"geofence r={r:.1f} m (limit {c.geofence_radius_m} m)")
        altitude_m = self.home.z_m - pose.z_m
        if up < 0 and altitude_m + up * c.lookahead_s < c.altitude_floor_m:
            up = 0.0
            details.append(f"floor alt={altitude_m:.1f} m (limit {c.altitude_floor_m} m)")
        if up > 0 and altitude_m + up * c.lookahead_s > c.altitude_ceiling_m:
            up = 0.0
            details.append(f"ceiling alt={altitude_m:.1f} m (limit {c.altitude_ceiling_m} m)")
        if not details:
            return sp
        sent = Setpoint(*world_to_body(vn, ve, 0.0, pose.yaw_deg)[:2], up, yaw)
        clamps.append(Clamp("fence", sp, sent, "; ".join(details)))
        return sent

    def land_requested(self) -> bool:
        """True once when the mode asks the vehicle to land (LANDING, or ESTOP configured to land)."""
        with self._lock:
            mode = self._status.mode
            wants = mode == Mode.LANDING or (mode == Mode.ESTOP and self.config.estop_action == "land")
            if wants and not self._land_requested:
                self._land_requested = True
                return True
            return False
