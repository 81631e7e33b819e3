"""The flight envelope the governor clamps every setpoint into while flying: speed caps, the geofence
and the altitude floor and ceiling with look-ahead, and separation from fleet mates (`FleetTraffic`).

Each clamp that changed a setpoint is reported as a `Clamp` with what was asked and what was sent.
Pure functions of the setpoint, the pose and the config, apart from the traffic (fed from other
threads, hence its own lock).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from common.frames import heading_to_ned, ned_to_heading
from common.pose import Pose
from onboard.safety_config import SafetyConfig
from onboard.setpoints import Setpoint

Vector = tuple[float, float, float]


@dataclass(frozen=True)
class Clamp:
    """One limit that changed a setpoint: what was asked, what was sent, and which rule."""

    rule: str
    asked: Setpoint
    sent: Setpoint
    detail: str


@dataclass(frozen=True)
class TrafficReport:
    """One fleet mate's report: world NED position and velocity, its age when set, and when it was set
    (on the governor's clock)."""

    position_ned: Vector
    velocity_ned_m_s: Vector
    age_s: float
    set_s: float


class FleetTraffic:
    """The other drones' last reported positions, carried forward by their velocities. Thread-safe:
    the fleet driver or the link's traffic relay sets them, the actuation tick reads them."""

    def __init__(self, max_age_s: float, clock: Callable[[], float]) -> None:
        self._max_age_s = max_age_s
        self._clock = clock
        self._lock = threading.Lock()
        self._reports: list[TrafficReport] = []

    def set(
        self,
        positions_ned: Sequence[Vector],
        velocities_ned_m_s: Sequence[Vector] | None = None,
        ages_s: Sequence[float] | None = None,
    ) -> None:
        n = len(positions_ned)
        velocities = velocities_ned_m_s if velocities_ned_m_s is not None else [(0.0, 0.0, 0.0)] * n
        ages = ages_s if ages_s is not None else [0.0] * n
        if len(velocities) != n or len(ages) != n:
            raise ValueError(
                f"{n} positions need as many velocities ({len(velocities)}) and ages ({len(ages)})"
            )
        now_s = self._clock()
        reports = [
            TrafficReport(
                (float(p[0]), float(p[1]), float(p[2])),
                (float(v[0]), float(v[1]), float(v[2])),
                float(age),
                now_s,
            )
            for p, v, age in zip(positions_ned, velocities, ages, strict=True)
        ]
        with self._lock:
            self._reports = reports

    def now(self) -> list[Vector]:
        """Positions now: each carried forward over its age, the ones older than max_age_s left out."""
        now_s = self._clock()
        with self._lock:
            reports = list(self._reports)
        out = []
        for r in reports:
            (n, e, d), (vn, ve, vd) = r.position_ned, r.velocity_ned_m_s
            dt_s = r.age_s + (now_s - r.set_s)
            if dt_s > self._max_age_s:
                continue
            out.append((n + vn * dt_s, e + ve * dt_s, d + vd * dt_s))
        return out


def world_clamp(
    rule: str,
    asked: Setpoint,
    world_ne_m_s: tuple[float, float],
    up_m_s: float,
    pose: Pose,
    detail: str,
    clamps: list[Clamp],
) -> Setpoint:
    """The setpoint a clamp worked out in the world frame (horizontal velocity north/east, climb), back
    in the body frame at the pose's heading, with the clamp recorded."""
    fwd, right, _ = ned_to_heading(world_ne_m_s[0], world_ne_m_s[1], 0.0, pose.yaw_deg)
    sent = Setpoint(fwd, right, up_m_s, asked.yaw_rate_deg_s)
    clamps.append(Clamp(rule, asked, sent, detail))
    return sent


class SafetyEnvelope:
    """The clamps, in the order the governor applies them: speed_caps, fence, separate."""

    def __init__(self, config: SafetyConfig) -> None:
        self.config = config

    def speed_caps(self, sp: Setpoint, clamps: list[Clamp]) -> Setpoint:
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

    def fence(self, sp: Setpoint, pose: Pose, home: Pose, clamps: list[Clamp]) -> Setpoint:
        """Cut the components that would carry the drone out of the fence around `home` within the
        look-ahead."""
        c = self.config
        fwd, right, up, _ = sp
        vn, ve, _ = heading_to_ned(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
        rn, re = pose.x_m - home.x_m, pose.y_m - home.y_m
        r = math.hypot(rn, re)
        details = []
        if r > 1e-6:
            un, ue = rn / r, re / r
            outward = vn * un + ve * ue
            if outward > 0 and r + outward * c.lookahead_s > c.geofence_radius_m:
                vn, ve = vn - outward * un, ve - outward * ue
                details.append(f"geofence r={r:.1f} m (limit {c.geofence_radius_m} m)")
        altitude_m = home.z_m - pose.z_m
        if up < 0 and altitude_m + up * c.lookahead_s < c.altitude_floor_m:
            up = 0.0
            details.append(f"floor alt={altitude_m:.1f} m (limit {c.altitude_floor_m} m)")
        if up > 0 and altitude_m + up * c.lookahead_s > c.altitude_ceiling_m:
            up = 0.0
            details.append(f"ceiling alt={altitude_m:.1f} m (limit {c.altitude_ceiling_m} m)")
        if not details:
            return sp
        return world_clamp("fence", sp, (vn, ve), up, pose, "; ".join(details), clamps)

    def recover(self, sp: Setpoint, pose: Pose, home: Pose, clamps: list[Clamp]) -> Setpoint:
        """A vehicle already outside the envelope is flown back in at recover_m_s (capped by the speed
        limits): down when above the ceiling, toward home when outside the fence. The clamps above
        only stop motion outward; nothing else brings a drone back that something else put outside."""
        c = self.config
        fwd, right, up, yaw = sp
        details = []
        altitude_m = home.z_m - pose.z_m
        if altitude_m > c.altitude_ceiling_m:
            up = -min(c.recover_m_s, c.max_vertical_m_s)
            details.append(
                f"above the ceiling alt={altitude_m:.1f} m (limit {c.altitude_ceiling_m} m): descending"
            )
        rn, re = pose.x_m - home.x_m, pose.y_m - home.y_m
        r = math.hypot(rn, re)
        if r > c.geofence_radius_m:
            speed = min(c.recover_m_s, c.max_horizontal_m_s)
            fwd, right = ned_to_heading(-rn / r * speed, -re / r * speed, 0.0, pose.yaw_deg)[:2]
            details.append(f"outside the geofence r={r:.1f} m (limit {c.geofence_radius_m} m): returning")
        if not details:
            return sp
        sent = Setpoint(fwd, right, up, yaw)
        clamps.append(Clamp("recover", sp, sent, "; ".join(details)))
        return sent

    def separate(self, sp: Setpoint, pose: Pose, traffic: Sequence[Vector], clamps: list[Clamp]) -> Setpoint:
        """Cut the velocity component toward any fleet drone that would close within separation_m, and
        vertical motion into its height band while the two are horizontally that close."""
        if not traffic:
            return sp
        c = self.config
        fwd, right, up, _ = sp
        vn, ve, _ = heading_to_ned(fwd, right, 0.0, pose.yaw_deg)  # linear: velocities as well
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
        detail = f"fleet drone {closest:.1f} m away (keep {c.separation_m} m)"
        return world_clamp("separation", sp, (vn, ve), up, pose, detail, clamps)
