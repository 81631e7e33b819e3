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

from common.frames import forward_right_to_north_east


@dataclass(frozen=True)
class DeadReckonConfig:
    response_time_s: float = 0.3  # first-order lag of the achieved speed behind the command
    # A gap between updates is a stall of this process, not of the drone: the Tello flies its last rc
    # sticks until it hears a command or lands by itself after 15 s without one (SDK 2.0 user guide:
    # "Tello will land automatically if it does not receive any command for 15 seconds"), so the whole
    # gap is flown on the last command, up to that. (Counting less would put the drone behind where it
    # is, inside a geofence it has left.)
    max_step_s: float = 15.0


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

    def command(self, forward_m_s: float, right_m_s: float, now_s: float | None = None) -> None:
        """A new command from now_s on. The time until now_s was flown on the previous one: it is
        integrated first (with the last measured yaw), or a stall ended by a new command (the hold that
        follows it) would be counted at the new command's speed."""
        with self._lock:
            if now_s is not None:
                self._integrate(now_s, self._yaw_deg)
            self._cmd_fwd_m_s, self._cmd_right_m_s = forward_m_s, right_m_s

    def displace(self, forward_m: float, right_m: float, yaw_deg: float) -> None:
        """A discrete move that the vehicle reported complete (Tello `forward 100`, `go x y z`)."""
        north_m, east_m = forward_right_to_north_east(forward_m, right_m, yaw_deg)
        with self._lock:
            self.x_m += north_m
            self.y_m += east_m

    def update(self, now_s: float, yaw_deg: float) -> tuple[float, float]:
        """Integrate to now_s with the measured yaw; returns (north_m, east_m)."""
        with self._lock:
            return self._integrate(now_s, yaw_deg)

    def _integrate(self, now_s: float, yaw_deg: float) -> tuple[float, float]:
        """Callers hold the lock."""
        last_s = now_s if self._last_s is None else self._last_s
        dt = min(max(0.0, now_s - last_s), self.config.max_step_s)
        self._last_s = now_s
        want_n, want_e = forward_right_to_north_east(self._cmd_fwd_m_s, self._cmd_right_m_s, yaw_deg)
        # The lag solved exactly over dt (v = want + (v0 - want) e^(-t/tau), and its integral), so
        # a long gap is as exact as many short ones
        tau = self.config.response_time_s
        decay = math.exp(-dt / tau)
        self.x_m += want_n * dt + (self.v_north_m_s - want_n) * tau * (1.0 - decay)
        self.y_m += want_e * dt + (self.v_east_m_s - want_e) * tau * (1.0 - decay)
        self.v_north_m_s = want_n + (self.v_north_m_s - want_n) * decay
        self.v_east_m_s = want_e + (self.v_east_m_s - want_e) * decay
        self._yaw_deg = yaw_deg
        return self.x_m, self.y_m

    def reset_velocity(self) -> None:
        with self._lock:
            self._cmd_fwd_m_s = self._cmd_right_m_s = 0.0
            self.v_north_m_s = self.v_east_m_s = 0.0
