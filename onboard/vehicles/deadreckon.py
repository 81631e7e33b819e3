"""Dead-reckoned horizontal position for vehicles that do not measure it (the Tello has no GPS/VIO output).

Integrates the commanded body velocity, rotated by the *measured* yaw, through a first-order lag that
stands for the airframe's response; height and yaw come from the vehicle's sensors. The result drifts
with wind and with the unknown stick-to-speed scale, so telemetry built on it says so: positions
from here are labelled `position_source = "dead_reckoned"` by the adapters (see `Telemetry`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class DeadReckonConfig:
    response_time_s: float = 0.3  # first-order lag of the achieved speed behind the command
    max_step_s: float = 0.5  # a longer gap between updates is integrated as this (no jumps on stalls)


class DeadReckoner:
    """Thread-safe: the actuation loop sets commands, the telemetry path integrates and reads."""

    def __init__(self, x_m: float = 0.0, y_m: float = 0.0, config: DeadReckonConfig | None = None) -> None:
        self.config = config or DeadReckonConfig()
        self._lock = threading.Lock()
        self.x_m, self.y_m = x_m, y_m
        self._cmd_fwd_m_s = 0.0
        self._cmd_right_m_s = 0.0
        self.v_north_m_s = 0.0
        self.v_east_m_s = 0.0
        self._last_s: float | None = None
        self._yaw_deg = 0.0

    def command(self, forward_m_s: float, right_m_s: float) -> None:
        with self._lock:
            self._cmd_fwd_m_s, self._cmd_right_m_s = forward_m_s, right_m_s

    def displace(self, forward_m: float, right_m: float, yaw_deg: float) -> None:
        """A discrete move that the vehicle reported complete (Tello `forward 100`, `go x y z`)."""
        c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
        with self._lock:
            self.x_m += c * forward_m - s * right_m
            self.y_m += s * forward_m + c * right_m

    def update(self, now_s: float, yaw_deg: float) -> tuple[float, float]:
        """Integrate to now_s with the measured yaw; returns (north_m, east_m)."""
        with self._lock:
            if self._last_s is None:
                self._last_s = now_s
            dt = min(max(0.0, now_s - self._last_s), self.config.max_step_s)
            self._last_s = now_s
            c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
            want_n = c * self._cmd_fwd_m_s - s * self._cmd_right_m_s
            want_e = s * self._cmd_fwd_m_s + c * self._cmd_right_m_s
            a = 1.0 - math.exp(-dt / self.config.response_time_s) if dt > 0 else 0.0
            self.v_north_m_s += a * (want_n - self.v_north_m_s)
            self.v_east_m_s += a * (want_e - self.v_east_m_s)
            self.x_m += self.v_north_m_s * dt
            self.y_m += self.v_east_m_s * dt
            self._yaw_deg = yaw_deg
            return self.x_m, self.y_m

    def reset_velocity(self) -> None:
        with self._lock:
            self._cmd_fwd_m_s = self._cmd_right_m_s = 0.0
            self.v_north_m_s = self.v_east_m_s = 0.0
