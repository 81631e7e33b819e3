"""The built-in simulator's command-silence landing, per vehicle (sim_bridge.sim.multirotor runs the
rule): the simulator's stand-in for a flight controller's own failsafe when its companion dies (PX4's
offboard-loss action, a Tello's 15 s auto-land).

Off unless asked: `dronecats sim --land-on-silence-s N` arms it for every vehicle from the start (and
again after each `reset`), `dcSetSilenceLanding(vehicle, N)` for one vehicle (onboard's airsim://
adapter does, with its `silence_land_s`). A stock AirSim has neither, and a client that never asks
sees AirSim's behaviour unchanged: the vehicle hovers until told otherwise.
"""

from __future__ import annotations

from common.silence import check_silence_s
from sim_bridge.sim.world import World


class SilenceLanding:
    """Each vehicle's silence bound: the server's default (`--land-on-silence-s`) or what a client set."""

    def __init__(self, world: World, default_s: float | None = None) -> None:
        self.world = world
        self.default_s = default_s
        self.apply_default()

    def apply_default(self) -> None:
        """Every vehicle back to the server's default (at start and on `reset`: a new session)."""
        with self.world.lock:
            for slot in self.world.vehicles.values():
                slot.model.silence_land_s = self.default_s

    def set(self, vehicle_name: str, silence_s: float) -> float:
        """Arm (or with 0 disarm) one vehicle's landing; returns the bound now in effect (0: off)."""
        bound = check_silence_s(float(silence_s))
        with self.world.lock:
            self.world.vehicle(str(vehicle_name)).model.silence_land_s = bound
        return bound or 0.0

    def get(self, vehicle_name: str) -> float:
        with self.world.lock:
            return self.world.vehicle(str(vehicle_name)).model.silence_land_s or 0.0
