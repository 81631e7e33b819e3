"""The airsim:// ground truth (onboard.vehicles.airsim_truth) over stock AirSim calls only, through the
real `airsim` client against `dronecats sim` (Drone2 spawned at world (0, 2, 0)), checked against the
built-in simulator's own answer (dcGroundTruth)."""

from __future__ import annotations

import pytest

airsim = pytest.importorskip("airsim")
pytest.importorskip("pybullet")

from onboard.vehicles.airsim import AirSimVehicle, parse_airsim_url  # noqa: E402
from onboard.vehicles.airsim_truth import RemoteTruth, learn_colour  # noqa: E402
from tests.support.airsim_clients import set_pose  # noqa: E402


def test_remote_truth_over_stock_calls(client, sim_port) -> None:
    """RemoteTruth with stock calls only: distances from simGetObjectPose and the box3D extent,
    visibility from simGetDetections, point on target from the frame's own Segmentation image."""
    set_pose(airsim, client, "Drone2", 5.0, -2.0, -2.0, 90.0)  # world (5, 0, -2) facing east
    name = client.simSpawnObject(
        "rt_car", "car@blue", airsim.Pose(airsim.Vector3r(5.0, 7.0, 0.0)), airsim.Vector3r(1, 1, 1)
    )
    try:
        url = f"airsim://127.0.0.1:{sim_port}/Drone2"
        vehicle = AirSimVehicle(parse_airsim_url(url))
        truth = RemoteTruth(vehicle, name)
        sample = truth.sample("Drone2")
        assert sample.visible is True
        assert truth.extent is not None and truth.extent.source == "box3D"
        reference = client.client.call("dcGroundTruth", "Drone2", name)  # the built-in sim's own answer
        assert sample.distance_m == pytest.approx(reference["distance_m"], abs=1e-6)
        assert sample.bbox_distance_m == pytest.approx(reference["bbox_distance_m"], abs=1e-6)
        assert sample.target_pose[:2] == pytest.approx([5.0, 7.0])
        assert client.simSetSegmentationObjectID(".*", 0, True) is True
        assert client.simSetSegmentationObjectID(name, 1, False) is True
        assert client.simGetSegmentationObjectID(name) == 1
        vehicle.segmentation = True
        frame = vehicle.camera().read()
        u0, v0, u1, v1 = reference["box2d"]
        truth.colour = learn_colour(frame.meta["segmentation"], (u0, v0, u1, v1))
        assert truth.colour is not None and truth.colour != (0, 0, 0)
        centre = (round((u0 + u1) / 2 * 1000 / 640), round((v0 + v1) / 2 * 1000 / 360))
        set_pose(airsim, client, "Drone2", 5.0, -2.0, -2.0, 0.0)  # turned away since the frame was taken
        assert truth.point_on_target(frame, centre) is True  # read from that frame's segmentation
        assert truth.point_on_target(frame, (20, 20)) is False
        assert truth.point_source == "segmentation"
        assert truth.sample("Drone2").visible is False  # facing north now: out of view
    finally:
        client.simSetSegmentationObjectID(".*", 0, True)
        client.simDestroyObject(name)
