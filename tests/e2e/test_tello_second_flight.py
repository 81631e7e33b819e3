"""Two djitellopy flights, one after the other, against one running `dronecats sim --tello` (real
processes: the server in a subprocess, unmodified djitellopy here): the second `command` session
starts at the spawn the server printed, not where the first flight landed. Judged by the simulator's
own pose of the drone (the stock `airsim` client on the same server), not by what the Tello reports.

djitellopy binds 0.0.0.0:8889/8890 for its whole process, and the server's Tello is 127.0.0.2: the
djitellopy xdist group keeps this file off the workers running the other Tello files."""

from __future__ import annotations

import pytest

from tests.support.djitellopy_ports import djitellopy_ports  # noqa: F401 (autouse)
from tests.support.processes import emulator_url, sim_server

djitellopy = pytest.importorskip("djitellopy")
from djitellopy import Tello  # noqa: E402

pytestmark = [pytest.mark.timeout(90), pytest.mark.xdist_group("djitellopy")]

FORWARD_CM = 100
TURN_DEG = 90


def _tello(host: str, port: int) -> Tello:
    """A new djitellopy client session, as a user's script starts one: `command` first."""
    tello = Tello(host=host)
    tello.address = (host, port)  # the emulator cannot have 8889: djitellopy holds it on every address
    tello.connect()
    return tello


def _fly(tello: Tello) -> None:
    tello.takeoff()
    tello.move_forward(FORWARD_CM)
    tello.rotate_clockwise(TURN_DEG)
    tello.land()


def test_second_djitellopy_flight_starts_at_the_printed_spawn() -> None:
    import airsim

    startup: list[str] = []
    with sim_server(
        "--scene",
        "residential",
        "--tello",
        "--tello-port",
        "0",
        wait_for=("tello Drone1:",),
        startup=startup,
    ) as port:
        url = emulator_url(startup, "tello Drone1")
        assert "spawn=0,0,0,0" in url, url
        host, cmd_port = url.removeprefix("tello://").split("?")[0].split(":")
        client = airsim.MultirotorClient(port=port)
        client.confirmConnection()

        def where() -> tuple[float, float, float]:
            """The drone in its spawn frame (metres north, east) and its heading, as the sim has it."""
            pose = client.simGetVehiclePose("Drone1")
            yaw_deg = airsim.to_eularian_angles(pose.orientation)[2] * 180.0 / 3.141592653589793
            return pose.position.x_val, pose.position.y_val, yaw_deg

        first = _tello(host, int(cmd_port))
        _fly(first)
        landed = where()
        assert landed[0] == pytest.approx(FORWARD_CM / 100, abs=0.15), landed
        assert landed[2] == pytest.approx(TURN_DEG, abs=3), landed

        second = _tello(host, int(cmd_port))  # a new client session on the same server
        at_takeoff = where()
        print(f"second takeoff from x={at_takeoff[0]:.2f} y={at_takeoff[1]:.2f} yaw={at_takeoff[2]:.1f}")
        assert at_takeoff == (pytest.approx(0, abs=0.05), pytest.approx(0, abs=0.05), pytest.approx(0, abs=1))
        assert second.get_yaw() == 0 and second.get_height() == 0
        _fly(second)  # and it flies the same flight again, from there
        assert where()[0] == pytest.approx(FORWARD_CM / 100, abs=0.15)
        for t in (first, second):
            t.is_flying = t.stream_on = False  # djitellopy's __del__ would land a drone gone with the server
