# ruff: noqa: N802 -- the method names are AirSim wire names
"""Segmentation object IDs (simSetSegmentationObjectID, simGetSegmentationObjectID: RpcLibServerBase.cpp's
world-sim bindings) and the segmentation view's colours.

The IDs are shared state: the Segmentation and Infrared images draw them, the lidar reports them,
collisions name them, and respawning or destroying an object moves or drops its ID; every family
that needs them gets the one `SegmentationIds` object.
"""

from __future__ import annotations

import re
import threading

import numpy as np

from sim_bridge.rpc.dispatch import HandlerTable
from sim_bridge.rpc.image_types import default_object_id
from sim_bridge.sim.world import World


class SegmentationIds:
    """Body id -> segmentation object id, as simSetSegmentationObjectID set them."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._ids: dict[int, int] = {}
        self._lock = threading.Lock()

    def snapshot(self) -> dict[int, int]:
        """The IDs set so far (body id -> object id)."""
        with self._lock:
            return dict(self._ids)

    def of_body(self, body_id: int) -> int:
        """A body's segmentation object id (its Unreal stencil value; -1 where none was set)."""
        with self._lock:
            return self._ids.get(body_id, -1)

    def set(self, body_ids: list[int], object_id: int) -> None:
        with self._lock:
            for body in body_ids:
                self._ids[body] = object_id

    def pop(self, body_id: int) -> int | None:
        """Forget a body's id (its body is gone: PyBullet reuses body ids); the id it had."""
        with self._lock:
            return self._ids.pop(body_id, None)

    def mesh_names(self) -> dict[str, int]:
        """Name -> body id of everything a segmentation ID can be set on."""
        w = self.world
        with w.lock:
            names = {n: o.body_id for n, o in w.objects.items()}
            names.update({n: s.body_id for n, s in w.vehicles.items()})
        return names

    def object_ids(self) -> dict[int, int]:
        """Body id -> segmentation object ID: simSetSegmentationObjectID's, else AirSim's starting ID
        of the body's name."""
        ids = {body: default_object_id(name) for name, body in self.mesh_names().items()}
        ids.update(self.snapshot())
        return ids


class SegmentationApi:
    """simSetSegmentationObjectID and simGetSegmentationObjectID over the shared IDs."""

    def __init__(self, ids: SegmentationIds) -> None:
        self._ids = ids

    def handlers(self) -> HandlerTable:
        return {
            "simSetSegmentationObjectID": self.simSetSegmentationObjectID,
            "simGetSegmentationObjectID": self.simGetSegmentationObjectID,
        }

    def simSetSegmentationObjectID(self, mesh_name: str, object_id: int, is_name_regex: bool = False) -> bool:
        """AirSim's rule: names match case-insensitively (a regex over whole names when asked); an id
        is 0-255. True when some object matched."""
        object_id = int(object_id)
        if not 0 <= object_id <= 255:
            return False
        names = self._ids.mesh_names()
        if is_name_regex:
            pattern = re.compile(str(mesh_name), re.IGNORECASE)
            bodies = [b for n, b in names.items() if pattern.fullmatch(n)]
        else:
            bodies = [b for n, b in names.items() if n.lower() == str(mesh_name).lower()]
        self._ids.set(bodies, object_id)
        return bool(bodies)

    def simGetSegmentationObjectID(self, mesh_name: str) -> int:
        for name, body in self._ids.mesh_names().items():
            if name.lower() == str(mesh_name).lower():
                return self._ids.of_body(body)
        return -1


def segmentation_colours(seg: np.ndarray, object_ids: dict[int, int] | None = None) -> np.ndarray:
    """Body ids -> a stable BGR colour per id (sky black), like AirSim's segmentation view. A body
    given a segmentation object id (simSetSegmentationObjectID) takes that id's colour instead:
    id 0 black, others from a fixed table (see segmentation_colour)."""
    ids = seg.astype(np.int64) + 3
    b = (ids * 97) % 256
    g = (ids * 57) % 256
    r = (ids * 173) % 256
    out = np.stack([b, g, r], axis=-1).astype(np.uint8)
    out[seg == -1] = 0
    for body, object_id in (object_ids or {}).items():
        out[seg == body] = segmentation_colour(object_id)
    return out


def segmentation_colour(object_id: int) -> tuple[int, int, int]:
    """The BGR colour of a segmentation object id: 0 black, others spread over the colour cube.
    (Clients need not know the table: episodes.hil reads the target's colour off a frame.)"""
    if object_id == 0:
        return (0, 0, 0)
    k = object_id * 2654435761
    return (64 + k % 192, 64 + (k >> 8) % 192, 64 + (k >> 16) % 192)
