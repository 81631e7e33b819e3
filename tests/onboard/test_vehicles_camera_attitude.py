"""Real vehicles' frames carry their camera's attitude the same way the simulator adapters' do
(`Frame.camera_attitude`, which the controller projects a `go` through): the mavlink:// adapter with
`gimbal=body-fixed` takes each frame's roll and pitch from the autopilot's ATTITUDE nearest its
capture, through unmodified pymavlink against the PX4 emulator in front of a tilting multirotor;
`gimbal=level` (the default) keeps frames level. The tello:// URL takes the same parameter."""

from __future__ import annotations

import time

import numpy as np
import pytest

from common.errors import ConfigError
from common.pose import LEVEL_CAMERA, Pose
from onboard.vehicles.camera_mount import AttitudeHistory
from onboard.vehicles.px4 import MavlinkVehicle, parse_mavlink_url
from onboard.vehicles.tello import parse_tello_url
from tests.support.ports import free_udp_port

pytestmark = pytest.mark.timeout(120)


def test_gimbal_url_parameter() -> None:
    assert parse_mavlink_url("mavlink://udpin:127.0.0.1:14540").gimbal == "level"
    assert parse_mavlink_url("mavlink://udpin:127.0.0.1:14540?gimbal=body-fixed").gimbal == "body-fixed"
    assert parse_tello_url("tello://127.0.0.1?gimbal=body-fixed").gimbal == "body-fixed"
    assert parse_tello_url("tello://127.0.0.1").gimbal == "level"
    with pytest.raises(ConfigError, match=r"gimbal='tilted' must be one of level, body-fixed"):
        parse_mavlink_url("mavlink://udpin:127.0.0.1:14540?gimbal=tilted")
    with pytest.raises(ConfigError, match=r"gimbal='Level' must be one of level, body-fixed"):
        parse_tello_url("tello://127.0.0.1?gimbal=Level")


def test_attitude_history_nearest_in_time_and_validated() -> None:
    level = AttitudeHistory("level")
    level.add(1.0, 5.0, -10.0)
    assert level.at(1.0) is LEVEL_CAMERA  # a level mount ignores the body's attitude
    fixed = AttitudeHistory("body-fixed")
    assert fixed.at(1.0) is LEVEL_CAMERA  # nothing heard yet
    fixed.add(1.0, 5.0, -10.0)
    fixed.add(2.0, 1.0, -3.0)
    for bad in ((float("nan"), 0.0), (0.0, float("inf")), (200.0, 0.0), (0.0, 95.0)):
        fixed.add(3.0, *bad)  # no attitude: dropped, the last report stands
    assert (fixed.at(1.2).roll_deg, fixed.at(1.2).pitch_deg) == (5.0, -10.0)
    assert (fixed.at(9.0).roll_deg, fixed.at(9.0).pitch_deg) == (1.0, -3.0)


def test_mavlink_frames_carry_the_autopilots_attitude() -> None:
    pytest.importorskip("pybullet")
    pytest.importorskip("av")
    from common.camera import camera_profile
    from sim_bridge.emulators.mavlink_emulator import MavlinkEmulator, MavlinkEmulatorConfig
    from sim_bridge.sim.gimbal import BODY_FIXED
    from sim_bridge.sim.world import World

    camera = camera_profile("outdoor").scaled_to(320, 180)
    world = World("blocks", vehicles=1, camera=camera, renderer="tiny", camera_mount=BODY_FIXED, seed=0)
    world.start()  # wall-time physics: the emulator is a real network peer
    mav_port, video_port = free_udp_port(), free_udp_port()
    emulator = MavlinkEmulator(
        world,
        "Drone1",
        MavlinkEmulatorConfig(companion=("127.0.0.1", mav_port), video_dest=("127.0.0.1", video_port)),
    ).start()
    url = f"mavlink://udpin:127.0.0.1:{mav_port}?camera=h264udp://127.0.0.1:{video_port}&gimbal=body-fixed"
    vehicle = MavlinkVehicle(parse_mavlink_url(url))
    try:
        vehicle.connect()
        cam = vehicle.camera()
        assert cam.read().camera_attitude == LEVEL_CAMERA  # on the ground, level
        world.set_vehicle_pose("Drone1", Pose(0.0, 0.0, -3.0, 0.0))
        world.move_velocity("Drone1", np.array([6.0, 3.0, 0.0]), 3.0)  # accelerating: nose down, rolled
        pitches, rolls, body_pitches = [], [], []
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            frame = cam.read()
            pitches.append(frame.camera_attitude.pitch_deg)
            rolls.append(frame.camera_attitude.roll_deg)
            with world.lock:
                body_pitches.append(np.degrees(world.vehicle("Drone1").model.attitude.pitch_rad))
        assert min(pitches) < -5.0 and max(rolls) > 1.0, (pitches, rolls)
        # what the frames carry is the body's (ATTITUDE at 50 Hz, the nearest to each frame's capture)
        assert min(body_pitches) - 2.0 <= min(pitches) <= max(body_pitches) + 2.0, (pitches, body_pitches)
    finally:
        vehicle.close()
        emulator.close()
        world.close()
