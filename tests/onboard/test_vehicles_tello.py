"""The Tello adapter through unmodified djitellopy against the Tello SDK 2.0 emulator (real UDP on
loopback alias IPs, H.264 video), flying the built-in simulator: an approach episode accepted by the
verifier, go-command mode, keep-alive, and the faults (video stops, command refused, link lost, e-stop).

djitellopy binds 0.0.0.0:8889/8890 for the whole process, so all of these run in this one process and
each test uses its own alias IP (djitellopy routes replies by source IP)."""

from __future__ import annotations

import threading
import time

import pytest

from common.camera import camera_profile
from common.errors import VehicleError
from common.pose import Pose
from onboard.safety import SafetyConfig
from onboard.vehicles.tello import TelloVehicle, parse_tello_url
from sim_bridge.emulators.tello_emulator import TelloEmulator, TelloEmulatorConfig
from sim_bridge.sim.world import World
from tests.support.djitellopy_ports import djitellopy_ports  # noqa: F401 (autouse)
from tests.support.vehicles import events, make_runtime, make_world, spawn_query, steps, verdict

pytestmark = pytest.mark.timeout(120)


_IPS = iter(f"127.0.0.{k}" for k in range(2, 250))


def airborne(vehicle, query: str):
    """A Tello adapter from the rig's `vehicle(query)`, connected and taken off to 1 m."""
    v = vehicle(query)
    v.connect()
    v.takeoff(1.0)
    return v


@pytest.fixture
def rig(request):
    """(world, emulator, vehicle factory); everything closed afterwards. Emulator settings for a test
    come from its `emulator_config` parameter (indirect)."""
    kwargs = getattr(request, "param", {})
    world = make_world()
    emulator = TelloEmulator(world, "Drone1", TelloEmulatorConfig(ip=next(_IPS), **kwargs)).start()
    vehicles: list[TelloVehicle] = []

    def vehicle(query: str = "") -> TelloVehicle:
        url = f"tello://{emulator.config.ip}:{emulator.command_port}?{spawn_query(world)}"
        v = TelloVehicle(parse_tello_url(url + (f"&{query}" if query else "")))
        vehicles.append(v)
        return v

    yield world, emulator, vehicle
    for v in vehicles:
        v.close()
    emulator.close()
    world.close()


def test_url_parsing() -> None:
    t = parse_tello_url("tello://192.168.10.1?mode=go&rc_full_scale_m_s=0.8&spawn=1,2,0,90")
    assert (t.host, t.port, t.mode, t.rc_full_scale_m_s) == ("192.168.10.1", 8889, "go", 0.8)
    assert t.spawn.yaw_deg == 90
    from common.errors import ConfigError

    with pytest.raises(ConfigError, match="keepalive_s=15"):
        parse_tello_url("tello://192.168.10.1?keepalive_s=15")
    with pytest.raises(ConfigError, match="unknown parameters"):
        parse_tello_url("tello://192.168.10.1?sped=3")
    assert parse_tello_url("tello://192.168.10.1").spawn == Pose(0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ConfigError, match="spawn must be x,y,z"):
        parse_tello_url("tello://192.168.10.1?spawn=1,north,0")


def test_approach_episode_through_djitellopy_is_accepted(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    v = vehicle()
    rt = make_runtime(world, v, tmp_path, "tello", save_frames=True)
    rt.start()
    result = rt.run()
    assert result.reason == "declared", result
    verdict_ = verdict(tmp_path)
    assert verdict_.success and verdict_.ne_m <= 5.0 and not verdict_.problems, verdict_
    # motion went out as rc sticks, takeoff to the Tello profile's 1.5 m (takeoff + up), no replies to rc
    sent = [c for _, c, _ in emulator.status.log]
    assert "takeoff" in sent and any(c.startswith("up ") for c in sent)
    assert sum(c.startswith("rc ") for c in sent) > 50
    assert all(r == "" for _, c, r in emulator.status.log if c.startswith("rc "))
    # dead reckoning stayed close to the simulator's truth on a straight approach
    truth, reckoned = world.vehicle_pose("Drone1"), v.telemetry().pose
    assert abs(truth.x_m - reckoned.x_m) < 1.0 and abs(truth.y_m - reckoned.y_m) < 1.0
    assert v.telemetry().position_source == "dead_reckoned"
    frames = [s for s in steps(tmp_path) if s["frame"]]
    assert frames and (tmp_path / frames[0]["frame"]).exists()


def test_go_mode_sends_discrete_go_commands(rig) -> None:
    world, emulator, vehicle = rig
    v = airborne(vehicle, "mode=go&video=0")
    x0 = world.vehicle_pose("Drone1").x_m
    for _ in range(20):  # 1 s of 0.6 m/s forward, as the actuation loop would stream it
        v.send_velocity_body(0.6, 0.0, 0.0, 0.0)
        time.sleep(0.05)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not any(
        r == "ok" for _, c, r in emulator.status.log if c.startswith("go ")
    ):
        time.sleep(0.1)
    gos = [c for _, c, r in emulator.status.log if c.startswith("go ") and r == "ok"]
    assert gos, emulator.status.log[-5:]
    x, y, z, speed = (int(a) for a in gos[0].split()[1:])
    assert 40 <= x <= 70 and y == 0 and z == 0 and 10 <= speed <= 100, gos
    assert world.vehicle_pose("Drone1").x_m - x0 == pytest.approx(x / 100, abs=0.12)
    deadline = time.monotonic() + 5  # djitellopy polls for the reply every 0.1 s
    while time.monotonic() < deadline and v.telemetry().pose.x_m - x0 < 0.2:
        time.sleep(0.05)
    assert v.telemetry().pose.x_m - x0 == pytest.approx(x / 100, abs=0.12)  # reckoned from the flown go


@pytest.mark.parametrize("rig", [dict(auto_land_s=1.0)], indirect=True)
def test_keepalive_prevents_the_auto_land(rig) -> None:
    _world, emulator, vehicle = rig
    v = airborne(vehicle, "video=0&keepalive_s=0.3")
    time.sleep(2.0)  # no setpoints: a long model call with the actuation loop stalled
    assert not emulator.status.auto_landed and emulator.status.flying
    assert v.keepalives >= 3


@pytest.mark.parametrize("rig", [dict(auto_land_s=1.0)], indirect=True)
def test_emulator_auto_lands_without_commands(rig) -> None:
    _world, emulator, vehicle = rig
    _v = airborne(vehicle, "video=0&keepalive_s=10")
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and not emulator.status.auto_landed:
        time.sleep(0.1)
    assert emulator.status.auto_landed


def test_video_stops_no_decision_on_stale_frames(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    v = vehicle()
    rt = make_runtime(world, v, tmp_path, "tello", t_max_s=30.0, stop_on_declaration=False)
    rt.start()
    runner = threading.Thread(target=rt.run, daemon=True)
    runner.start()
    time.sleep(1.0)
    emulator.video_paused.set()
    time.sleep(0.5)  # decisions in flight finish on frames that were fresh when captured
    n_paused = len(steps(tmp_path))
    time.sleep(2.0)
    n_after = len(steps(tmp_path))
    emulator.video_paused.clear()
    time.sleep(2.5)
    rt.stop()
    runner.join(30)
    kinds = [e.get("fault") for e in events(tmp_path) if e.get("event") == "vehicle_fault"]
    assert "video_stale" in kinds and "video_ok" in kinds, events(tmp_path)
    assert n_after - n_paused <= 1, "decisions were made while the video was stopped"
    assert len(steps(tmp_path)) > n_after, "decisions did not resume with the video"
    for s in steps(tmp_path):
        assert s["stages"]["frame_age_s"] is not None
    assert any("video_stale" in e for e in rt.governor.status().events)


@pytest.mark.parametrize("rig", [dict(refused={"takeoff": "error Motor stop"})], indirect=True)
def test_refused_takeoff_is_an_error_with_the_drones_reply(rig, tmp_path) -> None:
    _world, _emulator, vehicle = rig
    v = vehicle("video=0")
    v.connect()
    with pytest.raises(VehicleError, match="error Motor stop"):
        v.takeoff(1.5)
    assert v.faults.kinds() == ["refused"]


def test_link_lost_lands_and_is_logged(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    v = vehicle("link_timeout_s=1.0")
    rt = make_runtime(world, v, tmp_path, "tello", t_max_s=30.0, stop_on_declaration=False)
    rt.start()
    time.sleep(1.0)
    emulator.link_down.set()
    try:
        result = rt.run()
        assert result.reason.startswith("landing: vehicle fault link_lost"), result
    except VehicleError as exc:
        # a decision already waiting for a frame when the link died ends the run: no stale decisions
        assert "link is lost" in str(exc)
    assert rt.governor.mode.value == "landing" and "link_lost" in rt.governor.reason
    faults = [e for e in events(tmp_path) if e.get("event") == "vehicle_fault"]
    lost = [f for f in faults if f["fault"] == "link_lost"]  # video_stale may come first: same cause
    assert lost and "no state datagram" in lost[0]["why"], faults


def test_low_battery_lands_and_is_logged(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    pack = world.vehicle("Drone1").model.battery
    with world.lock:  # a pack flown down to 15.9 %: ~5 s of hover above the 15 % reserve
        pack.energy_wh = 0.159 * pack.config.capacity_wh
    v = vehicle()
    rt = make_runtime(world, v, tmp_path, "tello", t_max_s=40.0, stop_on_declaration=False)
    rt.start()
    result = rt.run()
    # the Tello's bat: field (whole percent) crossed safety.battery_land_fraction
    assert result.reason == "landing: battery 15% <= 15%", result
    # the landing's safety event says why; on a loaded machine a stall hold may come before it
    landing = [e for e in events(tmp_path) if e.get("event") == "safety" and e.get("mode") == "landing"]
    assert landing and landing[0]["reason"].startswith("battery 15%"), landing
    deadline = time.monotonic() + 15.0  # the runtime lands from its actuation thread
    while emulator.status.flying and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "land" in [c for _, c, _ in emulator.status.log]
    m = world.vehicle("Drone1").model
    assert not emulator.status.flying and m.landed and m.position_ned[2] == pytest.approx(m.floor_z_m)


def test_estop_kill_sends_emergency(rig, tmp_path) -> None:
    world, emulator, vehicle = rig
    v = vehicle("video=0")
    assert not v.is_connected
    v.connect()
    assert v.is_connected
    v.takeoff(1.0)
    from common.pose import Pose
    from onboard.actuation import Actuator
    from onboard.safety import SafetyGovernor

    governor = SafetyGovernor(SafetyConfig(estop_action="kill"), Pose(0, 0, 0, 0))
    actuator = Actuator(v, governor)
    actuator.tick(0.0)
    governor.estop("test")
    actuator.tick(0.05)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and emulator.status.flying:
        time.sleep(0.05)
    assert any(c == "emergency" for _, c, _ in emulator.status.log)
    assert not emulator.status.flying and world.vehicle_pose("Drone1").z_m == pytest.approx(
        world.vehicle("Drone1").model.floor_z_m, abs=0.01
    )
    v.close()
    assert not v.is_connected


def test_two_tellos_in_one_process(tmp_path) -> None:
    """djitellopy's shared sockets: two drones told apart by IP, each with its own video port."""
    world = World("residential", vehicles=2, camera=camera_profile("tello").scaled_to(320, 240), seed=0)
    world.start()
    emulators, vehicles = [], []
    try:
        for k, name in enumerate(["Drone1", "Drone2"]):
            ip = next(_IPS)
            cfg = TelloEmulatorConfig(ip=ip, client_video_port=11111 + k, video_fps=5)
            emulators.append(TelloEmulator(world, name, cfg).start())
            p = world.vehicle_pose(name)
            url = (
                f"tello://{ip}:{emulators[-1].command_port}?video_port={11111 + k}&spawn={p.x_m},{p.y_m},0,0"
            )
            vehicles.append(TelloVehicle(parse_tello_url(url), name=f"Tello{k + 1}"))
        for v in vehicles:
            v.connect()
        threads = [threading.Thread(target=v.takeoff, args=(1.0,)) for v in vehicles]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        for _ in range(20):  # Tello1 goes forward, Tello2 stays
            vehicles[0].send_velocity_body(0.5, 0.0, 0.0, 0.0)
            vehicles[1].send_velocity_body(0.0, 0.0, 0.0, 0.0)
            time.sleep(0.05)
        vehicles[0].hold()
        time.sleep(0.5)
        assert world.vehicle_pose("Drone1").x_m > 0.3 and abs(world.vehicle_pose("Drone2").x_m) < 0.1
        assert [e.status.flying for e in emulators] == [True, True]
        frames = [v.camera().read() for v in vehicles]
        assert all(f.image.shape == (720, 960, 3) for f in frames)  # the Tello camera's 960x720
        assert vehicles[1].telemetry().pose.y_m == pytest.approx(world.vehicle_pose("Drone2").y_m, abs=0.05)
    finally:
        for v in vehicles:
            v.close()
        for e in emulators:
            e.close()
        world.close()
