"""A multirotor's battery: energy drawn by the rotors (scaled by thrust and climb rate) plus an idle
draw, integrated in simulation time; state of charge, open-circuit voltage and the sag under load.

Rotor power follows momentum theory (Leishman, Principles of Helicopter Aerodynamics, ch. 2): ideal
induced power goes as thrust^1.5 (P = T^1.5 / sqrt(2 rho A)), and in an axial climb at V_c it is
T (V_c/2 + sqrt((V_c/2)^2 + v_h^2)) with v_h the induced velocity at hover. The model is anchored to
the measured electrical hover power of the pack's airframe (hover_power_w), so efficiencies and
profile power are folded into that one figure:

    P_rotors = hover_power_w * (T/W)^1.5 * (lambda/2 + sqrt(lambda^2/4 + 1)),  lambda = V_climb / v_h

Descent is taken with the same formula (less power), floored at DESCENT_MIN_FACTOR: momentum theory
does not hold in the vortex-ring state, and a real descent still spends most of the hover power.
Forward flight's translational lift and drag are not modelled (both are second order at <= 6 m/s).

Defaults: a 1.5 kg quadrotor on a 4S 5000 mAh LiPo (74 Wh at 14.8 V), hovering at ~200 W, which gives
~22 min to empty at hover, ~19 min to the usual 15 % landing reserve: a typical flight time for
that class. The voltage is 4 cells on a LiPo open-circuit curve minus I * R of the pack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from common.errors import ConfigError

GRAVITY_M_S2 = 9.81
DESCENT_MIN_FACTOR = 0.7
# LiPo cell open-circuit voltage against state of charge (rested-cell curves as published by pack
# vendors and in RC-hobby discharge tests; 3.27 V at empty, 4.20 V full).
OCV_SOC = (0.0, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70, 0.80, 0.90, 1.00)
OCV_CELL_V = (3.27, 3.61, 3.69, 3.73, 3.77, 3.79, 3.82, 3.87, 3.93, 4.00, 4.08, 4.20)


@dataclass(frozen=True)
class BatteryConfig:
    capacity_wh: float = 74.0  # 4S 5000 mAh at 14.8 V nominal
    cells: int = 4
    start_fraction: float = 1.0  # state of charge at power-on
    hover_power_w: float = 200.0  # electrical power at hover (thrust = weight, no climb)
    idle_power_w: float = 3.0  # flight controller, radios, camera: drawn whenever powered
    hover_induced_velocity_m_s: float = 5.4  # v_h = sqrt(W / (2 rho A)): 1.5 kg on four 10" props
    resistance_ohm: float = 0.06  # the pack's internal resistance (voltage sag under load)
    # An empty pack forces a landing. Off where nothing can read the battery (AirSim's RPC has no
    # battery field): a long-lived server would otherwise land drones after ~20 min of flight, and a
    # runtime on airsim:// could not know why.
    enforced: bool = True

    def __post_init__(self) -> None:
        checks = {
            "capacity_wh": self.capacity_wh > 0,
            "cells": 1 <= self.cells <= 14,
            "start_fraction": 0.0 <= self.start_fraction <= 1.0,
            "hover_power_w": self.hover_power_w > 0,
            "idle_power_w": self.idle_power_w >= 0,
            "hover_induced_velocity_m_s": self.hover_induced_velocity_m_s > 0,
            "resistance_ohm": self.resistance_ohm >= 0,
        }
        for name, ok in checks.items():
            value = getattr(self, name)
            if not ok or not math.isfinite(value):
                raise ConfigError(f"battery {name}={value!r} is out of range")

    @property
    def capacity_mah(self) -> float:
        return self.capacity_wh / (self.cells * 3.7) * 1000.0


def cell_ocv_v(soc: float) -> float:
    """A LiPo cell's open-circuit voltage at this state of charge (0..1, clamped)."""
    return float(np.interp(min(max(soc, 0.0), 1.0), OCV_SOC, OCV_CELL_V))


def rotor_power_w(config: BatteryConfig, accel_ned_m_s2: np.ndarray, velocity_ned_m_s: np.ndarray) -> float:
    """Electrical rotor power for this acceleration and velocity (see the module docstring)."""
    # thrust per unit mass = a - g (NED, g points down, +z): hover gives (0, 0, -g)
    specific = np.asarray(accel_ned_m_s2, float) - np.array([0.0, 0.0, GRAVITY_M_S2])
    thrust_ratio = float(np.linalg.norm(specific)) / GRAVITY_M_S2
    lam = -float(velocity_ned_m_s[2]) / config.hover_induced_velocity_m_s  # climb is -z
    climb_factor = max(DESCENT_MIN_FACTOR, lam / 2.0 + math.sqrt(lam * lam / 4.0 + 1.0))
    return config.hover_power_w * thrust_ratio**1.5 * climb_factor


class Battery:
    """The pack's state, advanced by `drain` each simulator tick (the caller holds the world lock)."""

    def __init__(self, config: BatteryConfig | None = None) -> None:
        self.config = config or BatteryConfig()
        self.energy_wh = 0.0
        self.power_w = 0.0
        self.consumed_wh = 0.0
        self.consumed_mah = 0.0
        self.replace()

    def replace(self) -> None:
        """A fresh pack at the configured start charge (AirSim's reset restores the vehicle)."""
        self.energy_wh = self.config.capacity_wh * self.config.start_fraction
        self.power_w = self.consumed_wh = self.consumed_mah = 0.0

    @property
    def fraction(self) -> float:
        """State of charge, 0..1."""
        return self.energy_wh / self.config.capacity_wh

    @property
    def empty(self) -> bool:
        return self.energy_wh <= 0.0

    def ocv_v(self) -> float:
        return self.config.cells * cell_ocv_v(self.fraction)

    def current_a(self) -> float:
        """The current drawn at the last tick's power (P = V I with V the loaded voltage)."""
        ocv, r = self.ocv_v(), self.config.resistance_ohm
        if r == 0:
            return self.power_w / ocv
        disc = ocv * ocv - 4.0 * r * self.power_w  # V = OCV - I R and P = V I
        if disc < 0:  # more power than the pack can give: it delivers its maximum (I = OCV / 2R)
            return ocv / (2.0 * r)
        return (ocv - math.sqrt(disc)) / (2.0 * r)

    def voltage_v(self) -> float:
        """Terminal voltage under the last tick's load."""
        return self.ocv_v() - self.current_a() * self.config.resistance_ohm

    def drain(
        self, dt_s: float, accel_ned_m_s2: np.ndarray, velocity_ned_m_s: np.ndarray, rotors_on: bool
    ) -> None:
        """Draw dt_s of power: the idle draw, plus the rotors' when they carry the vehicle."""
        if dt_s <= 0:
            return
        power = self.config.idle_power_w
        if rotors_on:
            power += rotor_power_w(self.config, accel_ned_m_s2, velocity_ned_m_s)
        self.power_w = power if not self.empty else 0.0
        current = self.current_a()
        used_wh = min(self.energy_wh, self.power_w * dt_s / 3600.0)
        self.energy_wh -= used_wh
        self.consumed_wh += used_wh
        self.consumed_mah += current * dt_s / 3.6
