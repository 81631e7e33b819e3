"""The sweep that stands in for Unreal's swept move (SetActorLocation(..., bSweep=true)): a ray of
the moved body's origin, stopping short of the first thing in its way."""

from __future__ import annotations

import numpy as np

from sim_bridge.sim.world import World

SWEEP_CLEARANCE_M = 0.3  # a swept body stops this far short of what it hit (~a drone's radius)


def sweep(world: World, start: np.ndarray, end: np.ndarray, own_body: int) -> tuple[int, np.ndarray] | None:
    """(body, point) of the first body on the segment start -> end other than `own_body`, or None."""
    if float(np.linalg.norm(end - start)) < 1e-9:
        return None
    bodies, fractions = world.scene.ray_test(start[None, :], end[None, :], ignore_body=own_body)
    if int(bodies[0]) < 0:
        return None
    return int(bodies[0]), start + float(fractions[0]) * (end - start)
