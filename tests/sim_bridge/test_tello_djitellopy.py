"""djitellopy (unmodified, as its users and its examples call it) drives the Tello emulator through
every SDK command the tello:// adapter or djitellopy's examples use, each judged by what the
simulated drone did: moves and turns the commanded way and distance, long manoeuvres answered when
they end, the SDK's ranges, the state string of the SDK in play (mission-pad fields on EDU/TT),
auto-land after the idle time with state still flowing, emergency answered, land pre-empting a
move without a late extra reply, SDK 3.0 commands (motoron, setfps, EXT) and 960x720 video.

djitellopy binds 0.0.0.0:8889/8890 once per process: these tests share the process's sockets and
each drone has its own alias IP (127.0.0.150+)."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from common.pose import wrap_deg
from sim_bridge.emulators.tello_emulator import TelloEmulator, TelloEmulatorConfig
from tests.support.djitellopy_ports import djitellopy_ports  # noqa: F401 (autouse)
from tests.support.vehicles import make_world

djitellopy = pytest.importorskip("djitellopy")
from djitellopy import Tello, TelloException  # noqa: E402

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]

_IPS = iter(f"127.0.0.{k}" for k in range(150, 250))


class YawTracker:
    """Integrates the simulated drone's heading while it turns: which way, and how far in total."""

    def __init__(self, world) -> None:
        self.world = world
        self.total_deg = 0.0
        self._last = world.vehicle_pose("Drone1").yaw_deg
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            yaw = self.world.vehicle_pose("Drone1").yaw_deg
            self.total_deg += wrap_deg(yaw - self._last)
            self._last = yaw

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(1.0)
        return self.total_deg


@pytest.fixture
def drone(request):
    """(world, emulator, djitellopy Tello) for the SDK in the test's parameter (default 2.0)."""
    kwargs = dict(getattr(request, "param", {}))
    world = make_world("tello", 160, 120)
    cfg = TelloEmulatorConfig(ip=next(_IPS), **kwargs)
    emulator = TelloEmulator(world, "Drone1", cfg).start()
    tello = Tello(host=cfg.ip)
    tello.address = (cfg.ip, emulator.command_port)  # the emulator cannot have 8889 (djitellopy has it)
    tello.connect()
    yield world, emulator, tello
    tello.is_flying = tello.stream_on = False  # djitellopy's __del__ would land / streamoff a closed drone
    emulator.close()
    world.close()


def height_m(world) -> float:
    m = world.vehicle("Drone1").model
    return float(m.floor_z_m - m.position_ned[2])


def test_simple_example_flow_and_the_sdk20_state(drone) -> None:
    world, emulator, tello = drone
    state = tello.get_current_state()
    assert list(state)[:5] == ["mid", "x", "y", "z", "mpry"]  # EDU: mission-pad fields first
    assert tello.get_mission_pad_id() == -2 and tello.get_mission_pad_distance_x() == -200  # off
    assert tello.query_sdk_version() == "20"
    assert tello.get_battery() == 100 and tello.query_battery() == 100
    tello.takeoff()
    assert height_m(world) > 0.8 and tello.get_height() > 80
    x0 = world.vehicle_pose("Drone1").x_m
    tello.move_forward(50)
    assert world.vehicle_pose("Drone1").x_m - x0 == pytest.approx(0.5, abs=0.1)
    tello.move_left(30)  # SDK y is left: the world's -east at heading 0
    assert world.vehicle_pose("Drone1").y_m == pytest.approx(-0.3, abs=0.1)
    tello.move_up(20)
    before = world.vehicle_pose("Drone1")
    tello.go_xyz_speed(-50, 30, -20, 50)
    p = world.vehicle_pose("Drone1")
    assert (p.x_m - before.x_m, p.y_m - before.y_m) == (
        pytest.approx(-0.5, abs=0.1),
        pytest.approx(-0.3, abs=0.1),
    )
    before = world.vehicle_pose("Drone1")
    for _ in range(10):  # the adapter's way: rc sticks (no reply), here 50 % forward for 1 s
        tello.send_rc_control(0, 50, 0, 0)
        time.sleep(0.1)
    tello.send_rc_control(0, 0, 0, 0)
    time.sleep(0.5)
    assert world.vehicle_pose("Drone1").x_m - before.x_m > 0.3
    tello.move_down(20)
    tello.enable_mission_pads()
    tello.set_mission_pad_detection_direction(0)
    time.sleep(0.3)
    assert tello.get_mission_pad_id() == -1  # on, and no pad under the simulated drone
    tello.disable_mission_pads()
    tello.land()
    assert height_m(world) < 0.02 and not emulator.status.flying


def test_turns_go_the_commanded_way_and_distance(drone) -> None:
    world, _emulator, tello = drone
    tello.takeoff()
    yaw0 = world.vehicle_pose("Drone1").yaw_deg
    tracker = YawTracker(world)
    tello.rotate_clockwise(270)
    turned = tracker.stop()
    assert turned == pytest.approx(270, abs=3), "cw 270 must turn 270 degrees clockwise"
    assert wrap_deg(world.vehicle_pose("Drone1").yaw_deg - yaw0) == pytest.approx(-90, abs=2)
    assert tello.get_yaw() == pytest.approx(-90, abs=2)
    tracker = YawTracker(world)
    tello.rotate_counter_clockwise(360)
    assert tracker.stop() == pytest.approx(-360, abs=3), "ccw 360 is a full turn"
    with pytest.raises(TelloException):
        tello.send_control_command("cw 361")  # SDK: 1-360
    tello.land()


def test_long_manoeuvre_is_answered_when_it_ends(drone) -> None:
    world, _emulator, tello = drone
    tello.takeoff()
    tello.set_speed(10)
    assert tello.query_speed() == 10
    x0 = world.vehicle_pose("Drone1").x_m
    t0 = time.monotonic()
    # 80 cm at 10 cm/s: ~8 s, longer than djitellopy's default 7 s reply timeout, so ask for more
    tello.send_control_command("forward 80", timeout=15)
    took_s = time.monotonic() - t0
    assert world.vehicle_pose("Drone1").x_m - x0 == pytest.approx(0.8, abs=0.1)
    assert 6.6 <= took_s < 15.0, took_s  # (the emulator used to cut every manoeuvre at 6.5 s)
    tello.land()


def test_sdk_ranges_flip_curve_and_emergency(drone) -> None:
    world, emulator, tello = drone
    tello.takeoff()
    refused = ("forward 19", "back 501", "cw 0", "ccw 361", "speed 101", "go 10 10 10 50", "go 50 0 0 5")
    for command in refused:
        assert tello.send_command_with_return(command).startswith("error"), command
    assert tello.send_command_with_return("curve 20 20 0 40 40 0 30").startswith("error")  # a line: no arc
    assert tello.send_command_with_return("curve 50 50 0 100 0 0 70").startswith("error")  # speed > 60
    assert tello.send_command_with_return("motoron") == "unknown command: motoron"  # SDK 3.0 only
    assert emulator.status.flying
    before = world.vehicle_pose("Drone1")
    tello.flip_forward()
    after = world.vehicle_pose("Drone1")
    assert abs(after.x_m - before.x_m) < 0.1  # a flip ends where it started
    tello.curve_xyz_speed(50, 50, 0, 100, 0, 0, 50)
    p = world.vehicle_pose("Drone1")
    assert p.x_m - before.x_m == pytest.approx(1.0, abs=0.12) and abs(p.y_m - before.y_m) < 0.12
    # emergency: answered "ok" (SDK), motors off, and the replies stay in step
    assert tello.send_command_with_return("emergency") == "ok"
    assert height_m(world) < 0.02 and not emulator.status.flying
    # the simulated pack (sim_bridge.sim.battery) paid for the flight, and the SDK reports it
    battery = tello.query_battery()
    # (the flight may cost under half a percent: the SDK's integer can still read 100)
    assert emulator.airframe.battery_pct < 100 and 90 <= battery == round(emulator.airframe.battery_pct), (
        battery,
        emulator.airframe.battery_pct,
    )


@pytest.mark.parametrize("drone", [{"auto_land_s": 2.0}], indirect=True)
def test_auto_land_after_idle_while_state_keeps_flowing(drone) -> None:
    world, emulator, tello = drone
    tello.takeoff()
    assert height_m(world) > 0.8
    seen, last = [], tello.get_current_state()
    t_end = time.monotonic() + 6.0
    while time.monotonic() < t_end:  # no command: only watch djitellopy's state
        state = tello.get_current_state()
        if state is not last:  # every datagram is a new dict
            seen.append((time.monotonic(), state.get("h", -1)))
            last = state
        time.sleep(0.01)
    assert emulator.status.auto_landed and height_m(world) < 0.02 and seen[-1][1] == 0
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(seen)]
    assert max(gaps) < 0.5, f"state stopped for {max(gaps):.2f} s during the auto-land"


def test_land_preempts_a_move_without_a_late_reply(drone) -> None:
    world, emulator, tello = drone
    tello.takeoff()
    tello.set_speed(20)
    tello.send_command_without_return("forward 300")  # 15 s at 20 cm/s
    time.sleep(1.0)
    tello.land()  # answered "ok" when down; the forward never answers
    assert height_m(world) < 0.02
    time.sleep(0.5)
    assert tello.query_speed() == 20  # the next reply is this command's, not a late one
    assert [r for _, c, r in emulator.status.log if c == "forward 300"] == [""]


@pytest.mark.parametrize("drone", [{"sdk": "3.0", "video_fps": 30.0}], indirect=True)
def test_sdk30_tt_commands_and_960x720_video(drone) -> None:
    _world, emulator, tello = drone
    assert tello.query_sdk_version() == "30"
    tello.turn_motor_on()
    assert emulator.status.motors_idle
    tello.turn_motor_off()
    tello.send_expansion_command("led 255 0 0")
    assert tello.send_command_with_return("EXT tof?").startswith("tof ")
    tello.streamon()
    reader = tello.get_frame_read()
    try:
        deadline = time.monotonic() + 10
        while reader.frame.shape[:2] != (720, 960) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert reader.frame.shape == (720, 960, 3)
        n0, t0 = len(emulator.video.sent), time.monotonic()
        time.sleep(2.0)
        fps = (len(emulator.video.sent) - n0) / (time.monotonic() - t0)
        # nominal 30 fps, whatever the renderer manages (frames repeat); encoding 960x720 on a loaded
        # 2-core machine may not keep up, so the measured rate only has to be clearly above "low"
        assert emulator.video.fps == 30.0 and fps > 12, fps
        tello.set_video_fps(Tello.FPS_5)
        assert emulator.video.fps == 5.0
        time.sleep(0.5)
        n0, t0 = len(emulator.video.sent), time.monotonic()
        time.sleep(2.0)
        assert (len(emulator.video.sent) - n0) / (time.monotonic() - t0) == pytest.approx(5, abs=1.5)
    finally:
        # The reader closes its UDP 11111 socket only when it sees the next frame after stop(): let it,
        # while the video still flows, or the port stays bound for the later Tello tests of this process.
        reader.stop()
        reader.worker.join(timeout=5.0)
        tello.streamoff()
