"""Commanders for the commander + sub-agents structure (docs/protocol.md#several-drones): one order per drone.

`RuleCommander` is the baseline and the test commander: it finds candidate targets (operator-marked
map targets, and what the baseline detector sees in each drone's frame), expresses each as a world
bearing from each drone, and gives drones distinct candidates, nearest bearing first; a drone left
without a candidate gets its own search sector. Orders name the direction relative to the drone's
heading ("about 40 degrees to your right"): a sub-agent sees only its frame, never its world yaw.
It remembers where drones declared `finished` and sends no drone back to a candidate there (a
sub-agent that cannot tell look-alikes apart would otherwise be sent back to the same wrong one).
`ModelCommander` asks a model (models.pilot.command).

They live with the models, not in the ground station: the ground station's `CommanderStructure`
and the episode runner (episodes/fleet_episode.py, which never imports the ground station) drive
the same commanders.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from common.actions import Action, Finished
from common.camera import CameraProfile
from common.errors import ConfigError
from common.pose import Pose, wrap_deg

SAME_CANDIDATE_DEG = 12.0  # two sightings closer than this in bearing are one candidate
SAME_SPOT_M = 3.0  # two candidates closer than this on the ground are one object
DECLARED_RADIUS_M = 5.0  # a candidate this close to a declaration's spot is the object declared
DECLARE_AHEAD_M = 3.0  # a declaring drone's object lies about this far ahead (its arrival distance)
MAX_POOLED_SPOTS = 8  # nearest candidate spots considered (the assignment search is exhaustive)
ASSIGNED_NEAR_M = 10.0  # a declaration this close to the drone's assigned candidate was at that one


@dataclass(frozen=True)
class DroneView:
    """What the commander knows of one drone."""

    drone_id: str
    pose: Pose | None
    image: Any | None  # the newest frame (BGR), or None
    last_action: Action | None


@dataclass(frozen=True)
class CommanderInput:
    instruction: str
    drones: Sequence[DroneView]
    marked_targets: Sequence[tuple[float, float]] = ()  # operator-marked world (x, y) NED, metres
    map_image: Any | None = None  # the control-tower map, for a model commander


@dataclass(frozen=True)
class Orders:
    orders: tuple[str, ...] | None  # one per drone, in the input's order; None: malformed (all hold)
    raw: str = ""
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


class Commander(Protocol):
    name: str

    def plan(self, situation: CommanderInput) -> Orders: ...


@dataclass(frozen=True)
class Candidate:
    bearing_deg: float  # world bearing from the drone, clockwise from north (NED yaw convention)
    distance_m: float | None
    source: str  # "marked" or "seen"


def bearing_to(pose: Pose, x_m: float, y_m: float) -> tuple[float, float]:
    """World bearing (deg, NED yaw convention) and ground distance from a pose to a point."""
    dx, dy = x_m - pose.x_m, y_m - pose.y_m
    return math.degrees(math.atan2(dy, dx)) % 360.0, math.hypot(dx, dy)


class RuleCommander:
    name = "rule"

    def __init__(self, camera: CameraProfile | None = None) -> None:
        self.camera = camera
        self._detector: Any = None
        self.declared_spots: list[tuple[float, float]] = []  # world (x, y) where drones declared
        self._assigned_spot: dict[str, tuple[float, float] | None] = {}  # per drone, from the last plan
        # Search sectors are fixed in the world from the first plan on, so a drone told to search
        # "behind you" is told "straight ahead" once it faces there, not sent round again.
        self._sector_base_deg: float | None = None

    def candidates(self, situation: CommanderInput, drone: DroneView) -> list[Candidate]:
        found: list[Candidate] = []
        if drone.pose is not None:
            for x_m, y_m in situation.marked_targets:
                bearing, distance = bearing_to(drone.pose, x_m, y_m)
                found.append(Candidate(bearing, distance, "marked"))
            if drone.image is not None:
                found.extend(self._seen(situation.instruction, drone.pose, drone.image))
        merged: list[Candidate] = []
        for cand in found:
            if all(abs(wrap_deg(cand.bearing_deg - m.bearing_deg)) > SAME_CANDIDATE_DEG for m in merged):
                merged.append(cand)
        return merged

    def _seen(self, instruction: str, pose: Pose, image: Any) -> list[Candidate]:
        from models.baseline.detector import Detector
        from models.baseline.instruction import parse_instruction

        try:
            target = parse_instruction(instruction)
        except ConfigError:
            return []
        if self._detector is None:
            self._detector = Detector(self.camera)
        height, width = image.shape[:2]
        camera = (self.camera or _default_camera()).scaled_to(width, height)
        out = []
        for det in self._detector.detect(image, target):
            offset_deg = math.degrees(math.atan2(det.point_px[0] - camera.cx_px, camera.fx_px))
            out.append(Candidate((pose.yaw_deg + offset_deg) % 360.0, det.depth_m, "seen"))
        return out

    def _remember_declarations(self, drones: Sequence[DroneView]) -> dict[str, tuple[float, float]]:
        """Where each drone that just declared did so (also kept in declared_spots for good)."""
        just: dict[str, tuple[float, float]] = {}
        for drone in drones:
            if not isinstance(drone.last_action, Finished) or drone.pose is None:
                continue
            pose = drone.pose
            spot = self._assigned_spot.get(drone.drone_id)
            if spot is None or math.dist(spot, (pose.x_m, pose.y_m)) > ASSIGNED_NEAR_M:
                rad = math.radians(pose.yaw_deg)
                spot = (
                    pose.x_m + DECLARE_AHEAD_M * math.cos(rad),
                    pose.y_m + DECLARE_AHEAD_M * math.sin(rad),
                )
            just[drone.drone_id] = spot
            if all(math.dist(spot, known) > SAME_SPOT_M for known in self.declared_spots):
                self.declared_spots.append(spot)
        return just

    def _declared_already(self, spot: tuple[float, float] | None) -> bool:
        return spot is not None and any(math.dist(spot, d) <= DECLARED_RADIUS_M for d in self.declared_spots)

    def _pool(self, situation: CommanderInput) -> list[tuple[float, float]]:
        """Distinct world spots of the candidates every drone sees (declared ones left out)."""
        pool: list[tuple[float, float]] = []
        for drone in situation.drones:
            for cand in self.candidates(situation, drone):
                spot = _world_spot(drone.pose, cand)
                if spot is None or self._declared_already(spot):
                    continue
                if all(math.dist(spot, known) > SAME_SPOT_M for known in pool):
                    pool.append(spot)
        return pool

    def _assign(
        self, drones: Sequence[DroneView], pool: list[tuple[float, float]], just_declared: dict[str, Any]
    ) -> dict[str, tuple[float, float]]:
        """Drone -> spot: as many drones as possible on distinct spots, least total distance.

        A drone keeps the spot it was sent to while that spot is still seen (orders are re-sent at
        every re-plan; switching would leave it stalling between two). Among the rest, the assignment
        of least total flight distance: such an assignment never has two paths crossing, so drones
        starting 2 m apart fan out instead of flying into each other.
        """
        result: dict[str, tuple[float, float]] = {}
        free = list(pool)
        for drone in drones:
            previous = self._assigned_spot.get(drone.drone_id)
            if drone.drone_id in just_declared or previous is None or drone.pose is None:
                continue
            kept = min(free, key=lambda s: math.dist(s, previous), default=None)
            if kept is not None and math.dist(kept, previous) <= SAME_SPOT_M:
                result[drone.drone_id] = kept
                free.remove(kept)
        waiting = [d for d in drones if d.drone_id not in result and d.pose is not None]
        here = {d.drone_id: (d.pose.x_m, d.pose.y_m) for d in waiting if d.pose is not None}
        free = sorted(free, key=lambda s: min((math.dist(s, p) for p in here.values()), default=0.0))
        free = free[:MAX_POOLED_SPOTS]
        slots = min(len(waiting), len(free))
        best: tuple[float, tuple[Any, ...]] | None = None
        for chosen in itertools.permutations(range(len(free)), slots):
            for drones_used in itertools.combinations(range(len(waiting)), slots):
                cost = sum(
                    math.dist(here[waiting[i].drone_id], free[j])
                    for i, j in zip(drones_used, chosen, strict=True)
                )
                if best is None or cost < best[0] - 1e-9:
                    best = (cost, tuple(zip(drones_used, chosen, strict=True)))
        for i, j in best[1] if best else ():
            result[waiting[i].drone_id] = free[j]
        return result

    def plan(self, situation: CommanderInput) -> Orders:
        n = len(situation.drones)
        just_declared = self._remember_declarations(situation.drones)
        if self._sector_base_deg is None:
            self._sector_base_deg = next(
                (d.pose.yaw_deg for d in situation.drones if d.pose is not None), None
            )
        spots = self._assign(situation.drones, self._pool(situation), just_declared)
        orders: list[str] = []
        assigned: list[dict[str, Any]] = []
        for index, drone in enumerate(situation.drones):
            heading = drone.pose.yaw_deg if drone.pose is not None else 0.0
            spot = spots.get(drone.drone_id)
            self._assigned_spot[drone.drone_id] = spot
            if spot is not None and drone.pose is not None:
                bearing, distance = bearing_to(drone.pose, *spot)
                where = f"the one {relative_direction(bearing - heading)}, about {distance:.0f} m away"
                orders.append(f"{situation.instruction} ({where})")
                assigned.append({"drone": drone.drone_id, "bearing_deg": round(bearing, 1)})
            elif drone.drone_id in just_declared and drone.pose is not None:
                # Nothing else in view: turn away from what it declared at, or the sub-agent (which
                # cannot tell look-alikes apart) would find the same one first and declare again.
                sector = (bearing_to(drone.pose, *just_declared[drone.drone_id])[0] + 180.0) % 360.0
                orders.append(f"{situation.instruction}; search {relative_direction(sector - heading)}")
                assigned.append({"drone": drone.drone_id, "search_bearing_deg": round(sector, 1)})
            else:
                sector = ((self._sector_base_deg or 0.0) + 360.0 * index / max(n, 1)) % 360.0
                orders.append(f"{situation.instruction}; search {relative_direction(sector - heading)}")
                assigned.append({"drone": drone.drone_id, "search_bearing_deg": round(sector, 1)})
        detail: dict[str, Any] = {"assignments": assigned}
        if self.declared_spots:
            detail["declared_spots"] = [[round(x, 1), round(y, 1)] for x, y in self.declared_spots]
        return Orders(tuple(orders), raw="", detail=detail)


def relative_direction(offset_deg: float) -> str:
    """A direction relative to a drone's heading, in words a sub-agent (model or baseline) can follow."""
    offset = wrap_deg(offset_deg)
    if abs(offset) < 5.0:
        return "straight ahead"
    if abs(offset) > 175.0:
        return "behind you"
    side = "right" if offset > 0 else "left"
    return f"about {round(abs(offset))} degrees to your {side}"


def _world_spot(pose: Pose | None, cand: Candidate) -> tuple[float, float] | None:
    if pose is None or cand.distance_m is None:
        return None
    rad = math.radians(cand.bearing_deg)
    return (pose.x_m + cand.distance_m * math.cos(rad), pose.y_m + cand.distance_m * math.sin(rad))


def _default_camera() -> CameraProfile:
    from common.camera import camera_profile

    return camera_profile("sim")


class ModelCommander:
    """The commander model behind any backend URL (openai://, vllm://, ...; serve-pilot included)."""

    def __init__(self, url: str, n_drones: int) -> None:
        from models.backends import open_backend
        from models.pilot import profile_for_url
        from models.pilot_prompt import CommanderPrompt

        self.backend = open_backend(url)
        self.prompt = CommanderPrompt(profile_for_url(url), n_drones)
        self.name = f"model:{url}"

    def plan(self, situation: CommanderInput) -> Orders:
        from models.pilot import command

        images = [d.image for d in situation.drones]
        if any(image is None for image in images):
            return Orders(None, error="a drone has no frame yet")
        decision = command(
            self.backend,
            self.prompt,
            situation.instruction,
            images,
            [d.last_action for d in situation.drones],
            situation.map_image,
        )
        return Orders(decision.orders, decision.raw, decision.error)

    def close(self) -> None:
        self.backend.close()
